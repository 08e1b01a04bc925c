// N `hearsay node` processes on loopback (see the header).
#include "hearsay/launch/local_cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "hearsay/gossip/keyring.h"
#include "hearsay/http/sync_call.h"
#include "hearsay/net/key_admin.h"
#include "hearsay/net/peer_auth.h"

namespace hearsay::launch {
namespace {

using namespace std::chrono_literals;

constexpr auto kProbeTimeout = 2000ms;  // one /health or /cluster call
constexpr auto kPollInterval = 100ms;

// A socket bound to 127.0.0.1:port (0: any); -1 on failure. *bound gets the port.
int BindLoopback(int type, uint16_t port, uint16_t* bound) {
  const int fd = ::socket(AF_INET, type | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    return -1;
  }
  *bound = ntohs(addr.sin_port);
  return fd;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Result<std::vector<uint16_t>> PickFreeLoopbackPorts(size_t count, bool udp_too) {
  std::vector<int> fds;
  std::vector<uint16_t> ports;
  Status status;
  for (size_t k = 0; k < count && status.ok(); ++k) {
    bool found = false;
    for (int attempt = 0; attempt < 100 && !found; ++attempt) {
      uint16_t port = 0;
      const int tcp = BindLoopback(SOCK_STREAM, 0, &port);
      if (tcp < 0) {
        status = UnavailableError(std::string("cannot bind a loopback TCP port: ") +
                                  std::strerror(errno));
        break;
      }
      fds.push_back(tcp);  // held until all are picked, so no port is handed out twice
      if (!udp_too) {
        ports.push_back(port);
        found = true;
        break;
      }
      uint16_t same = 0;
      const int udp = BindLoopback(SOCK_DGRAM, port, &same);
      if (udp >= 0) {
        fds.push_back(udp);
        ports.push_back(port);
        found = true;
      }
    }
    if (!found && status.ok()) status = UnavailableError("no port free for both TCP and UDP");
  }
  for (int fd : fds) ::close(fd);
  if (!status.ok()) return status;
  return ports;
}

Result<std::unique_ptr<LocalCluster>> LocalCluster::Start(const LocalClusterOptions& options) {
  if (options.nodes == 0) return InvalidArgumentError("LocalCluster: nodes must be >= 1");
  if (::access(options.hearsay_binary.c_str(), X_OK) != 0) {
    return NotFoundError("LocalCluster: '" + options.hearsay_binary +
                         "' is not an executable hearsay binary");
  }
  HEARSAY_ASSIGN_OR_RETURN(std::unique_ptr<TempDir> dir, TempDir::Create("hearsay-cluster-"));
  std::unique_ptr<LocalCluster> cluster(new LocalCluster(options, std::move(dir)));

  // The key file: created 0600 first, so the key is never readable by others.
  cluster->key_file_ = cluster->dir_->File("cluster.key");
  const int fd = ::open(cluster->key_file_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return InternalError("LocalCluster: cannot create " + cluster->key_file_);
  ::close(fd);
  {
    HEARSAY_ASSIGN_OR_RETURN(
        auto keygen, ChildProcess::Spawn({options.hearsay_binary, "keygen"}, cluster->key_file_));
    if (!keygen->Wait(10s).ok()) {
      return DeadlineExceededError("LocalCluster: `hearsay keygen` did not finish in 10 s");
    }
    const std::string key = ReadFile(cluster->key_file_);
    if (keygen->exit_code() != 0 || key.empty() || key.find('\n') != key.size() - 1) {
      return InternalError("LocalCluster: `hearsay keygen` failed (" + keygen->ExitDescription() +
                           "): " + key.substr(0, 500));
    }
  }

  const bool on_bed = !options.node_hosts.empty();
  if (on_bed && (options.node_hosts.size() != options.nodes ||
                 options.node_exec_prefix.size() != options.nodes)) {
    return InvalidArgumentError("LocalCluster: node_hosts and node_exec_prefix need one per node");
  }
  std::vector<uint16_t> ports;
  const size_t per_node = options.admin_listener ? 3 : 2;  // HTTP, gossip[, admin]
  if (!on_bed) {
    HEARSAY_ASSIGN_OR_RETURN(ports, PickFreeLoopbackPorts(per_node * options.nodes,
                                                          /*udp_too=*/true));
  }
  cluster->nodes_.resize(options.nodes);
  for (size_t i = 0; i < options.nodes; ++i) {
    NodeInfo& info = cluster->nodes_[i].info;
    info.node_id = "node-" + std::to_string(i);
    if (on_bed) {
      info.http_address = options.node_hosts[i] + ":" + std::to_string(options.bed_http_port);
      info.gossip_address = options.node_hosts[i] + ":" + std::to_string(options.bed_gossip_port);
    } else {
      info.http_address = "127.0.0.1:" + std::to_string(ports[per_node * i]);
      info.gossip_address = "127.0.0.1:" + std::to_string(ports[per_node * i + 1]);
    }
    if (options.admin_listener) {
      info.admin_address =
          on_bed ? options.node_hosts[i] + ":" + std::to_string(options.bed_admin_port)
                 : "127.0.0.1:" + std::to_string(ports[per_node * i + 2]);
    }
    info.log_path = cluster->dir_->File(info.node_id + ".log");
    info.tls = options.probe_tls != nullptr;
  }
  for (size_t i = 0; i < options.nodes; ++i) {
    HEARSAY_RETURN_IF_ERROR(cluster->SpawnNode(i));
  }
  Status ready = cluster->WaitForViews({}, options.ready_timeout);
  if (!ready.ok()) {
    return Status(ready.code(), "LocalCluster: the cluster did not form: " + ready.message() +
                                    "\n" + cluster->AllLogTails());
  }
  return cluster;
}

LocalCluster::~LocalCluster() {
  for (Node& n : nodes_) n.process.reset();  // SIGKILL + reap
  if (std::getenv("HEARSAY_KEEP_TEST_DIRS") != nullptr) {
    dir_->Keep();
    std::fprintf(stderr, "LocalCluster: logs kept in %s\n", dir_->path().c_str());
  }
}

std::vector<std::string> NodeCommandLine(const LocalClusterOptions& options,
                                         const std::vector<NodeInfo>& nodes,
                                         const std::string& key_file, size_t i) {
  const NodeInfo& info = nodes.at(i);
  const std::vector<std::string> no_flags;
  const std::vector<std::string>& own =
      i < options.per_node_flags.size() ? options.per_node_flags[i] : no_flags;
  std::vector<std::string> argv =
      i < options.node_exec_prefix.size() ? options.node_exec_prefix[i] : no_flags;
  argv.insert(argv.end(), {options.hearsay_binary, "node", "--http", info.http_address, "--gossip",
                           info.gossip_address, "--node-id", info.node_id});
  // A common setting the node's own flags or the extra flags give again is left to them (the CLI
  // refuses a flag given twice).
  const auto common = [&](const char* flag, std::string value) {
    if (std::find(own.begin(), own.end(), flag) != own.end()) return;
    const std::vector<std::string>& extra = options.extra_flags;
    if (std::find(extra.begin(), extra.end(), flag) != extra.end()) return;
    argv.push_back(flag);
    argv.push_back(std::move(value));
  };
  common("--policy", options.policy);
  common("--engine", options.engine);
  common("--engine-preset", options.engine_preset);
  common("--capacity-tokens", std::to_string(options.capacity_tokens));
  argv.push_back("--cluster-key-file");
  argv.push_back(key_file);
  std::string join;
  for (size_t j = 0; j < nodes.size(); ++j) {
    if (j == i) continue;
    if (!join.empty()) join += ",";
    join += nodes[j].gossip_address;
  }
  if (!join.empty()) {
    argv.push_back("--join");
    argv.push_back(join);
  }
  if (options.debug_faults) argv.push_back("--debug-faults");
  if (!info.admin_address.empty()) {
    argv.push_back("--admin-http");
    argv.push_back(info.admin_address);
  }
  argv.insert(argv.end(), options.extra_flags.begin(), options.extra_flags.end());
  argv.insert(argv.end(), own.begin(), own.end());
  return argv;
}

std::vector<std::string> LocalCluster::NodeArgv(size_t i) const {
  std::vector<NodeInfo> infos;
  for (const Node& n : nodes_) infos.push_back(n.info);
  return NodeCommandLine(options_, infos, key_file_, i);
}

Status LocalCluster::SpawnNode(size_t i) {
  Node& node = nodes_[i];
  {
    std::ofstream log(node.info.log_path, std::ios::app);
    std::string cmd;
    for (const std::string& a : NodeArgv(i)) cmd += (cmd.empty() ? "" : " ") + a;
    log << "=== LocalCluster: starting " << node.info.node_id << ": " << cmd << "\n";
  }
  HEARSAY_ASSIGN_OR_RETURN(node.process, ChildProcess::Spawn(NodeArgv(i), node.info.log_path));
  return OkStatus();
}

bool LocalCluster::running(size_t i) {
  const Node& n = nodes_.at(i);
  return n.process != nullptr && n.process->running();
}

std::vector<std::string> LocalCluster::RunningHttpAddresses() const {
  std::vector<std::string> out;
  for (const Node& n : nodes_) {
    if (n.process != nullptr && n.process->running()) out.push_back(n.info.http_address);
  }
  return out;
}

Status LocalCluster::CheckAlive() const {
  for (const Node& n : nodes_) {
    if (n.process != nullptr && !n.process->running() && n.process->exit_code().has_value()) {
      // Exited on its own: Kill() and Stop() reset `process`, so this is unexpected.
      return FailedPreconditionError(n.info.node_id + " exited (" + n.process->ExitDescription() +
                                     "); its log ends with:\n" + TailFile(n.info.log_path, 30));
    }
  }
  return OkStatus();
}

Status LocalCluster::Kill(size_t i) {
  Node& n = nodes_.at(i);
  if (n.process == nullptr) return FailedPreconditionError(n.info.node_id + " is not running");
  n.process->Kill();
  n.process.reset();
  return OkStatus();
}

Status LocalCluster::Signal(size_t i, int signal) {
  Node& n = nodes_.at(i);
  if (n.process == nullptr) return FailedPreconditionError(n.info.node_id + " is not running");
  n.process->Signal(signal);
  return OkStatus();
}

Status LocalCluster::Stop(size_t i) {
  Node& n = nodes_.at(i);
  if (n.process == nullptr) return FailedPreconditionError(n.info.node_id + " is not running");
  n.process->Signal(SIGTERM);
  Status waited = n.process->Wait(options_.stop_timeout);
  std::unique_ptr<ChildProcess> process = std::move(n.process);
  if (!waited.ok()) {
    process->Kill();
    return DeadlineExceededError(n.info.node_id + " did not exit within " +
                                 std::to_string(options_.stop_timeout.count()) +
                                 " ms of SIGTERM; killed. Log:\n" + LogTail(i));
  }
  if (process->exit_code() != 0) {
    return InternalError(n.info.node_id + " ended with " + process->ExitDescription() +
                         " after SIGTERM. Log:\n" + LogTail(i));
  }
  return OkStatus();
}

Status LocalCluster::Restart(size_t i) {
  Node& n = nodes_.at(i);
  if (n.process != nullptr) {
    return FailedPreconditionError(n.info.node_id + " is still running; Kill or Stop it first");
  }
  HEARSAY_RETURN_IF_ERROR(SpawnNode(i));
  Status ready = WaitForViews({}, options_.ready_timeout);
  if (!ready.ok()) {
    return Status(ready.code(), "LocalCluster: " + n.info.node_id +
                                    " did not rejoin: " + ready.message() + "\n" + AllLogTails());
  }
  return OkStatus();
}

// An admin authenticator for one request to node `receiver`, made with the cluster key file's
// first key (net/key_admin.h, SignAdminRequest). /debug/faults asks for it.
namespace {
std::string SignWithKeyFile(const std::string& path, const http::ClientRequest& request,
                            const std::string& receiver) {
  const std::string text = ReadFile(path);
  Result<gossip::ClusterKey> key = gossip::ClusterKey::Parse(text.substr(0, text.find('\n')));
  if (!key.ok()) return {};
  return net::SignAdminRequest(*key, request.method, request.target, request.body, receiver,
                               net::UnixMillisNow());
}
}  // namespace

Status LocalCluster::Block(size_t i, const std::vector<size_t>& others) {
  nlohmann::json addresses = nlohmann::json::array();
  for (size_t j : others) addresses.push_back(nodes_.at(j).info.gossip_address);
  return PostFaults(i, nlohmann::json{{"block", addresses}}.dump());
}

Status LocalCluster::SetLinkFaults(size_t i, double delay_ms, double loss) {
  return PostFaults(i, nlohmann::json{{"delay_ms", delay_ms}, {"loss", loss}}.dump());
}

Status LocalCluster::SlowEngine(size_t i, double factor) {
  return PostFaults(i, nlohmann::json{{"engine_slowdown", factor}}.dump());
}

Status LocalCluster::PostFaults(size_t i, std::string body) {
  http::ClientRequest request;
  request.method = "POST";
  request.host_port = nodes_.at(i).info.status_address();
  request.target = "/debug/faults";
  request.body = std::move(body);
  request.headers = {{"Content-Type", "application/json"},
                     {std::string(net::kAdminTokenHeader),
                      SignWithKeyFile(key_file_, request, nodes_.at(i).info.node_id)}};
  request.connect_timeout = request.response_timeout = request.idle_timeout = kProbeTimeout;
  Result<http::SyncResponse> r = http::CallSync(std::move(request), options_.probe_tls);
  if (!r.ok()) return Status(r.status().code(), "POST /debug/faults: " + r.status().message());
  if (r->status != 200) {
    return InternalError("POST /debug/faults on " + nodes_[i].info.node_id + ": HTTP " +
                         std::to_string(r->status) + ": " + r->body.substr(0, 300));
  }
  return OkStatus();
}

Result<ClusterView> LocalCluster::View(size_t i) const {
  Result<http::SyncResponse> r = http::GetSync(nodes_.at(i).info.status_address(), "/cluster",
                                               kProbeTimeout, options_.probe_tls);
  if (!r.ok()) return r.status();
  if (r->status != 200) {
    return UnavailableError("GET /cluster on " + nodes_[i].info.node_id + ": HTTP " +
                            std::to_string(r->status));
  }
  return ParseClusterView(r->body);
}

Status LocalCluster::ViewsAgree(const std::vector<size_t>& dead) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].process == nullptr) continue;
    const std::string& who = nodes_[i].info.node_id;
    Result<http::SyncResponse> health =
        http::GetSync(nodes_[i].info.http_address, "/health", kProbeTimeout, options_.probe_tls);
    if (!health.ok()) return UnavailableError(who + " /health: " + health.status().ToString());
    if (health->status != 200) {
      return UnavailableError(who + " /health: HTTP " + std::to_string(health->status));
    }
    Result<ClusterView> view = View(i);
    if (!view.ok()) return UnavailableError(who + " /cluster: " + view.status().ToString());
    for (size_t j = 0; j < nodes_.size(); ++j) {
      if (j == i) continue;
      const std::string& other = nodes_[j].info.node_id;
      const MemberInfo* m = view->Find(other);
      const bool expect_dead = std::find(dead.begin(), dead.end(), j) != dead.end();
      if (expect_dead) {
        if (m != nullptr && m->state != "dead" && m->state != "left") {
          return UnavailableError(who + " sees " + other + " as " + m->state + ", not dead");
        }
      } else if (nodes_[j].process != nullptr) {
        if (m == nullptr) return UnavailableError(who + " does not list " + other);
        if (m->state != "alive") {
          return UnavailableError(who + " sees " + other + " as " + m->state + ", not alive");
        }
      }
    }
  }
  return OkStatus();
}

Status LocalCluster::WaitForViews(const std::vector<size_t>& dead,
                                  std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Status last;
  while (true) {
    HEARSAY_RETURN_IF_ERROR(CheckAlive());
    last = ViewsAgree(dead);
    if (last.ok()) return OkStatus();
    if (std::chrono::steady_clock::now() >= deadline) {
      return DeadlineExceededError("views did not agree within " + std::to_string(timeout.count()) +
                                   " ms: " + last.message());
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

std::string LocalCluster::LogTail(size_t i, size_t lines) const {
  return TailFile(nodes_.at(i).info.log_path, lines);
}

std::string LocalCluster::AllLogTails(size_t lines) const {
  std::string out;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    out += "--- " + nodes_[i].info.node_id + " (" + nodes_[i].info.log_path + ") ---\n";
    out += LogTail(i, lines);
    if (!out.empty() && out.back() != '\n') out += '\n';
  }
  return out;
}

}  // namespace hearsay::launch
