// Network namespaces on a bridge, driven through `ip`, `tc` and `nft` (see the header).
#include "hearsay/launch/netns_bed.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>

#include "hearsay/launch/child_process.h"
#include "hearsay/launch/temp_dir.h"

namespace hearsay::launch {
namespace {

using namespace std::chrono_literals;

constexpr const char* kNamePrefix = "hsb";
constexpr const char* kFaultTable = "hearsay_faults";

// The path of a system tool, or "" if none of the usual directories has it.
std::string Tool(const std::string& name) {
  for (const char* dir : {"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"}) {
    const std::string path = dir + name;
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

// Runs argv and returns its output (stdout and stderr), or INTERNAL with it.
Result<std::string> Capture(const std::vector<std::string>& argv) {
  HEARSAY_ASSIGN_OR_RETURN(std::unique_ptr<TempDir> dir, TempDir::Create("hearsay-netns-cmd-"));
  const std::string log = dir->File("out");
  HEARSAY_ASSIGN_OR_RETURN(std::unique_ptr<ChildProcess> p, ChildProcess::Spawn(argv, log));
  Status waited = p->Wait(15s);
  std::ifstream in(log);
  std::stringstream out;
  out << in.rdbuf();
  std::string cmd;
  for (const std::string& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  if (!waited.ok()) return DeadlineExceededError("`" + cmd + "` did not finish in 15 s");
  if (p->exit_code() != 0) {
    return InternalError("`" + cmd + "` failed (" + p->ExitDescription() + "): " + out.str());
  }
  return out.str();
}

bool ProcessRuns(long pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM; }

// The names in `text` (`ip netns list`, `ip -o link`) that an earlier run made and whose
// creator no longer runs: words of kNamePrefix, the creator's pid, then a lowercase letter.
std::set<std::string> StaleNames(std::string_view text) {
  const auto word_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  const std::string_view prefix = kNamePrefix;
  std::set<std::string> out;
  for (size_t i = 0; i < text.size();) {
    size_t end = i;
    while (end < text.size() && word_char(text[end])) ++end;
    const std::string_view word = text.substr(i, end - i);
    i = std::max(end, i + 1);
    if (!word.starts_with(prefix)) continue;
    size_t digits = prefix.size();
    while (digits < word.size() && std::isdigit(static_cast<unsigned char>(word[digits]))) ++digits;
    const size_t pid_len = digits - prefix.size();
    if (pid_len == 0 || pid_len > 9 || digits == word.size() ||
        !std::islower(static_cast<unsigned char>(word[digits]))) {
      continue;
    }
    const long pid = std::stol(std::string(word.substr(prefix.size(), pid_len)));
    if (pid != ::getpid() && !ProcessRuns(pid)) out.insert(std::string(word));
  }
  return out;
}

}  // namespace

Status RunCommand(const std::vector<std::string>& argv) { return Capture(argv).status(); }

Status NetnsBed::CheckAvailable() {
  if (::geteuid() != 0) return PermissionDeniedError("network namespaces need root");
  for (const char* tool : {"ip", "tc", "nft"}) {
    if (Tool(tool).empty()) {
      return NotFoundError(std::string("`") + tool +
                           "` is not installed (scripts/install-deps.sh installs it)");
    }
  }
  const std::string probe = std::string(kNamePrefix) + std::to_string(::getpid()) + "probe";
  Status made = RunCommand({Tool("ip"), "netns", "add", probe});
  if (!made.ok()) return Status(made.code(), "cannot make a network namespace: " + made.message());
  Status nft = RunCommand(
      {Tool("ip"), "netns", "exec", probe, Tool("nft"), "add", "table", "inet", kFaultTable});
  (void)RunCommand({Tool("ip"), "netns", "del", probe});
  if (!nft.ok()) return Status(nft.code(), "nftables does not work here: " + nft.message());
  return OkStatus();
}

void NetnsBed::CleanStale() {
  const std::string ip = Tool("ip");
  if (ip.empty()) return;
  if (Result<std::string> ns = Capture({ip, "netns", "list"}); ns.ok()) {
    for (const std::string& n : StaleNames(*ns)) {
      (void)RunCommand({ip, "netns", "del", n});
    }
  }
  if (Result<std::string> links = Capture({ip, "-o", "link", "show"}); links.ok()) {
    for (const std::string& n : StaleNames(*links)) {
      (void)RunCommand({ip, "link", "del", n});
    }
  }
}

Result<std::unique_ptr<NetnsBed>> NetnsBed::Create(size_t hosts) {
  if (hosts == 0 || hosts > 200) return InvalidArgumentError("NetnsBed: 1..200 hosts");
  HEARSAY_RETURN_IF_ERROR(CheckAvailable());
  CleanStale();
  const int pid = static_cast<int>(::getpid());
  std::unique_ptr<NetnsBed> bed(
      new NetnsBed(kNamePrefix + std::to_string(pid), 1 + pid % 250, hosts));
  Status setup = bed->Setup();
  if (!setup.ok()) return Status(setup.code(), "NetnsBed: " + setup.message());
  return bed;
}

Status NetnsBed::Setup() {
  const std::string ip = Tool("ip");
  HEARSAY_RETURN_IF_ERROR(RunCommand({ip, "link", "add", Bridge(), "type", "bridge"}));
  bridge_made_ = true;
  HEARSAY_RETURN_IF_ERROR(
      RunCommand({ip, "addr", "add", BridgeAddress() + "/24", "dev", Bridge()}));
  HEARSAY_RETURN_IF_ERROR(RunCommand({ip, "link", "set", Bridge(), "up"}));
  for (size_t i = 0; i < hosts_; ++i) {
    HEARSAY_RETURN_IF_ERROR(RunCommand({ip, "netns", "add", Namespace(i)}));
    ++created_;
    HEARSAY_RETURN_IF_ERROR(
        RunCommand({ip, "link", "add", HostSide(i), "type", "veth", "peer", "name", NodeSide(i)}));
    HEARSAY_RETURN_IF_ERROR(RunCommand({ip, "link", "set", NodeSide(i), "netns", Namespace(i)}));
    HEARSAY_RETURN_IF_ERROR(RunCommand({ip, "link", "set", HostSide(i), "master", Bridge(), "up"}));
    HEARSAY_RETURN_IF_ERROR(RunCommand(
        {ip, "-n", Namespace(i), "addr", "add", Address(i) + "/24", "dev", NodeSide(i)}));
    HEARSAY_RETURN_IF_ERROR(RunCommand({ip, "-n", Namespace(i), "link", "set", NodeSide(i), "up"}));
    HEARSAY_RETURN_IF_ERROR(RunCommand({ip, "-n", Namespace(i), "link", "set", "lo", "up"}));
    HEARSAY_RETURN_IF_ERROR(InNamespace(i, {"nft", "add", "table", "inet", kFaultTable}));
    HEARSAY_RETURN_IF_ERROR(InNamespace(i, {"nft", "add", "chain", "inet", kFaultTable, "in",
                                            "{ type filter hook input priority 0; }"}));
    HEARSAY_RETURN_IF_ERROR(InNamespace(i, {"nft", "add", "chain", "inet", kFaultTable, "out",
                                            "{ type filter hook output priority 0; }"}));
  }
  return OkStatus();
}

NetnsBed::~NetnsBed() {
  const std::string ip = Tool("ip");
  // Deleting a namespace deletes its veth end, and with it the peer on the bridge.
  for (size_t i = 0; i < created_; ++i) (void)RunCommand({ip, "netns", "del", Namespace(i)});
  for (size_t i = 0; i < hosts_; ++i) {
    if (Capture({ip, "link", "show", HostSide(i)}).ok()) {
      (void)RunCommand({ip, "link", "del", HostSide(i)});
    }
  }
  if (bridge_made_) (void)RunCommand({ip, "link", "del", Bridge()});
}

bool NetnsBed::NetemAvailable() {
  if (hosts_ == 0) return false;
  const bool ok = RunCommand({Tool("tc"), "-n", Namespace(0), "qdisc", "add", "dev", "lo", "root",
                              "netem", "delay", "1ms"})
                      .ok();
  if (ok) (void)RunCommand({Tool("tc"), "-n", Namespace(0), "qdisc", "del", "dev", "lo", "root"});
  return ok;
}

std::string NetnsBed::Namespace(size_t i) const { return prefix_ + "n" + std::to_string(i); }

std::string NetnsBed::Address(size_t i) const {
  return "10.213." + std::to_string(subnet_) + "." + std::to_string(i + 2);
}

std::string NetnsBed::BridgeAddress() const { return "10.213." + std::to_string(subnet_) + ".1"; }

std::vector<std::string> NetnsBed::ExecPrefix(size_t i) const {
  return {Tool("ip"), "netns", "exec", Namespace(i)};
}

Status NetnsBed::InNamespace(size_t i, std::vector<std::string> argv) {
  std::vector<std::string> full = ExecPrefix(i);
  argv[0] = Tool(argv[0]);
  full.insert(full.end(), argv.begin(), argv.end());
  return RunCommand(full);
}

Status NetnsBed::CapBandwidth(size_t i, int kbit) {
  const std::string tc = Tool("tc");
  if (kbit <= 0) {
    // No cap to remove is fine: the goal (no cap) holds.
    (void)RunCommand({tc, "-n", Namespace(i), "qdisc", "del", "dev", NodeSide(i), "root"});
    return OkStatus();
  }
  return RunCommand({tc, "-n", Namespace(i), "qdisc", "replace", "dev", NodeSide(i), "root", "tbf",
                     "rate", std::to_string(kbit) + "kbit", "burst", "32kbit", "latency", "400ms"});
}

Status NetnsBed::DelayAndLose(size_t i, double delay_ms, double loss) {
  const std::string tc = Tool("tc");
  if (delay_ms <= 0 && loss <= 0) {
    (void)RunCommand({tc, "-n", Namespace(i), "qdisc", "del", "dev", NodeSide(i), "root"});
    return OkStatus();
  }
  return RunCommand({tc, "-n", Namespace(i), "qdisc", "replace", "dev", NodeSide(i), "root",
                     "netem", "delay", std::to_string(delay_ms) + "ms", "loss",
                     std::to_string(loss * 100) + "%"});
}

Status NetnsBed::DropOneWay(size_t from, size_t to) {
  HEARSAY_RETURN_IF_ERROR(InNamespace(from, {"nft", "add", "rule", "inet", kFaultTable, "out", "ip",
                                             "daddr", Address(to), "drop"}));
  return InNamespace(
      to, {"nft", "add", "rule", "inet", kFaultTable, "in", "ip", "saddr", Address(from), "drop"});
}

Status NetnsBed::Partition(const std::vector<size_t>& a, const std::vector<size_t>& b) {
  for (size_t i : a) {
    for (size_t j : b) {
      HEARSAY_RETURN_IF_ERROR(DropOneWay(i, j));
      HEARSAY_RETURN_IF_ERROR(DropOneWay(j, i));
    }
  }
  return OkStatus();
}

Status NetnsBed::HealPartitions() {
  for (size_t i = 0; i < hosts_; ++i) {
    HEARSAY_RETURN_IF_ERROR(InNamespace(i, {"nft", "flush", "table", "inet", kFaultTable}));
  }
  return OkStatus();
}

}  // namespace hearsay::launch
