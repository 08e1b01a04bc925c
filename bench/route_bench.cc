// Routing decision time: one Policy::Choose() over N candidates for a 512-block (8192-token)
// prompt whose candidates' estimated cached tokens are given, as the node would fill them from
// its radix tree and peer index. The hearsay policy's lease table is warm (a few sibling
// prompts were dispatched), so Find() walks real entries.
#include <benchmark/benchmark.h>

#include <memory>
#include <string_view>
#include <vector>

#include "hearsay/env/rng.h"
#include "hearsay/route/registry.h"

namespace hearsay::route {
namespace {

constexpr size_t kChainBlocks = 512;
constexpr uint32_t kBlockTokens = 16;

std::vector<prefix::BlockKey> Chain(uint64_t family, uint64_t variant, size_t shared) {
  std::vector<prefix::BlockKey> chain;
  prefix::BlockKey key = family * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < kChainBlocks; ++i) {
    const uint64_t content = i < shared ? i : (i << 32) ^ (variant + 1);
    key = (key ^ content) * 0xBF58476D1CE4E5B9ull;
    key ^= key >> 31;
    chain.push_back(key);
  }
  return chain;
}

std::vector<Candidate> Candidates(size_t n, Rng& rng) {
  std::vector<Candidate> out(n);
  for (size_t i = 0; i < n; ++i) {
    Candidate& c = out[i];
    c.slot = static_cast<Slot>(i);
    c.is_self = i == 0;
    c.cache_exact = i == 0;
    c.one_way_delay = i == 0 ? Duration::zero() : FromMillis(rng.Uniform(0.05, 5));
    c.cached_tokens = static_cast<uint32_t>(rng.Below(kChainBlocks + 1)) * kBlockTokens;
    c.cache_age = FromMillis(rng.Uniform(0, 500));
    c.load.queued = static_cast<uint32_t>(rng.Below(4));
    c.load.queued_prefill_tokens = c.load.queued * rng.Below(4000);
    c.load.running = static_cast<uint32_t>(rng.Below(32));
    c.load.running_context_tokens = c.load.running * rng.Below(3000);
    c.load.age = FromMillis(rng.Uniform(0, 300));
    c.load.overloaded = rng.Bernoulli(0.05);
  }
  return out;
}

struct Setup {
  std::unique_ptr<Policy> policy;
  std::vector<Candidate> candidates;
  std::vector<prefix::BlockKey> chain;
  RouteRequest request;
  Rng rng{1};
};

Setup Build(std::string_view name, size_t n) {
  Setup s;
  s.policy = std::move(MakePolicy(name, PolicyOptions{})).value();
  s.candidates = Candidates(n, s.rng);
  s.chain = Chain(1, 0, kChainBlocks);
  // Warm the policy's sent ledger and lease table with sibling dispatches.
  std::vector<std::vector<prefix::BlockKey>> siblings;
  for (uint64_t v = 1; v <= 16; ++v) siblings.push_back(Chain(1, v, 400));
  for (uint64_t v = 0; v < siblings.size(); ++v) {
    RouteRequest r;
    r.request_id = 1000 + v;
    r.now = TimePoint{} + FromMillis(double(v));
    r.prompt_tokens = kChainBlocks * kBlockTokens;
    r.key_chain = siblings[v];
    r.block_tokens = kBlockTokens;
    s.policy->OnSent(static_cast<Slot>(s.rng.Below(n)), r);
  }
  s.request.now = TimePoint{} + FromMillis(20);
  s.request.prompt_tokens = kChainBlocks * kBlockTokens;
  s.request.key_chain = s.chain;
  s.request.block_tokens = kBlockTokens;
  return s;
}

void BM_RouteDecision(benchmark::State& state, std::string_view name) {
  Setup s = Build(name, static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    ++s.request.request_id;
    benchmark::DoNotOptimize(s.policy->Choose(s.request, s.candidates, s.rng));
  }
}
BENCHMARK_CAPTURE(BM_RouteDecision, hearsay, "hearsay")->Arg(8)->Arg(64)->Arg(256);
BENCHMARK_CAPTURE(BM_RouteDecision, paper, "paper")->Arg(8)->Arg(64)->Arg(256);
BENCHMARK_CAPTURE(BM_RouteDecision, oracle, "oracle")->Arg(64);
BENCHMARK_CAPTURE(BM_RouteDecision, least_loaded, "least-loaded")->Arg(64);

// The whole per-request cost for `hearsay`: Choose() plus OnSent() (ledger entry and a lease of
// 57 grid keys), with the clock advancing so leases expire and the table stays in steady state.
void BM_RouteDecisionAndSent(benchmark::State& state, std::string_view name) {
  Setup s = Build(name, static_cast<size_t>(state.range(0)));
  std::vector<std::vector<prefix::BlockKey>> prompts;
  for (uint64_t v = 0; v < 64; ++v) prompts.push_back(Chain(2 + v % 8, v, 256));
  size_t i = 0;
  for (auto _ : state) {
    s.request.key_chain = prompts[i++ % prompts.size()];
    ++s.request.request_id;
    s.request.now += FromMillis(1);
    const Decision d = s.policy->Choose(s.request, s.candidates, s.rng);
    s.policy->OnSent(d.slot, s.request);
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK_CAPTURE(BM_RouteDecisionAndSent, hearsay, "hearsay")->Arg(64);

}  // namespace
}  // namespace hearsay::route
