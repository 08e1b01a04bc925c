// End-to-end proof on a real engine: 4 hearsay nodes, each fronting its own llama.cpp
// llama-server (a small random-weight Llama, scripts/setup-llama.sh), serve an MMLU-like workload
// (shared few-shot prefixes per subject; open loop, the setting of `hearsay demo --engine llama`
// cut to 100 requests) with each of `hearsay`, `paper` (the paper's longest-prefix
// policy) and `least-loaded`. From llama-server's own reported cached tokens
// (usage.prompt_tokens_details.cached_tokens, as relayed by the nodes), hearsay must keep nearly
// all of paper's cache hits and far more than least-loaded's, and its summed time to first token
// over the same request sequence must not be worse than the better of the two beyond the run-to-run
// noise of a 2-core machine.
//
// The runs go hearsay, paper, least-loaded, paper, hearsay: the machine's speed drifts between
// runs, and with one run each, hearsay's TTFT sum over paper's ranged 0.86-1.26x at equal hit
// rates (docs/benchmarks.md). Mirrored positions cancel a drift that is linear over the
// sequence; each policy is judged over its runs together.
//
// Servers and nodes are set up as `hearsay demo --engine llama` sets them up (one host group, the
// demo's cache and deadlines); every node writes its decision records beside its server's log, kept
// when the test fails. Every run starts fresh llama-servers (empty caches). The llama build is
// cached outside the tree; the first run builds it (minutes). The test skips, loudly, only when the
// build is impossible on this machine (no npm, git or cmake: setup-llama.sh exit code 3).
//
// Arguments (from CMake): <setup-llama.sh> <make_llama2c_model> <hearsay binary>.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "hearsay/launch/llama_servers.h"
#include "hearsay/launch/local_cluster.h"
#include "hearsay/launch/temp_dir.h"
#include "hearsay/loadgen/load_run.h"
#include "hearsay/loadgen/request_source.h"
#include "hearsay/loadgen/summary.h"
#include "hearsay/testkit/blocking_http.h"
#include "llama_test_main.h"

namespace hearsay {
namespace {

using namespace std::chrono_literals;

constexpr size_t kNodes = 4;
constexpr auto kClientTimeout = 180s;
// The workload: the same requests, arrival times and entry points for every policy. 100 of the
// demo's 120 requests keep the five runs near 4 minutes.
constexpr uint64_t kRequests = 100;
constexpr uint64_t kWorkloadSeed = 1;
constexpr double kZipf = 1.0;
constexpr double kRatePerS = 2.0;
// The bars. The hit rate, from llama-server's own counts, is the robust figure: it hardly moves
// with the machine's speed (hearsay measured 0.98-1.05x paper's; 0.60-0.92x before its model was
// fixed). Summed TTFT, from the clients' clocks, moves with the machine's speed between runs
// (0.30-0.42 ms per computed token), so even over mirrored runs it has a margin.
constexpr double kMinHitRateVsPaper = 0.90;
constexpr double kMinHitRateVsLeastLoaded = 1.15;
constexpr double kMaxTtftSumVsBest = 1.25;

struct PolicyResult {
  std::string policy;
  loadgen::BenchSummary summary;
  double ttft_sum_ms = 0;  // over the completed requests
};

// One policy's runs together: the hit rate over all their requests, and the TTFT sum per run.
struct Pooled {
  double hit_rate = 0;
  double ttft_per_run_ms = 0;
};

Pooled Pool(const std::vector<PolicyResult>& runs, const std::string& policy) {
  uint64_t cached = 0;
  uint64_t prompt = 0;
  double ttft = 0;
  int count = 0;
  for (const PolicyResult& r : runs) {
    if (r.policy != policy) continue;
    cached += r.summary.cached_tokens;
    prompt += r.summary.prompt_tokens;
    ttft += r.ttft_sum_ms;
    ++count;
  }
  Pooled p;
  if (prompt > 0) p.hit_rate = double(cached) / double(prompt);
  if (count > 0) p.ttft_per_run_ms = ttft / count;
  return p;
}

// One run of `policy` on fresh llama-servers, which log to `log_dir`.
Result<PolicyResult> RunPolicy(const std::string& policy, const std::string& log_dir) {
  std::filesystem::create_directories(log_dir);
  HEARSAY_ASSIGN_OR_RETURN(
      auto servers, launch::LlamaServers::Start(launch::LlamaDemoServerOptions(kNodes, log_dir)));
  launch::LocalClusterOptions o;
  o.hearsay_binary = g_hearsay;
  o.nodes = kNodes;
  o.policy = policy;
  launch::SetUpLlamaDemoNodes(o);
  for (size_t i = 0; i < kNodes; ++i) {
    o.per_node_flags.push_back({"--upstream", "http://" + servers->addresses()[i], "--records",
                                log_dir + "/records-node-" + std::to_string(i) + ".jsonl"});
  }
  HEARSAY_ASSIGN_OR_RETURN(auto cluster, launch::LocalCluster::Start(o));

  loadgen::WorkloadSpec spec;
  spec.workload = "mmlu";
  spec.requests = kRequests;
  spec.zipf = kZipf;
  spec.rate_per_s = kRatePerS;
  spec.targets = kNodes;
  spec.seed = kWorkloadSeed;
  spec.model = "hearsay-sim";
  HEARSAY_ASSIGN_OR_RETURN(loadgen::RequestSource source, loadgen::RequestSource::Create(spec));
  loadgen::LoadOptions lo;
  for (size_t i = 0; i < kNodes; ++i) lo.targets.push_back(cluster->node(i).http_address);
  lo.mode = loadgen::LoadMode::kOpenLoop;
  lo.max_requests = spec.requests;
  lo.response_timeout = kClientTimeout;
  lo.idle_timeout = kClientTimeout;
  loadgen::LoadRun run(lo, std::move(source));
  HEARSAY_ASSIGN_OR_RETURN(loadgen::RunOutput out, run.Run());
  PolicyResult r;
  r.policy = policy;
  r.summary = loadgen::Summarize(out.results, out.elapsed, kNodes);
  for (const loadgen::RequestResult& result : out.results) {
    if (result.ttft) r.ttft_sum_ms += ToMillis(*result.ttft);
  }
  if (r.summary.failed > 0) {
    std::fprintf(stderr, "%s: %llu failed requests; node logs:\n%s\n", policy.c_str(),
                 static_cast<unsigned long long>(r.summary.failed),
                 cluster->AllLogTails(10).c_str());
  }
  return r;
}

TEST(LlamaEndToEnd, HearsayKeepsPapersHitsAndMatchesTheBestTtftOnRealLlamaServers) {
  Status setup = launch::EnsureLlamaSetup(g_setup_script, g_model_tool);
  if (setup.code() == StatusCode::kFailedPrecondition) {
    GTEST_SKIP() << "\n\n*** SKIPPED: " << setup.message()
                 << ". The end-to-end proof on a real engine did NOT run. ***\n";
  }
  ASSERT_TRUE(setup.ok()) << setup.ToString();

  auto dir = launch::TempDir::Create("hearsay-llama-e2e");
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  std::vector<PolicyResult> runs;
  for (const char* policy : {"hearsay", "paper", "least-loaded", "paper", "hearsay"}) {
    const std::string log_dir =
        dir.value()->path() + "/" + std::to_string(runs.size()) + "-" + policy;
    auto r = RunPolicy(policy, log_dir);
    ASSERT_TRUE(r.ok()) << policy << ": " << r.status().ToString();
    runs.push_back(std::move(r).value());
  }
  std::printf(
      "\nllama.cpp end-to-end (%zu nodes x llama-server, MMLU-like, %llu requests, Zipf %.1f, "
      "seed %llu, open loop %.1f req/s), in run order:\n",
      kNodes, static_cast<unsigned long long>(kRequests), kZipf,
      static_cast<unsigned long long>(kWorkloadSeed), kRatePerS);
  std::printf("%-13s %9s %13s %12s %12s %13s %10s %7s\n", "policy", "hit_rate", "mean_ttft_ms",
              "p50_ttft_ms", "p99_ttft_ms", "ttft_sum_ms", "cached", "failed");
  for (const PolicyResult& r : runs) {
    std::printf("%-13s %9.3f %13.1f %12.1f %12.1f %13.0f %10llu %7llu\n", r.policy.c_str(),
                r.summary.hit_rate, r.summary.ttft.mean_ms, r.summary.ttft.p50_ms,
                r.summary.ttft.p99_ms, r.ttft_sum_ms,
                static_cast<unsigned long long>(r.summary.cached_tokens),
                static_cast<unsigned long long>(r.summary.failed));
    EXPECT_EQ(r.summary.failed, 0u) << r.policy;
    EXPECT_EQ(r.summary.completed, kRequests) << r.policy;
    EXPECT_GT(r.summary.prompt_tokens, 0u) << r.policy;
  }
  const Pooled hearsay = Pool(runs, "hearsay");
  const Pooled paper = Pool(runs, "paper");
  const Pooled least = Pool(runs, "least-loaded");
  const double best_ttft = std::min(paper.ttft_per_run_ms, least.ttft_per_run_ms);
  std::printf(
      "hearsay (its two runs against paper's two): hit rate %.2fx paper's, %.2fx "
      "least-loaded's; TTFT sum %.2fx the best\n",
      paper.hit_rate > 0 ? hearsay.hit_rate / paper.hit_rate : 0,
      least.hit_rate > 0 ? hearsay.hit_rate / least.hit_rate : 0,
      best_ttft > 0 ? hearsay.ttft_per_run_ms / best_ttft : 0);
  EXPECT_GE(hearsay.hit_rate, kMinHitRateVsPaper * paper.hit_rate);
  EXPECT_GE(hearsay.hit_rate, kMinHitRateVsLeastLoaded * least.hit_rate);
  EXPECT_LE(hearsay.ttft_per_run_ms, kMaxTtftSumVsBest * best_ttft);
  if (HasFailure()) {
    dir.value()->Keep();
    std::fprintf(stderr, "llama-server logs kept in %s\n", dir.value()->path().c_str());
  }
}

}  // namespace
}  // namespace hearsay
