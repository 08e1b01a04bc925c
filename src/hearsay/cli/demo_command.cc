// `hearsay demo`: what `make demo` runs. A 4-node cluster of real `hearsay node` processes on
// loopback (launch::LocalCluster), one MMLU-like workload replayed against all four entry points
// by the load generator, once per routing policy, and a table of mean/p99 TTFT and token-level
// cache hit rate per policy.
//
// Each policy gets a fresh cluster, so every run starts with cold caches, and the same workload
// (same seed: same prompts, arrival times and entry points). Defaults are sized for a small,
// shared machine: the "consumer" engine preset (prefill is slow enough that a cache hit is worth
// far more than loopback forwarding and host noise), KV caches that cannot each hold every MMLU
// prefix (8,192 tokens per node), and Poisson arrivals at about 60% of the cluster's capacity for
// this workload (12.5 req/s; `hearsay sim --engine-preset consumer --capacity-tokens 8192
// --rho 0.6 --zipf 1` reports that rate), 200 requests per policy: about 20 s per policy.
//
// --twin adds, beside each policy, what the simulator predicts for the same nodes and requests
// (twin/: the nodes' own command lines and the load generator's workload; docs/twin.md).
//
// Nothing is left running: LocalCluster kills and reaps its nodes when it goes away, SIGINT and
// SIGTERM cancel the run and unwind through it (InterruptWatcher), and the nodes carry a
// parent-death signal for the case where the demo itself is killed with SIGKILL.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "hearsay/cli/commands.h"
#include "hearsay/cli/interrupt_watcher.h"
#include "hearsay/cli/progress_bar.h"
#include "hearsay/launch/llama_servers.h"
#include "hearsay/launch/local_cluster.h"
#include "hearsay/launch/netns_bed.h"
#include "hearsay/launch/temp_dir.h"
#include "hearsay/loadgen/load_run.h"
#include "hearsay/loadgen/request_source.h"
#include "hearsay/loadgen/summary.h"
#include "hearsay/net/records_file.h"
#include "hearsay/route/registry.h"
#include "hearsay/sim/sim_run.h"
#include "hearsay/twin/host_speed.h"
#include "hearsay/twin/twin_config.h"
#include "hearsay/twin/twin_run.h"

namespace hearsay::cli {

namespace {

struct DemoFlags {
  size_t nodes = 4;
  uint64_t requests = 200;
  double rate = 12.5;
  double zipf = 1.0;
  uint64_t seed = 1;
  std::string policies = "hearsay,paper,least-loaded,random";
  // Runs of every policy, in mirrored order: as listed in rounds 1, 3, ..., reversed in rounds 2,
  // 4, ..., so that the machine's drift over the sequence weighs on every policy alike. A
  // policy's figures are over all its runs' requests together.
  uint32_t rounds = 1;
  // The engine behind every node: "sim" (the embedded simulated engine) or "llama" (one real
  // llama.cpp llama-server per node, built by scripts/setup-llama.sh; see docs/engines.md).
  std::string engine = "sim";
  std::string engine_preset = "consumer";
  uint64_t capacity_tokens = 8192;
  std::string hearsay_binary;
  // --engine llama: path of scripts/setup-llama.sh (default: found from the binary's build dir).
  std::string llama_setup;
  double startup_timeout_s = 30;
  bool json = false;
  // Every node's decision records, all policies, in one JSON-lines file (each line gains "run":
  // the policy); empty = none.
  std::string records;
  // Beside each policy's measured figures, the simulator's prediction for the same cluster and
  // workload (twin/twin_config.h), with this one-way delay between nodes; and the decision
  // records of its first draw, all policies, in one file as `records` (empty = none).
  bool twin = false;
  // < 0: the loopback's (twin::kLoopbackOneWayDelayMs), or on the bed its delay plus that.
  double twin_delay_ms = -1;
  std::string twin_records;
  // --engine llama: the cost model the twin's engines run in place of llama-server (a preset or
  // the coefficients `hearsay calibrate` prints); empty = twin::kLlamaTwinCostModel.
  std::string twin_engine_preset;
  // --engine llama: the cores the twin's engines share, as the llama-servers share this machine's;
  // < 0 = what the host probe measured, or without it this machine's
  // (std::thread::hardware_concurrency); 0 = a machine each.
  double twin_host_cores = -1;
  // --engine llama: probe the servers after each policy's run and give the twin the host's
  // measured speed and cores (twin/host_speed.h); --twin-host-cores still sets the cores.
  bool twin_host_probe = true;
  // `hearsay node` flags every node also runs with (split at whitespace); the twin reads them
  // from the nodes' command lines like every other setting.
  std::string node_args;
  // Off loopback: every node in its own network namespace (launch::NetnsBed), and with
  // link_delay_ms > 0 every message a node sends to another (gossip and forwards, and a forward's
  // answer back) delayed that much one way, injected in the daemon (POST /debug/faults; the
  // same link model the simulator has). The twin is given the same delay.
  bool netns = false;
  double link_delay_ms = 0;
};

struct PolicyRow {
  std::string policy;
  // Over all the policy's runs; `runs` has each run's own, in round order.
  loadgen::BenchSummary summary;
  std::vector<loadgen::BenchSummary> runs;
  // Every run's requests, for `summary`.
  std::vector<loadgen::RequestResult> results;
  Duration elapsed{};
  // With --twin: the simulator's prediction, and the `hearsay sim` command that reproduces it.
  std::optional<twin::TwinPrediction> twin;
  std::string twin_command;
  // --engine llama with the host probe: what it measured for the twin.
  std::optional<twin::HostSpeed> twin_host;
};

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = s.find(',', start);
    std::string item = s.substr(start, end == std::string::npos ? end : end - start);
    if (!item.empty()) out.push_back(std::move(item));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

std::vector<std::string> SplitWords(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string word; in >> word;) out.push_back(std::move(word));
  return out;
}

// This executable's own path, so the nodes run the very binary the demo came from.
Result<std::string> SelfPath() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return InternalError("cannot resolve /proc/self/exe");
  return std::string(buf, static_cast<size_t>(n));
}

// llama: defaults a CPU can serve. A first token is prefill of ~1,500 tokens on one core per
// server (a second or more), so the sim's 12.5 req/s would only measure an ever-growing queue.
constexpr double kLlamaRate = 2.0;
constexpr uint64_t kLlamaRequests = 120;
constexpr auto kLlamaClientTimeout = std::chrono::seconds(180);

// The engine part of the cluster's configuration: the one place that knows which engines the
// demo can run.
Status EngineSetup(const DemoFlags& f, launch::LocalClusterOptions& o) {
  if (f.engine == "sim") {
    o.engine_preset = f.engine_preset;
    o.capacity_tokens = f.capacity_tokens;
    return OkStatus();
  }
  if (f.engine == "llama") {
    // Each node's --upstream is added by RunPolicy once its llama-server runs.
    launch::SetUpLlamaDemoNodes(o);
    return OkStatus();
  }
  return InvalidArgumentError("engine '" + f.engine +
                              "' is not supported by hearsay demo (supported: sim, llama)");
}

// OK if every name is a policy the daemon can run (checked here so a typo fails at once, not after
// a cluster has started and died).
Status CheckPolicies(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    bool found = false;
    for (const route::PolicyInfo& p : route::Policies()) {
      if (p.name != name) continue;
      if (p.simulator_only) {
        return InvalidArgumentError("policy '" + name + "' exists only in the simulator");
      }
      found = true;
    }
    if (!found) {
      return InvalidArgumentError("unknown policy '" + name +
                                  "' (policies: " + route::PolicyNames() + ")");
    }
  }
  return OkStatus();
}

// Cancels whatever the demo is doing when a signal arrives; the main thread then unwinds and the
// cluster's destructor reaps the nodes.
class Interrupt {
 public:
  void Fire() {
    std::lock_guard<std::mutex> lock(mu_);
    fired_ = true;
    if (run_) run_->Cancel();
  }
  void SetRun(loadgen::LoadRun* run) {
    std::lock_guard<std::mutex> lock(mu_);
    run_ = run;
    if (run_ && fired_) run_->Cancel();
  }
  bool fired() {
    std::lock_guard<std::mutex> lock(mu_);
    return fired_;
  }

 private:
  std::mutex mu_;
  bool fired_ = false;
  loadgen::LoadRun* run_ = nullptr;
};

// Appends every node's decision records of one policy's run to `out`, each line tagged with
// "run": policy. The nodes write their lines as they go, so the files are complete once the
// workload has finished.
std::string RecordsPath(const std::string& dir, size_t node) {
  return dir + "/records-node-" + std::to_string(node) + ".jsonl";
}

// Appends the records of one file to `out`, each line tagged with "run": `policy` and, when
// `round` > 0, "round": `round`.
Status AppendTagged(const std::string& path, const std::string& policy, uint32_t round,
                    std::FILE* out) {
  std::ifstream in(path);
  if (!in) return InternalError("cannot read the decision records of " + path);
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;  // a line cut short by a node's end
    j["run"] = policy;
    if (round > 0) j["round"] = round;
    const std::string text = j.dump();
    std::fprintf(out, "%s\n", text.c_str());
  }
  return std::ferror(out) ? InternalError("writing the decision records failed") : OkStatus();
}

Status CollectRecords(const std::string& dir, size_t nodes, const std::string& policy,
                      uint32_t round, std::FILE* out) {
  for (size_t i = 0; i < nodes; ++i) {
    HEARSAY_RETURN_IF_ERROR(AppendTagged(RecordsPath(dir, i), policy, round, out));
  }
  return OkStatus();
}

// The twin's first draw again, with its decision records appended to `out` (tagged "run": policy),
// for scripts/twin-compare.py.
Status RecordTwin(const sim::SimConfig& twin, const std::string& policy, std::FILE* out) {
  HEARSAY_ASSIGN_OR_RETURN(std::unique_ptr<launch::TempDir> dir,
                           launch::TempDir::Create("hearsay-demo-twin"));
  const std::string path = dir->File("twin.jsonl");
  {
    HEARSAY_ASSIGN_OR_RETURN(std::unique_ptr<net::RecordsFile> file, net::RecordsFile::Open(path));
    HEARSAY_RETURN_IF_ERROR(
        sim::RunSimRecorded(twin::DrawConfig(twin, 1), {}, file.get()).status());
    if (file->write_failed()) return InternalError("writing the twin's records failed");
  }
  return AppendTagged(path, policy, 0, out);
}

// The cluster of one policy's run, before any per-node engine address or records file.
Result<launch::LocalClusterOptions> ClusterOptions(const DemoFlags& f, const std::string& binary,
                                                   const std::string& policy) {
  launch::LocalClusterOptions co;
  co.hearsay_binary = binary;
  co.nodes = f.nodes;
  co.policy = policy;
  co.debug_faults = false;
  co.extra_flags = SplitWords(f.node_args);
  co.ready_timeout = std::chrono::milliseconds(static_cast<int64_t>(f.startup_timeout_s * 1000));
  HEARSAY_RETURN_IF_ERROR(EngineSetup(f, co));
  return co;
}

// The workload every policy's run sends.
loadgen::WorkloadSpec Workload(const DemoFlags& f) {
  loadgen::WorkloadSpec spec;
  spec.workload = "mmlu";
  spec.requests = f.requests;
  spec.rate_per_s = f.rate;
  spec.zipf = f.zipf;
  spec.targets = static_cast<uint32_t>(f.nodes);
  spec.seed = f.seed;
  return spec;
}

// The network the twin assumes: --twin-delay-ms, or on the bed the injected delay plus what a
// hop costs on loopback, with the loopback's jitter (the injected delay itself is fixed).
twin::TwinNetwork TwinNetworkOf(const DemoFlags& f) {
  twin::TwinNetwork network;
  network.one_way_delay_ms = f.twin_delay_ms;
  if (f.netns && f.twin_delay_ms < 0) {
    network.one_way_delay_ms = f.link_delay_ms + twin::kLoopbackOneWayDelayMs;
    network.jitter = network.jitter * twin::kLoopbackOneWayDelayMs / network.one_way_delay_ms;
  } else if (f.twin_delay_ms < 0) {
    network.one_way_delay_ms = twin::kLoopbackOneWayDelayMs;
  }
  return network;
}

// The twin's run for a cluster started with `co` under `spec`: the very options the nodes ran,
// and for llama-servers what the demo knows of them.
Result<sim::SimConfig> TwinConfig(const DemoFlags& f, const launch::LocalClusterOptions& co,
                                  const loadgen::WorkloadSpec& spec,
                                  const std::optional<twin::HostSpeed>& host) {
  if (f.engine != "llama" && (!f.twin_engine_preset.empty() || f.twin_host_cores >= 0)) {
    return InvalidArgumentError(
        "--twin-engine-preset and --twin-host-cores are for --engine llama (the sim engines' "
        "speed is the nodes' preset, each on a machine of its own)");
  }
  HEARSAY_ASSIGN_OR_RETURN(std::vector<net::DaemonConfig> nodes, twin::LocalClusterNodeConfigs(co));
  std::optional<twin::TwinUpstream> upstream;
  if (f.engine == "llama") {
    const double cores =
        f.twin_host_cores >= 0
            ? f.twin_host_cores
            : static_cast<double>(std::max(1u, std::thread::hardware_concurrency()));
    upstream = twin::LlamaDemoUpstream(f.twin_engine_preset, cores);
    if (host) {
      HEARSAY_ASSIGN_OR_RETURN(upstream, twin::OnHost(*upstream, *host));
      if (f.twin_host_cores >= 0) upstream->host_cores = f.twin_host_cores;
    }
  }
  return twin::TwinSimConfig(nodes, spec, TwinNetworkOf(f), upstream);
}

// A fresh bed of f.nodes namespaces, and `co` set to run node i in namespace i.
Result<std::unique_ptr<launch::NetnsBed>> OnBed(const DemoFlags& f,
                                                launch::LocalClusterOptions& co) {
  HEARSAY_ASSIGN_OR_RETURN(std::unique_ptr<launch::NetnsBed> bed,
                           launch::NetnsBed::Create(f.nodes));
  // The delay is set through POST /debug/faults, which the demo reaches over the bridge.
  co.debug_faults = true;
  co.extra_flags.push_back("--admin-allow-remote");
  for (size_t i = 0; i < f.nodes; ++i) {
    co.node_hosts.push_back(bed->Address(i));
    co.node_exec_prefix.push_back(bed->ExecPrefix(i));
  }
  return bed;
}

// Sets every node's link delay, then waits until every node's smoothed round-trip time to every
// other is at least 1.5 x the delay (what the nodes price a forward's trip with), at most 90 s.
// The smoothing (1/8 per probe or sync reply) needs about 11 replies of a pair to climb from
// loopback's round trip to 75% of the new one, and a pair that gossip rarely picks can take more
// than 30 s (one was at 29.95 ms after 30 s with 20 ms injected).
Status InjectDelay(const DemoFlags& f, launch::LocalCluster& cluster, Interrupt& interrupt) {
  if (f.link_delay_ms <= 0) return OkStatus();
  for (size_t i = 0; i < cluster.size(); ++i) {
    HEARSAY_RETURN_IF_ERROR(cluster.SetLinkFaults(i, f.link_delay_ms, 0));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (!interrupt.fired()) {
    std::string short_of;  // the first pair whose round trip is short of the delay
    for (size_t i = 0; i < cluster.size() && short_of.empty(); ++i) {
      Result<launch::ClusterView> view = cluster.View(i);
      if (!view.ok()) short_of = view.status().ToString();
      for (size_t j = 0; short_of.empty() && j < cluster.size(); ++j) {
        if (j == i) continue;
        const launch::MemberInfo* m = view->Find(cluster.node(j).node_id);
        if (m == nullptr || !m->rtt_ms || *m->rtt_ms < 1.5 * f.link_delay_ms) {
          short_of = "node " + std::to_string(i) + " to node " + std::to_string(j) + ": " +
                     (m != nullptr && m->rtt_ms ? std::to_string(*m->rtt_ms) + " ms" : "none");
        }
      }
    }
    if (short_of.empty()) return OkStatus();
    if (std::chrono::steady_clock::now() > deadline) {
      return DeadlineExceededError(
          "the nodes' round-trip times did not reach the injected delay (" + short_of + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return AbortedError("interrupted");
}

// One run of a policy: fresh cluster, the workload, the summary (and, with --twin, the twin's in
// the policy's first round). `round` is 1-based, or 0 when the demo runs one round. The cluster
// is gone when this returns.
Result<PolicyRow> RunPolicy(const DemoFlags& f, const std::string& binary,
                            const std::string& policy, uint32_t round, bool tty,
                            Interrupt& interrupt, std::FILE* records, std::FILE* twin_records) {
  HEARSAY_ASSIGN_OR_RETURN(launch::LocalClusterOptions co, ClusterOptions(f, binary, policy));
  // --engine llama: fresh llama-servers (empty caches) for every policy, one per node.
  std::unique_ptr<launch::TempDir> llama_dir;
  std::unique_ptr<launch::LlamaServers> llama;
  if (f.engine == "llama") {
    HEARSAY_ASSIGN_OR_RETURN(llama_dir, launch::TempDir::Create("hearsay-demo-llama"));
    const launch::LlamaServerOptions lo =
        launch::LlamaDemoServerOptions(f.nodes, llama_dir->path());
    if (tty) {
      std::fprintf(stderr, "\r  %-13s starting %zu llama-servers...", policy.c_str(), f.nodes);
    }
    HEARSAY_ASSIGN_OR_RETURN(llama, launch::LlamaServers::Start(lo));
    for (const std::string& addr : llama->addresses()) {
      co.per_node_flags.push_back({"--upstream", "http://" + addr});
    }
  }
  std::unique_ptr<launch::TempDir> records_dir;
  if (records != nullptr) {
    HEARSAY_ASSIGN_OR_RETURN(records_dir, launch::TempDir::Create("hearsay-demo-records"));
    for (size_t i = 0; i < f.nodes; ++i) {
      if (co.per_node_flags.size() <= i) co.per_node_flags.emplace_back();
      co.per_node_flags[i].insert(co.per_node_flags[i].end(),
                                  {"--records", RecordsPath(records_dir->path(), i)});
    }
  }
  // Declared before the cluster, so its namespaces outlive the nodes.
  std::unique_ptr<launch::NetnsBed> bed;
  if (f.netns) {
    HEARSAY_ASSIGN_OR_RETURN(bed, OnBed(f, co));
  }
  if (tty) std::fprintf(stderr, "\r  %-13s starting %zu nodes...", policy.c_str(), f.nodes);
  Result<std::unique_ptr<launch::LocalCluster>> cluster = launch::LocalCluster::Start(co);
  if (tty) std::fprintf(stderr, "\r%78s\r", "");
  if (!cluster.ok()) return cluster.status();
  if (interrupt.fired()) return AbortedError("interrupted");
  if (f.netns) HEARSAY_RETURN_IF_ERROR(InjectDelay(f, **cluster, interrupt));

  const loadgen::WorkloadSpec spec = Workload(f);
  HEARSAY_ASSIGN_OR_RETURN(loadgen::RequestSource source, loadgen::RequestSource::Create(spec));

  loadgen::LoadOptions lo;
  for (size_t i = 0; i < (*cluster)->size(); ++i) {
    lo.targets.push_back((*cluster)->node(i).http_address);
  }
  lo.mode = loadgen::LoadMode::kOpenLoop;
  lo.max_requests = f.requests;
  lo.response_timeout = f.engine == "llama" ? kLlamaClientTimeout : std::chrono::seconds(60);
  lo.idle_timeout = lo.response_timeout;
  ProgressBar bar(policy, tty, /*enabled=*/tty);
  lo.progress = [&bar](const loadgen::Progress& p) { bar.Update(p); };
  loadgen::LoadRun run(std::move(lo), std::move(source));
  interrupt.SetRun(&run);
  Result<loadgen::RunOutput> out = run.Run();
  interrupt.SetRun(nullptr);
  bar.Finish();
  if (!out.ok()) return out.status();
  if (out->cancelled) return AbortedError("interrupted");
  if (records != nullptr) {
    HEARSAY_RETURN_IF_ERROR(CollectRecords(records_dir->path(), f.nodes, policy, round, records));
  }
  PolicyRow row;
  row.policy = policy;
  row.summary = loadgen::Summarize(out->results, out->elapsed, f.nodes);
  row.results = std::move(out->results);
  row.elapsed = out->elapsed;
  if (f.twin && round <= 1) {
    if (llama && f.twin_host_probe) {
      // The servers are idle now, their caches warm with the run's prompts (the probe's are new).
      HEARSAY_ASSIGN_OR_RETURN(
          row.twin_host,
          twin::ProbeHost(llama->addresses(), twin::LlamaDemoUpstream(f.twin_engine_preset)));
    }
    HEARSAY_ASSIGN_OR_RETURN(const sim::SimConfig twin, TwinConfig(f, co, spec, row.twin_host));
    HEARSAY_ASSIGN_OR_RETURN(row.twin, twin::Predict(twin));
    row.twin_command = twin::SimCommandLine(twin::DrawConfig(twin, 1));
    if (twin_records != nullptr) HEARSAY_RETURN_IF_ERROR(RecordTwin(twin, policy, twin_records));
  }
  return row;
}

// Adds one run of `row`'s policy (the first sets its twin).
void AddRun(PolicyRow& row, PolicyRow run) {
  if (row.runs.empty()) {
    row.policy = run.policy;
    row.twin = std::move(run.twin);
    row.twin_command = std::move(run.twin_command);
    row.twin_host = run.twin_host;
  }
  row.runs.push_back(run.summary);
  row.results.insert(row.results.end(), std::make_move_iterator(run.results.begin()),
                     std::make_move_iterator(run.results.end()));
  row.elapsed += run.elapsed;
}

// With more than one round, each policy's runs, in round order.
void PrintRuns(const std::vector<PolicyRow>& rows) {
  if (rows.empty() || rows.front().runs.size() < 2) return;
  std::printf("\neach run, mean TTFT ms (hit rate), in round order:\n");
  for (const PolicyRow& r : rows) {
    std::printf("%-14s", r.policy.c_str());
    for (const loadgen::BenchSummary& run : r.runs) {
      std::printf(" %9.1f (%.3f)", run.ttft.mean_ms, run.hit_rate);
    }
    std::printf("\n");
  }
}

void PrintTable(const std::vector<PolicyRow>& rows) {
  std::printf("%-14s %13s %12s %12s %9s %9s\n", "policy", "mean TTFT ms", "p50 TTFT ms",
              "p99 TTFT ms", "hit rate", "failed");
  for (const PolicyRow& r : rows) {
    const loadgen::BenchSummary& s = r.summary;
    std::printf("%-14s %13.1f %12.1f %12.1f %9.3f %9llu\n", r.policy.c_str(), s.ttft.mean_ms,
                s.ttft.p50_ms, s.ttft.p99_ms, s.hit_rate,
                static_cast<unsigned long long>(s.failed));
    if (r.twin) {
      std::printf("%-14s %13.1f %12s %12.1f %9.3f\n", "  twin", r.twin->mean_ttft_ms, "-",
                  r.twin->p99_ttft_ms, r.twin->hit_rate);
    }
    if (r.twin_host) {
      std::printf("%-14s prefill %.2fx the cost model alone, %.2f cores shared\n", "  twin host",
                  r.twin_host->speed, r.twin_host->cores);
    }
  }
  PrintRuns(rows);
  if (!rows.empty() && rows.front().twin) {
    std::printf(
        "\ntwin: the simulator on the nodes' own configuration and the same requests, the mean of "
        "%u runs\n(--cluster-seed 1 to %u); the first for %s:\n  %s\n",
        rows.front().twin->runs, rows.front().twin->runs, rows.front().policy.c_str(),
        rows.front().twin_command.c_str());
  }
}

int RunDemo(const DemoFlags& f) {
  std::string binary = f.hearsay_binary;
  if (binary.empty()) {
    Result<std::string> self = SelfPath();
    if (!self.ok()) {
      std::fprintf(stderr, "hearsay demo: %s\n", self.status().ToString().c_str());
      return 1;
    }
    binary = *self;
  }
  if (f.engine == "llama") {
    // The build tree is <repo>/build/<dir>/hearsay; setup-llama.sh builds llama.cpp once (cached).
    const std::string bin_dir = binary.substr(0, binary.rfind('/'));
    const std::string setup =
        f.llama_setup.empty() ? bin_dir + "/../../scripts/setup-llama.sh" : f.llama_setup;
    if (Status s = launch::EnsureLlamaSetup(setup, bin_dir + "/tools/make_llama2c_model");
        !s.ok()) {
      std::fprintf(stderr, "hearsay demo: --engine llama: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  const std::vector<std::string> policies = SplitCommas(f.policies);
  if (policies.empty()) {
    std::fprintf(stderr, "hearsay demo: --policies names no policy\n");
    return 1;
  }
  launch::LocalClusterOptions probe;
  Status valid = CheckPolicies(policies);
  if (valid.ok()) valid = EngineSetup(f, probe);
  if (valid.ok() && f.netns) valid = launch::NetnsBed::CheckAvailable();
  if (valid.ok() && f.link_delay_ms > 0 && !f.netns) {
    valid = InvalidArgumentError("--link-delay-ms needs --netns");
  }
  if (valid.ok() && !f.twin_records.empty() && !f.twin) {
    valid = InvalidArgumentError("--twin-records needs --twin");
  }
  if (valid.ok() && f.twin) {
    // Refused before any cluster starts: what the twin cannot model (say, --engine llama).
    Result<launch::LocalClusterOptions> co = ClusterOptions(f, binary, policies.front());
    valid = co.ok() ? TwinConfig(f, *co, Workload(f), std::nullopt).status() : co.status();
    if (!valid.ok()) valid = Status(valid.code(), "--twin: " + valid.message());
  }
  if (!valid.ok()) {
    std::fprintf(stderr, "hearsay demo: %s\n", valid.message().c_str());
    return 1;
  }
  const bool tty = isatty(STDERR_FILENO) != 0;
  if (!f.json) {
    const std::string engine =
        f.engine == "llama"
            ? "each in front of its own llama.cpp llama-server:\na small random-weight Llama, 1 "
              "thread, " +
                  std::to_string(launch::kLlamaDemoCacheRamMib) +
                  " MiB prompt cache = " + std::to_string(launch::kLlamaDemoCapacityTokens) +
                  " KV tokens"
            : "sim engine, preset " + f.engine_preset + ", " + std::to_string(f.capacity_tokens) +
                  " KV tokens each";
    const std::string where = f.netns
                                  ? "in network namespaces, " + std::to_string(f.link_delay_ms) +
                                        " ms one-way between nodes (injected in the nodes)"
                                  : std::string("on loopback");
    const std::string rounds =
        f.rounds > 1 ? ", " + std::to_string(f.rounds) + " runs per policy in mirrored order" : "";
    std::printf(
        "hearsay demo: %zu hearsay node processes %s (%s),\nMMLU-like workload (Zipf "
        "%.2f over 57 subjects), %llu requests per run at %.1f req/s\nspread over all entry "
        "points, seed %llu; a fresh cluster per run%s\n\n",
        f.nodes, where.c_str(), engine.c_str(), f.zipf, static_cast<unsigned long long>(f.requests),
        f.rate, static_cast<unsigned long long>(f.seed), rounds.c_str());
    std::fflush(stdout);
  }

  std::unique_ptr<std::FILE, int (*)(std::FILE*)> records(nullptr, &std::fclose);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> twin_records(nullptr, &std::fclose);
  for (auto [path, file] :
       {std::make_pair(&f.records, &records), std::make_pair(&f.twin_records, &twin_records)}) {
    if (path->empty()) continue;
    file->reset(std::fopen(path->c_str(), "w"));
    if (!*file) {
      std::fprintf(stderr, "hearsay demo: cannot write %s: %s\n", path->c_str(),
                   std::strerror(errno));
      return 1;
    }
  }
  Interrupt interrupt;
  InterruptWatcher watcher([&interrupt](int) { interrupt.Fire(); });
  std::vector<PolicyRow> rows(policies.size());
  for (uint32_t round = 1; round <= f.rounds; ++round) {
    for (size_t k = 0; k < policies.size(); ++k) {
      const size_t i = round % 2 == 1 ? k : policies.size() - 1 - k;
      const std::string& policy = policies[i];
      Result<PolicyRow> s = RunPolicy(f, binary, policy, f.rounds > 1 ? round : 0, tty, interrupt,
                                      records.get(), twin_records.get());
      if (interrupt.fired()) {
        std::fprintf(stderr, "hearsay demo: interrupted; every node has been stopped\n");
        return 130;
      }
      if (!s.ok()) {
        std::fprintf(stderr, "hearsay demo: policy %s: %s\n", policy.c_str(),
                     s.status().ToString().c_str());
        return 1;
      }
      if (!f.json && tty) {
        std::fprintf(stderr, "  %-13s done: mean TTFT %.1f ms, hit rate %.3f\n", policy.c_str(),
                     s->summary.ttft.mean_ms, s->summary.hit_rate);
      }
      AddRun(rows[i], std::move(*s));
    }
  }
  for (PolicyRow& row : rows) {
    row.summary = loadgen::Summarize(row.results, row.elapsed, f.nodes);
  }

  if (f.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const PolicyRow& r : rows) {
      nlohmann::json row = {{"policy", r.policy},
                            {"mean_ttft_ms", r.summary.ttft.mean_ms},
                            {"p50_ttft_ms", r.summary.ttft.p50_ms},
                            {"p99_ttft_ms", r.summary.ttft.p99_ms},
                            {"hit_rate", r.summary.hit_rate},
                            {"completed", r.summary.completed},
                            {"failed", r.summary.failed}};
      if (r.runs.size() > 1) {
        nlohmann::json runs = nlohmann::json::array();
        for (const loadgen::BenchSummary& run : r.runs) {
          runs.push_back({{"mean_ttft_ms", run.ttft.mean_ms},
                          {"p50_ttft_ms", run.ttft.p50_ms},
                          {"p99_ttft_ms", run.ttft.p99_ms},
                          {"hit_rate", run.hit_rate}});
        }
        row["runs"] = std::move(runs);
      }
      if (r.twin) {
        row["twin_mean_ttft_ms"] = r.twin->mean_ttft_ms;
        row["twin_p99_ttft_ms"] = r.twin->p99_ttft_ms;
        row["twin_hit_rate"] = r.twin->hit_rate;
        row["twin_mean_ttft_ms_range"] = {r.twin->min_mean_ttft_ms, r.twin->max_mean_ttft_ms};
        row["twin_command"] = r.twin_command;
      }
      if (r.twin_host) {
        row["twin_host_speed"] = r.twin_host->speed;
        row["twin_host_cores"] = r.twin_host->cores;
      }
      out.push_back(std::move(row));
    }
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    PrintTable(rows);
  }
  uint64_t failed = 0;
  for (const PolicyRow& r : rows) failed += r.summary.failed;
  if (failed > 0) {
    std::fprintf(stderr, "hearsay demo: %llu requests failed (see the table)\n",
                 static_cast<unsigned long long>(failed));
    return 3;
  }
  return 0;
}

}  // namespace

void AddDemoCommand(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<DemoFlags>();
  auto* cmd = app.add_subcommand(
      "demo", "Compare routing policies on a 4-node cluster of real processes on loopback");
  cmd->add_option("--nodes", f->nodes, "Nodes in the cluster")
      ->check(CLI::Range(size_t{1}, size_t{32}))
      ->capture_default_str();
  cmd->add_option("--requests", f->requests, "Requests per policy (--engine llama: 120)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1'000'000}))
      ->capture_default_str();
  cmd->add_option("--rate", f->rate,
                  "Poisson arrival rate over the whole cluster, requests/s (--engine llama: 2)")
      ->check(CLI::Range(0.01, 100'000.0))
      ->capture_default_str();
  cmd->add_option("--zipf", f->zipf, "Zipf exponent of MMLU subject popularity")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  cmd->add_option("--seed", f->seed, "Workload seed (the same for every policy)")
      ->capture_default_str();
  cmd->add_option("--policies", f->policies, "Comma-separated policies to compare")
      ->capture_default_str();
  cmd->add_option("--rounds", f->rounds,
                  "Runs of every policy, in mirrored order (as listed, then reversed, ...); each "
                  "policy's figures are over all its runs (with --json, \"runs\" has each run's)")
      ->check(CLI::Range(uint32_t{1}, uint32_t{20}))
      ->capture_default_str();
  cmd->add_option("--engine", f->engine,
                  "Engine behind each node: sim, or llama (a real llama.cpp server per node)")
      ->capture_default_str();
  cmd->add_option("--llama-setup", f->llama_setup,
                  "--engine llama: path of scripts/setup-llama.sh (default: from the build dir)");
  cmd->add_option("--engine-preset", f->engine_preset, "Simulated engine's cost model preset")
      ->capture_default_str();
  cmd->add_option("--capacity-tokens", f->capacity_tokens, "KV cache per node, tokens")
      ->check(CLI::Range(uint64_t{16}, uint64_t{1} << 40))
      ->capture_default_str();
  cmd->add_option("--hearsay-binary", f->hearsay_binary,
                  "The hearsay binary the nodes run (default: this one)");
  cmd->add_option("--startup-timeout", f->startup_timeout_s,
                  "Seconds for a cluster to become healthy and converged")
      ->check(CLI::Range(1.0, 600.0))
      ->capture_default_str();
  cmd->add_flag("--json", f->json,
                "Print JSON: one object per policy (policy, mean_ttft_ms, p99_ttft_ms, hit_rate)");
  cmd->add_flag("--twin", f->twin,
                "Beside each policy, print what the simulator predicts for the same cluster and "
                "requests (with --json: twin_mean_ttft_ms, twin_p99_ttft_ms, twin_hit_rate)");
  cmd->add_option("--twin-delay-ms", f->twin_delay_ms,
                  "--twin: one-way delay between nodes the simulator assumes, ms (default: 0.1, "
                  "the loopback's; with --netns, --link-delay-ms plus that)")
      ->check(CLI::Range(0.0, 10'000.0));
  cmd->add_option("--twin-engine-preset", f->twin_engine_preset,
                  "--twin with --engine llama: the cost model the twin's engines run, a preset or "
                  "the coefficients `hearsay calibrate` prints (default: llama-tiny-cpu)");
  cmd->add_option("--twin-host-cores", f->twin_host_cores,
                  "--twin with --engine llama: the cores the twin's engines share, as the "
                  "llama-servers share this machine's (default: what the host probe measures, "
                  "without it this machine's; 0: one each)")
      ->check(CLI::Range(0.0, 4096.0));
  cmd->add_flag("--twin-host-probe,!--no-twin-host-probe", f->twin_host_probe,
                "--twin with --engine llama: after each policy's run, time the servers' prefill "
                "alone and all at once, and give the twin that speed and the host's effective "
                "cores (the default); off: the cost model as it is, on this machine's cores");
  cmd->add_flag("--netns", f->netns,
                "Run every node in its own network namespace on a bridge (needs root, ip, tc, "
                "nft; docs/testbed.md) instead of on loopback");
  cmd->add_option("--link-delay-ms", f->link_delay_ms,
                  "--netns: one-way delay of every message between nodes, ms, injected in the "
                  "nodes (--debug-faults); the twin is given the same")
      ->check(CLI::Range(0.0, 10'000.0))
      ->capture_default_str();
  cmd->add_option(
      "--twin-records", f->twin_records,
      "--twin: write the decision records of the twin's first run of every policy to "
      "this file, as --records does for the nodes (scripts/twin-compare.py pairs them)");
  cmd->add_option("--node-args", f->node_args,
                  "More `hearsay node` flags for every node, e.g. \"--state-signatures off\" "
                  "(the twin models the nodes as these flags configure them)");
  cmd->add_option(
      "--records", f->records,
      "Write every node's decision records (one JSON line per request routed or "
      "served, tagged with \"run\": the policy, and with --rounds above 1 \"round\") to "
      "this file");
  cmd->callback([f, cmd, &exit_code] {
    if (f->engine == "llama") {
      if (cmd->count("--rate") == 0) f->rate = kLlamaRate;
      if (cmd->count("--requests") == 0) f->requests = kLlamaRequests;
    }
    exit_code = RunDemo(*f);
  });
}

}  // namespace hearsay::cli
