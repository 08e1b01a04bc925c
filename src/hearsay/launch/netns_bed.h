// NetnsBed: a test bed of N Linux network namespaces on one bridge, each with its own IPv4
// address (a veth pair: one end in the namespace, the other on the bridge), so that `hearsay
// node` processes run on real interfaces instead of loopback. The bridge itself has the first
// address of the subnet, so a client in the parent namespace reaches every node.
//
// Links are controlled at run time: a bandwidth cap on a node's interface (tc tbf), and
// partitions, full or one-way, per pair (nftables drop rules inside the namespaces). Delay and
// loss need the kernel's netem qdisc, which NetemAvailable() detects (DelayAndLose); where it is
// missing, the nodes inject them themselves (LocalCluster::SetLinkFaults, POST /debug/faults).
//
// Names: every namespace and link of one bed starts with "hsb<pid>" (the creating process), so
// two runs never collide (one process makes one bed at a time), and CleanStale() removes what a
// crashed run (a dead pid) left behind. Create() calls it first.
//
// Ownership: the NetnsBed owns its namespaces and bridge; the destructor deletes them (processes
// still running in a namespace keep it alive only until they exit; kill them first).
//
// Thread-safety: not thread-safe; one owner drives it. Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN),
// `ip`, `tc` and `nft`; CheckAvailable() says why a bed cannot be made here.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "hearsay/common/status.h"

namespace hearsay::launch {

class NetnsBed {
 public:
  // OK if a bed can be made here; otherwise why not (not root, a missing tool, namespaces refused
  // by the kernel), for a test to report itself skipped.
  static Status CheckAvailable();
  // Makes `hosts` namespaces on a fresh bridge, each up with its address and an empty nftables
  // fault table. On failure nothing is left behind.
  static Result<std::unique_ptr<NetnsBed>> Create(size_t hosts);
  // Deletes the namespaces and links left by beds whose creating process no longer runs.
  static void CleanStale();
  // True if the kernel has the netem qdisc (delay and loss injection).
  bool NetemAvailable();

  ~NetnsBed();
  NetnsBed(const NetnsBed&) = delete;
  NetnsBed& operator=(const NetnsBed&) = delete;

  size_t size() const { return hosts_; }
  // Host i's namespace name and IPv4 address.
  std::string Namespace(size_t i) const;
  std::string Address(size_t i) const;
  // The bridge's address in the parent namespace.
  std::string BridgeAddress() const;
  // The argv prefix that runs a program inside host i's namespace.
  std::vector<std::string> ExecPrefix(size_t i) const;

  // Caps host i's egress to `kbit` kilobits per second (tc tbf on its interface); 0 removes it.
  Status CapBandwidth(size_t i, int kbit);
  // Delays host i's egress by `delay_ms` and loses each packet with probability `loss` (tc
  // netem on its interface, replacing any cap); 0 and 0 remove it. Needs NetemAvailable().
  Status DelayAndLose(size_t i, double delay_ms, double loss);
  // Drops every packet host `from` sends to host `to` (a one-way partition).
  Status DropOneWay(size_t from, size_t to);
  // A full partition: no packet between any host of `a` and any host of `b`, either way.
  Status Partition(const std::vector<size_t>& a, const std::vector<size_t>& b);
  // Removes every drop rule (partitions heal; bandwidth caps stay).
  Status HealPartitions();

 private:
  NetnsBed(std::string prefix, int subnet, size_t hosts)
      : prefix_(std::move(prefix)), subnet_(subnet), hosts_(hosts) {}
  Status Setup();
  std::string Bridge() const { return prefix_ + "br"; }
  std::string HostSide(size_t i) const { return prefix_ + "v" + std::to_string(i) + "h"; }
  std::string NodeSide(size_t i) const { return prefix_ + "v" + std::to_string(i) + "n"; }
  // Runs `tool args...` inside host i's namespace.
  Status InNamespace(size_t i, std::vector<std::string> argv);

  std::string prefix_;
  int subnet_;  // the third octet of 10.213.<subnet>.0/24
  size_t hosts_;
  size_t created_ = 0;  // namespaces made so far (the destructor deletes these)
  bool bridge_made_ = false;
};

// Runs a command (argv[0] a path) to its end, bounded; INTERNAL with its output if it fails.
Status RunCommand(const std::vector<std::string>& argv);

}  // namespace hearsay::launch
