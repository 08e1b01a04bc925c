#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <vector>

#include "hearsay/engine/sim_engine.h"
#include "hearsay/engine/sim_engine_test_util.h"
#include "hearsay/simenv/virtual_scheduler.h"

namespace hearsay::engine {
namespace {

// Runs a fixed mixed workload and returns every token time, in submission order.
std::vector<int64_t> RunWorkload(double jitter, uint64_t seed) {
  simenv::VirtualScheduler sched;
  Recorder rec(sched);
  SimEngineOptions o;
  o.jitter = jitter;
  o.seed = seed;
  o.token_budget = 2048;
  o.kv_capacity_tokens = 20000;
  auto engine = SimEngine::Create(sched, o, Keyer()).value();
  Rng rng(99);
  for (RequestId id = 0; id < 200; ++id) {
    const auto shared = Tokens(static_cast<uint32_t>(rng.Below(8)) + 1, 300);
    const auto prompt = Concat(shared, Tokens(static_cast<uint32_t>(id) + 100, rng.Below(400) + 1));
    const uint32_t out = static_cast<uint32_t>(rng.Below(20)) + 1;
    sched.RunFor(FromMillis(rng.Exponential(5.0)));
    EXPECT_TRUE(engine->Submit(Req(id, prompt, out), &rec).ok());
  }
  sched.RunUntilIdle();
  std::vector<int64_t> times;
  for (RequestId id = 0; id < 200; ++id) {
    EXPECT_TRUE(rec.at(id).complete);
    for (TimePoint t : rec.at(id).token_times) times.push_back((t - TimePoint{}).count());
    times.push_back(rec.at(id).usage.cached_tokens);
  }
  return times;
}

TEST(SimEngineDeterminismTest, SameSeedSameRunDifferentSeedDifferentRun) {
  const auto a = RunWorkload(0.1, 7);
  EXPECT_EQ(a, RunWorkload(0.1, 7));
  EXPECT_NE(a, RunWorkload(0.1, 8));
  EXPECT_NE(a, RunWorkload(0.0, 7));
  EXPECT_EQ(RunWorkload(0.0, 7), RunWorkload(0.0, 8));  // no jitter: the seed does not matter
}

TEST_F(SimEngineTest, JitterHasMeanOne) {
  SimEngineOptions o;
  o.jitter = 0.2;
  o.seed = 3;
  Make(o);
  double total_ms = 0;
  const int n = 400;
  for (int i = 0; i < n; ++i) {
    // Distinct prompts so nothing is cached.
    const TimePoint start = sched_.Now();
    Submit(Req(static_cast<RequestId>(i), Tokens(static_cast<uint32_t>(i) + 1, 100)));
    sched_.RunUntilIdle();
    total_ms += ToMillis(rec_.at(static_cast<RequestId>(i)).first_at - start);
  }
  IterationShape s;
  s.AddPrefill(100, 0);
  EXPECT_NEAR(total_ms / n, Cost().IterationMs(s), 0.05 * Cost().IterationMs(s));
}

// Counts callbacks, and those that arrive while the test is inside Submit or Cancel.
class ReentrancyProbe : public EngineObserver {
 public:
  void OnAdmitted(RequestId, const Admission&) override { Hit(); }
  void OnFirstToken(RequestId, const FirstToken&) override { Hit(); }
  void OnTokens(RequestId, std::span<const TokenId>) override { Hit(); }
  void OnComplete(RequestId, const Usage&) override { Hit(); }
  void OnError(RequestId, const Status&) override { Hit(); }

  bool inside = false;
  int calls = 0;
  int violations = 0;

 private:
  void Hit() {
    ++calls;
    violations += inside;
  }
};

TEST_F(SimEngineTest, CallbacksNeverRunInsideSubmitOrCancel) {
  Make();
  ReentrancyProbe probe;
  for (RequestId id = 0; id < 40; ++id) {
    probe.inside = true;
    ASSERT_TRUE(engine_->Submit(Req(id, Tokens(1, 50 + id), 3), &probe).ok());
    if (id % 7 == 6) engine_->Cancel(id - 3);
    probe.inside = false;
    sched_.Step();
  }
  sched_.RunUntilIdle();
  EXPECT_GT(probe.calls, 100);
  EXPECT_EQ(probe.violations, 0);
}

TEST_F(SimEngineTest, DestructionCancelsThePendingIteration) {
  Make();
  Submit(Req(1, Tokens(1, 100), 10));
  sched_.Step();
  engine_.reset();
  sched_.RunUntilIdle();
  EXPECT_FALSE(rec_.at(1).first);
}

size_t CommonPrefix(const std::vector<TokenId>& a, const std::vector<TokenId>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// Naive model: with a cache that never evicts and one request at a time, a request's cached
// tokens are its longest common prefix with any earlier prompt-plus-output, capped at its length
// minus one.
TEST(SimEnginePropertyTest, CachedTokensMatchNaiveModelWithoutEviction) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    simenv::VirtualScheduler sched;
    Recorder rec(sched);
    SimEngineOptions o;
    o.kv_capacity_tokens = 1 << 20;
    o.token_budget = 64 + static_cast<uint32_t>(seed * 37 % 500);
    auto engine = SimEngine::Create(sched, o, Keyer()).value();
    Rng rng(seed);
    std::vector<std::vector<TokenId>> seen;  // prompt + output of every finished request
    for (RequestId id = 0; id < 60; ++id) {
      // Prompts mix a few shared stems, and sometimes extend an earlier sequence (a chat turn).
      std::vector<TokenId> prompt;
      if (!seen.empty() && rng.Bernoulli(0.3)) {
        const auto& prev = seen[rng.Below(seen.size())];
        prompt.assign(prev.begin(), prev.begin() + 1 + rng.Below(prev.size()));
      } else {
        prompt = Tokens(static_cast<uint32_t>(rng.Below(4)) + 1, rng.Below(200) + 1);
      }
      const auto tail = Tokens(static_cast<uint32_t>(id) + 50, rng.Below(40));
      prompt.insert(prompt.end(), tail.begin(), tail.end());
      size_t expect = 0;
      for (const auto& s : seen) expect = std::max(expect, CommonPrefix(prompt, s));
      expect = std::min(expect, prompt.size() - 1);
      const uint32_t out = static_cast<uint32_t>(rng.Below(4)) + 1;
      ASSERT_TRUE(engine->Submit(Req(id, prompt, out), &rec).ok());
      sched.RunUntilIdle();
      ASSERT_TRUE(rec.at(id).complete);
      EXPECT_EQ(rec.at(id).usage.cached_tokens, expect) << "seed " << seed << " id " << id;
      auto full = prompt;
      full.insert(full.end(), rec.at(id).tokens.begin(), rec.at(id).tokens.end());
      EXPECT_EQ(engine->CachedPrefixTokens(full), full.size());
      seen.push_back(std::move(full));
    }
    EXPECT_TRUE(engine->cache().CheckInvariants().ok());
  }
}

// Concurrency, eviction and cancellation under random load, in three cache namespaces: invariants
// at every step, FCFS admission, every surviving request served in full, and the drained events
// replay to exactly the blocks the cache holds (namespace headers never among them).
TEST(SimEnginePropertyTest, InvariantsUnderRandomLoadAndCancels) {
  // Coverage across seeds: the run must actually cancel, evict and complete.
  uint64_t total_cancelled = 0, total_removed = 0, total_completed = 0, total_hits = 0;
  // Seeds 13-16 run a llama-server's layout (slots and a host cache of whole sequences).
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    simenv::VirtualScheduler sched;
    Recorder rec(sched);
    SimEngineOptions o;
    const bool slots = seed > 12;
    if (slots) o.cache_layout = CacheLayout::kSlots;
    o.kv_capacity_tokens = 3000 + seed * 500;
    o.token_budget = 128 + static_cast<uint32_t>(seed * 97 % 1024);
    o.max_running = 2 + static_cast<uint32_t>(seed % 8);
    o.jitter = seed % 2 == 0 ? 0.1 : 0.0;
    o.seed = seed;
    auto engine = SimEngine::Create(sched, o, Keyer()).value();
    Rng rng(seed * 1000 + 7);
    std::vector<RequestId> submitted;
    std::set<RequestId> cancelled;
    std::map<RequestId, uint32_t> max_out;
    std::set<prefix::BlockKey> held;
    std::vector<prefix::BlockEvent> events;
    auto drain = [&] {
      events.clear();
      engine->DrainCacheEvents(events);
      for (const auto& e : events) {
        if (e.kind == prefix::BlockEvent::Kind::kAdded) {
          EXPECT_TRUE(held.insert(e.key).second);
        } else {
          EXPECT_EQ(held.erase(e.key), 1u);
          ++total_removed;
        }
      }
    };
    RequestId next = 0;
    for (int step = 0; step < 600; ++step) {
      const uint64_t action = rng.Below(10);
      if (action < 4) {
        auto prompt = Concat(Tokens(static_cast<uint32_t>(rng.Below(5)) + 1, rng.Below(400) + 1),
                             Tokens(static_cast<uint32_t>(next) + 100, rng.Below(300)));
        const uint32_t out = static_cast<uint32_t>(rng.Below(30)) + 1;
        // Two namespaces besides the shared one: their blocks hold KV but are never reported.
        EngineRequest r = Req(next, prompt, out);
        r.cache_namespace = next % 3;
        const size_t header =
            r.cache_namespace != 0 ? engine->cache().keyer().tokens_per_block() : 0;
        const Status st = engine->Submit(std::move(r), &rec);
        if (prompt.size() + out + header > o.kv_capacity_tokens) {
          EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
        } else {
          ASSERT_TRUE(st.ok()) << st.ToString();
          submitted.push_back(next);
          max_out[next] = out;
        }
        ++next;
      } else if (action == 4 && !submitted.empty()) {
        const RequestId victim = submitted[rng.Below(submitted.size())];
        const bool live =
            !cancelled.count(victim) && !(rec.seen(victim) && rec.at(victim).complete);
        EXPECT_EQ(engine->Cancel(victim), live) << victim;
        if (live) cancelled.insert(victim);
      } else if (action == 5) {
        drain();
      } else {
        sched.Step();
      }
      const EngineLoad l = engine->Load();
      ASSERT_LE(l.kv_used_tokens, l.kv_capacity_tokens);
      ASSERT_LE(l.kv_pinned_tokens, l.kv_used_tokens);
      ASSERT_LE(l.running_requests, o.max_running);
      const IterationShape& s = engine->current_iteration();
      ASSERT_LE(s.prefill_tokens + s.decode_batch, o.token_budget);
    }
    sched.RunUntilIdle();
    drain();
    if (slots) {
      const Status st = engine->slot_cache()->CheckInvariants();
      ASSERT_TRUE(st.ok()) << st.ToString();
    } else {
      ASSERT_TRUE(engine->cache().CheckInvariants().ok());
      const std::vector<prefix::BlockKey> keys = engine->cache().HeldKeys();
      EXPECT_EQ(held, std::set<prefix::BlockKey>(keys.begin(), keys.end())) << "seed " << seed;
    }
    std::vector<prefix::BlockEvent> snapshot;
    engine->AppendCacheSnapshot(snapshot);
    std::set<prefix::BlockKey> snap_keys;
    for (const auto& e : snapshot) {
      EXPECT_EQ(e.kind, prefix::BlockEvent::Kind::kAdded);
      snap_keys.insert(e.key);
    }
    EXPECT_EQ(snap_keys, held);
    std::vector<RequestId> expect_order;
    for (RequestId id : submitted) {
      if (cancelled.count(id)) {
        EXPECT_FALSE(rec.seen(id) && rec.at(id).complete) << id;
        continue;
      }
      ASSERT_TRUE(rec.at(id).complete) << "seed " << seed << " id " << id;
      ++total_completed;
      total_hits += rec.at(id).usage.cached_tokens > 0;
      EXPECT_EQ(rec.at(id).usage.completion_tokens, max_out[id]);
      EXPECT_EQ(rec.at(id).tokens.size(), max_out[id]);
      EXPECT_LT(rec.at(id).usage.cached_tokens, rec.at(id).usage.prompt_tokens);
    }
    // FCFS: admissions happen in submission order (cancelled-while-waiting ones never admit).
    EXPECT_TRUE(std::is_sorted(rec.admission_order.begin(), rec.admission_order.end()));
    const EngineLoad l = engine->Load();
    EXPECT_EQ(l.running_requests + l.waiting_requests, 0u);
    EXPECT_EQ(l.kv_pinned_tokens, 0u);
    EXPECT_EQ(l.waiting_prefill_tokens, 0u);
    EXPECT_EQ(l.kv_used_tokens,
              slots ? engine->slot_cache()->cached_tokens() : engine->cache().size_tokens());
    total_cancelled += cancelled.size();
  }
  EXPECT_GT(total_cancelled, 50u);
  EXPECT_GT(total_removed, 100u);
  EXPECT_GT(total_completed, 1000u);
  EXPECT_GT(total_hits, 300u);
}

}  // namespace
}  // namespace hearsay::engine
