// Simulated requests per wall-second through one SimEngine in virtual time.
//
// Workload: MMLU-like, 57 shared few-shot prefixes of 250..750 tokens (mean ~500), each request
// one prefix plus a unique ~120-token suffix (60..180), 1 output token, on the h100-llama3-8b
// preset with the default 8,192-token budget and 262,144-token KV cache. Requests arrive in
// bursts of 64 at one virtual instant and the engine runs until idle, so items_per_second is
// end-to-end engine cost per request: Submit, matching, pinning, insertion, eviction, events,
// callbacks and the scheduler's timers.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "hearsay/engine/sim_engine.h"
#include "hearsay/env/rng.h"
#include "hearsay/simenv/virtual_scheduler.h"

namespace hearsay {
namespace {

class CountingObserver : public engine::EngineObserver {
 public:
  void OnFirstToken(engine::RequestId, const engine::FirstToken& f) override {
    cached_tokens += f.cached_tokens;
    prompt_tokens += f.prompt_tokens;
  }
  void OnComplete(engine::RequestId, const engine::Usage&) override { ++completed; }
  void OnError(engine::RequestId, const Status&) override { ++errors; }

  uint64_t completed = 0;
  uint64_t errors = 0;
  uint64_t cached_tokens = 0;
  uint64_t prompt_tokens = 0;
};

void BM_SimEngineRequests(benchmark::State& state) {
  constexpr int kSubjects = 57;
  constexpr int kBurst = 64;
  Rng rng(42);
  std::vector<std::vector<engine::TokenId>> prefixes(kSubjects);
  for (int s = 0; s < kSubjects; ++s) {
    const size_t len = 250 + rng.Below(501);
    for (size_t i = 0; i < len; ++i) {
      prefixes[s].push_back(static_cast<engine::TokenId>(1024 + rng.Below(31000)));
    }
  }
  simenv::VirtualScheduler sched;
  auto keyer = prefix::BlockKeyer::Create("bench-secret-0123456789abcdef", "llama3-8b", "").value();
  auto engine = engine::SimEngine::Create(sched, engine::SimEngineOptions{}, keyer).value();
  CountingObserver obs;
  std::vector<prefix::BlockEvent> events;
  uint64_t next_id = 0;
  engine::TokenId next_token = 100000;
  for (auto _ : state) {
    for (int i = 0; i < kBurst; ++i) {
      engine::EngineRequest r;
      r.id = next_id++;
      const auto& p = prefixes[rng.Below(kSubjects)];
      const size_t suffix = 60 + rng.Below(121);
      r.prompt.reserve(p.size() + suffix);
      r.prompt.assign(p.begin(), p.end());
      // Unique suffix tokens from a counter, above the prefixes' vocabulary: cheap to make, so
      // the figure is the engine's cost rather than the generator's.
      for (size_t k = 0; k < suffix; ++k) r.prompt.push_back(next_token++);
      r.max_output_tokens = 1;
      if (!engine->Submit(std::move(r), &obs).ok()) ++obs.errors;
    }
    sched.RunUntilIdle();
    // The node drains events for gossip; do the same so they do not pile up.
    events.clear();
    engine->DrainCacheEvents(events);
    benchmark::DoNotOptimize(events.data());
  }
  if (obs.errors != 0 || obs.completed != next_id) state.SkipWithError("requests failed");
  state.SetItemsProcessed(static_cast<int64_t>(obs.completed));
  state.counters["cache_hit"] = static_cast<double>(obs.cached_tokens) /
                                static_cast<double>(std::max<uint64_t>(1, obs.prompt_tokens));
  state.counters["virtual_s"] = ToSeconds(sched.Now() - TimePoint{});
}
BENCHMARK(BM_SimEngineRequests);

}  // namespace
}  // namespace hearsay
