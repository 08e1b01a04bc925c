// LocalCluster: N real `hearsay node` processes on loopback (or on a NetnsBed), for integration
// tests, `hearsay demo` and `hearsay bench`.
//
// Start() makes a fresh temp dir, writes a cluster key there with `hearsay keygen`, picks free
// loopback ports, spawns the nodes (each joins all the others; stdout/stderr go to
// <dir>/node-<i>.log; each dies with its parent), and waits, bounded, until every /health answers
// 200 and every node's /cluster lists all N members alive. A failure says what did not happen and
// shows the tail of every node's log.
//
// Ownership: the LocalCluster owns its processes and its temp dir. The destructor SIGKILLs and
// reaps every node and removes the dir (kept when HEARSAY_KEEP_TEST_DIRS is set, for post-mortems).
//
// Thread-safety: the control methods (Kill, Stop, Restart, Block, ...) must be called from one
// thread, the one that called Start() (the parent-death signal is tied to that thread). The
// accessors of fixed facts (size, node(i), addresses) may be read from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/http/tls_context.h"
#include "hearsay/launch/child_process.h"
#include "hearsay/launch/cluster_view.h"
#include "hearsay/launch/temp_dir.h"

namespace hearsay::launch {

struct LocalClusterOptions {
  std::string hearsay_binary;  // path of the built `hearsay`
  size_t nodes = 4;
  std::string policy = "hearsay";
  // The engine behind every node (--engine): "sim", or "openai" with each node's --upstream in
  // per_node_flags.
  std::string engine = "sim";
  std::string engine_preset = "h100-llama3-8b";
  uint64_t capacity_tokens = 200000;
  bool debug_faults = true;  // --debug-faults, needed by Block()
  // Each node also gets an admin listener (--admin-http on a port of its own): /status,
  // /cluster, /metrics and /debug/faults are then served only there (NodeInfo::admin_address),
  // and the launcher's own probes and faults go there.
  bool admin_listener = false;
  // Appended to every node's command line.
  std::vector<std::string> extra_flags;
  // Appended to node i's command line after extra_flags, for i < per_node_flags.size() (for
  // example each node's own --upstream engine URL). A --policy, --engine, --engine-preset or
  // --capacity-tokens given here replaces the common setting above for that node.
  std::vector<std::vector<std::string>> per_node_flags;
  // Off loopback (a NetnsBed): node i listens on node_hosts[i] (HTTP on bed_http_port, gossip on
  // bed_gossip_port; each host has its own addresses, so the ports are fixed) and its command
  // line starts with node_exec_prefix[i] (say `ip netns exec <ns>`). Empty: loopback, free ports.
  std::vector<std::string> node_hosts;
  std::vector<std::vector<std::string>> node_exec_prefix;
  uint16_t bed_http_port = 8080;
  uint16_t bed_gossip_port = 7946;
  uint16_t bed_admin_port = 8090;  // with admin_listener
  // Bound on Start() and Restart() reaching health and full membership.
  std::chrono::milliseconds ready_timeout{30000};
  // Bound on Stop()'s graceful drain before it falls back to SIGKILL.
  std::chrono::milliseconds stop_timeout{15000};
  // Nodes that serve HTTPS (--tls-cert among the flags): the launcher's own probes use this
  // client context, and NodeInfo::http_url says https.
  std::shared_ptr<http::TlsContext> probe_tls = nullptr;
};

struct NodeInfo {
  std::string node_id;         // "node-<i>"
  std::string http_address;    // "127.0.0.1:<port>"
  std::string gossip_address;  // "127.0.0.1:<port>" (UDP and TCP)
  std::string admin_address;   // "127.0.0.1:<port>" with admin_listener, else empty
  std::string log_path;
  bool tls = false;
  std::string http_url() const { return (tls ? "https://" : "http://") + http_address; }
  // Where /status, /cluster, /metrics and the console are served: the admin listener when the
  // node has one, else the API address.
  const std::string& status_address() const {
    return admin_address.empty() ? http_address : admin_address;
  }
  std::string status_url() const { return (tls ? "https://" : "http://") + status_address(); }
};

class LocalCluster {
 public:
  // Starts the cluster and waits until it has converged (see the file comment).
  static Result<std::unique_ptr<LocalCluster>> Start(const LocalClusterOptions& options);
  ~LocalCluster();
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  size_t size() const { return nodes_.size(); }
  const NodeInfo& node(size_t i) const { return nodes_.at(i).info; }
  // Node i's admin listener address (empty without admin_listener), and where its /status is
  // served (the admin listener, else the API address).
  const std::string& admin_address(size_t i) const { return node(i).admin_address; }
  const std::string& status_address(size_t i) const { return node(i).status_address(); }
  const std::string& dir() const { return dir_->path(); }
  const std::string& key_file() const { return key_file_; }
  // Node i's command line (NodeCommandLine).
  std::vector<std::string> NodeArgv(size_t i) const;
  // The http addresses of the nodes that are running now.
  std::vector<std::string> RunningHttpAddresses() const;
  // True while node i's process runs (it has not exited, been killed or been stopped).
  bool running(size_t i);

  // SIGKILL node i and reap it: a crash, no goodbye.
  Status Kill(size_t i);
  // SIGTERM node i and wait (bounded by stop_timeout) for a graceful exit; DEADLINE_EXCEEDED (and
  // a SIGKILL) if it does not exit in time, INTERNAL if it exits with a non-zero status.
  Status Stop(size_t i);
  // Starts node i again on the same addresses and node id, after Kill or Stop, and waits until it
  // is healthy and every running node lists every running node alive.
  Status Restart(size_t i);
  // Sends `signal` to node i's process (SIGSTOP and SIGCONT for a gray failure).
  Status Signal(size_t i, int signal);
  // Makes node i drop all gossip to and from `others` (POST /debug/faults); an empty list heals.
  Status Block(size_t i, const std::vector<size_t>& others);
  // Makes node i delay everything it sends to peers (gossip and forwards) by `delay_ms` and lose
  // each gossip datagram it sends with probability `loss` (POST /debug/faults; the in-daemon
  // stand-in for netem); zero and zero heal. Off loopback the nodes need --admin-allow-remote.
  Status SetLinkFaults(size_t i, double delay_ms, double loss);
  // Makes node i's sim engine take `factor` times its modelled time per iteration (a stall, with
  // a large factor, while the node itself stays up); 1 restores it.
  Status SlowEngine(size_t i, double factor);

  // Node i's /cluster.
  Result<ClusterView> View(size_t i) const;
  // Waits until every running node is healthy and lists every running node alive, and each of
  // `dead` as dead or left (in every running node's view); DEADLINE_EXCEEDED naming the first
  // view that disagrees.
  Status WaitForViews(const std::vector<size_t>& dead, std::chrono::milliseconds timeout);
  // The last lines of node i's log, and of every node's, labelled.
  std::string LogTail(size_t i, size_t lines = 30) const;
  std::string AllLogTails(size_t lines = 30) const;

 private:
  struct Node {
    NodeInfo info;
    std::unique_ptr<ChildProcess> process;
  };

  LocalCluster(LocalClusterOptions options, std::unique_ptr<TempDir> dir)
      : options_(std::move(options)), dir_(std::move(dir)) {}
  // POST /debug/faults on node i with `body`, signed with the cluster key.
  Status PostFaults(size_t i, std::string body);
  Status SpawnNode(size_t i);
  // Fails at once (with the log) if a node process has exited.
  Status CheckAlive() const;
  // One pass over the views: OK if they agree with the expectation.
  Status ViewsAgree(const std::vector<size_t>& dead) const;

  LocalClusterOptions options_;
  std::unique_ptr<TempDir> dir_;
  std::string key_file_;
  std::vector<Node> nodes_;
};

// The command line of node i of a cluster of `nodes` (each node joins every other one's gossip
// address), as LocalCluster starts it: node_exec_prefix, the binary, `node`, its addresses and
// id, the common settings of `options`, --cluster-key-file key_file, --join, extra_flags, and
// its own per_node_flags. The digital twin (twin/) reads the nodes' configuration from it.
std::vector<std::string> NodeCommandLine(const LocalClusterOptions& options,
                                         const std::vector<NodeInfo>& nodes,
                                         const std::string& key_file, size_t i);

// Free loopback ports: each is bindable for TCP and, when `udp_too`, UDP at the moment of the call,
// and all are distinct. (Another process may still take one before it is used; a node that cannot
// bind then fails to start, with the reason in its log.)
Result<std::vector<uint16_t>> PickFreeLoopbackPorts(size_t count, bool udp_too);

}  // namespace hearsay::launch
