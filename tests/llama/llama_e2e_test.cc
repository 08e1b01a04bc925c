// End-to-end proof on a real engine: 3 hearsay nodes, each fronting its own llama.cpp
// llama-server (a small random-weight Llama, scripts/setup-llama.sh), serve an MMLU-like workload
// (shared few-shot prefixes per subject) once with the `random` policy and once with `hearsay`.
// From llama-server's own reported cached tokens (usage.prompt_tokens_details.cached_tokens, as
// relayed by the nodes), hearsay must get a higher token-level hit rate and a lower mean TTFT.
//
// Every run starts fresh llama-servers (empty caches). The llama build is cached outside the
// tree; the first run builds it (minutes). The test skips, loudly, only when the build is
// impossible on this machine (no npm, git or cmake: setup-llama.sh exit code 3).
//
// Arguments (from CMake): <setup-llama.sh> <make_llama2c_model> <hearsay binary>.
#include <gtest/gtest.h>

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

constexpr size_t kNodes = 3;
// Host-memory prompt cache per llama-server, MiB: small, so caches are capacity-limited and where
// a request lands matters (about 16k tokens at 4 KiB/token for this model: some ten prompts).
constexpr int kCacheRamMib = 64;
constexpr uint64_t kCapacityTokens = 16384;
// Deadlines that fit this CPU model's real speed under the test's load: a first token is prefill
// of ~1,500 tokens plus queueing behind the other requests in flight, seconds on a quiet machine
// and tens of seconds on a loaded one. The forward deadline sits above the peer engine's own, so
// a slow peer is waited for (its own deadline answers first) rather than abandoned mid-prefill and
// the request recomputed elsewhere, which only adds load and scatters prefixes over the caches.
constexpr const char* kUpstreamFirstTokenTimeoutMs = "120000";
constexpr const char* kForwardTimeoutMs = "150000";
constexpr auto kClientTimeout = 180s;
// The workload: the same requests, in the same order, for both policies.
constexpr uint64_t kRequests = 150;
constexpr uint64_t kWorkloadSeed = 7;
constexpr double kZipf = 0.8;
// Requests in flight at once, fewer than the servers: with as many as servers, every request that
// waits for its cache holder leaves another server idle, and the policy rightly spreads them.
constexpr size_t kConcurrency = 2;
// What hearsay must beat random by. The hit rate, from llama-server's own counts, is the robust
// figure (1.22-1.41x measured, docs/engines.md); mean TTFT, from the clients' clocks, follows
// it but also moves with the machine's other load between the two runs, so it must only be lower.
constexpr double kMinHitRateRatio = 1.15;
constexpr double kMaxMeanTtftRatio = 1.0;

struct PolicyResult {
  std::string policy;
  loadgen::BenchSummary summary;
};

Result<PolicyResult> RunPolicy(const std::string& policy, const std::string& dir) {
  launch::LlamaServerOptions lso;
  lso.servers = kNodes;
  lso.cache_ram_mib = kCacheRamMib;
  lso.log_dir = dir + "/" + policy;
  std::filesystem::create_directories(lso.log_dir);
  HEARSAY_ASSIGN_OR_RETURN(auto servers, launch::LlamaServers::Start(lso));
  launch::LocalClusterOptions o;
  o.hearsay_binary = g_hearsay;
  o.nodes = kNodes;
  o.policy = policy;
  o.capacity_tokens = kCapacityTokens;
  o.engine = "openai";
  o.extra_flags = {"--upstream-flavor", "llamacpp", "--context-tokens", "8192"};
  o.extra_flags.insert(o.extra_flags.end(),
                       {"--upstream-first-token-timeout-ms", kUpstreamFirstTokenTimeoutMs,
                        "--forward-timeout-ms", kForwardTimeoutMs});
  for (size_t i = 0; i < kNodes; ++i) {
    o.per_node_flags.push_back({"--upstream", "http://" + servers->addresses()[i]});
  }
  HEARSAY_ASSIGN_OR_RETURN(auto cluster, launch::LocalCluster::Start(o));

  loadgen::WorkloadSpec spec;
  spec.workload = "mmlu";
  spec.requests = kRequests;
  spec.zipf = kZipf;
  spec.targets = kNodes;
  spec.seed = kWorkloadSeed;
  spec.model = "hearsay-sim";
  HEARSAY_ASSIGN_OR_RETURN(loadgen::RequestSource source, loadgen::RequestSource::Create(spec));
  loadgen::LoadOptions lo;
  for (size_t i = 0; i < kNodes; ++i) lo.targets.push_back(cluster->node(i).http_address);
  lo.mode = loadgen::LoadMode::kClosedLoop;
  lo.concurrency = kConcurrency;
  lo.max_requests = spec.requests;
  lo.response_timeout = kClientTimeout;
  lo.idle_timeout = kClientTimeout;
  loadgen::LoadRun run(lo, std::move(source));
  HEARSAY_ASSIGN_OR_RETURN(loadgen::RunOutput out, run.Run());
  PolicyResult r;
  r.policy = policy;
  r.summary = loadgen::Summarize(out.results, out.elapsed, kNodes);
  if (r.summary.failed > 0) {
    std::fprintf(stderr, "%s: %llu failed requests; node logs:\n%s\n", policy.c_str(),
                 static_cast<unsigned long long>(r.summary.failed),
                 cluster->AllLogTails(10).c_str());
  }
  return r;
}

TEST(LlamaEndToEnd, HearsayBeatsRandomOnRealLlamaServers) {
  Status setup = launch::EnsureLlamaSetup(g_setup_script, g_model_tool);
  if (setup.code() == StatusCode::kFailedPrecondition) {
    GTEST_SKIP() << "\n\n*** SKIPPED: " << setup.message()
                 << ". The end-to-end proof on a real engine did NOT run. ***\n";
  }
  ASSERT_TRUE(setup.ok()) << setup.ToString();

  auto dir = launch::TempDir::Create("hearsay-llama-e2e");
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  std::vector<PolicyResult> results;
  for (const char* policy : {"random", "hearsay"}) {
    auto r = RunPolicy(policy, dir.value()->path());
    ASSERT_TRUE(r.ok()) << policy << ": " << r.status().ToString();
    results.push_back(std::move(r).value());
  }
  std::printf(
      "\nllama.cpp end-to-end (3 nodes x llama-server, MMLU-like, %llu requests, Zipf %.1f, seed "
      "%llu, closed loop %zu):\n",
      static_cast<unsigned long long>(kRequests), kZipf,
      static_cast<unsigned long long>(kWorkloadSeed), kConcurrency);
  std::printf("%-8s %9s %13s %12s %12s %10s %11s %7s\n", "policy", "hit_rate", "mean_ttft_ms",
              "p50_ttft_ms", "p99_ttft_ms", "cached", "prompt", "failed");
  for (const PolicyResult& r : results) {
    std::printf("%-8s %9.3f %13.1f %12.1f %12.1f %10llu %11llu %7llu\n", r.policy.c_str(),
                r.summary.hit_rate, r.summary.ttft.mean_ms, r.summary.ttft.p50_ms,
                r.summary.ttft.p99_ms, static_cast<unsigned long long>(r.summary.cached_tokens),
                static_cast<unsigned long long>(r.summary.prompt_tokens),
                static_cast<unsigned long long>(r.summary.failed));
  }
  const auto& random = results[0].summary;
  const auto& hearsay = results[1].summary;
  std::printf("hearsay/random: hit rate %.2fx, mean TTFT %.2fx\n",
              random.hit_rate > 0 ? hearsay.hit_rate / random.hit_rate : 0.0,
              random.ttft.mean_ms > 0 ? hearsay.ttft.mean_ms / random.ttft.mean_ms : 0.0);
  EXPECT_EQ(random.failed, 0u);
  EXPECT_EQ(hearsay.failed, 0u);
  EXPECT_EQ(random.completed, kRequests);
  EXPECT_EQ(hearsay.completed, kRequests);
  EXPECT_GT(random.prompt_tokens, 0u);
  EXPECT_GE(hearsay.hit_rate, kMinHitRateRatio * random.hit_rate);
  EXPECT_LT(hearsay.ttft.mean_ms, kMaxMeanTtftRatio * random.ttft.mean_ms);
  if (HasFailure()) {
    dir.value()->Keep();
    std::fprintf(stderr, "llama-server logs kept in %s\n", dir.value()->path().c_str());
  }
}

}  // namespace
}  // namespace hearsay
