#include "hearsay/engine/sim_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <vector>

#include "hearsay/engine/sim_engine_test_util.h"
#include "hearsay/simenv/virtual_scheduler.h"

namespace hearsay::engine {
namespace {

TEST_F(SimEngineTest, CreateValidatesOptions) {
  SimEngineOptions o;
  o.token_budget = 0;
  EXPECT_EQ(SimEngine::Create(sched_, o, Keyer()).status().code(), StatusCode::kInvalidArgument);
  o = {};
  o.kv_capacity_tokens = 0;
  EXPECT_FALSE(SimEngine::Create(sched_, o, Keyer()).ok());
  o = {};
  o.max_running = 0;
  EXPECT_FALSE(SimEngine::Create(sched_, o, Keyer()).ok());
  o = {};
  o.jitter = -0.1;
  EXPECT_FALSE(SimEngine::Create(sched_, o, Keyer()).ok());
  o = {};
  o.cost.a_ms_per_token = -1;
  EXPECT_FALSE(SimEngine::Create(sched_, o, Keyer()).ok());
}

TEST_F(SimEngineTest, SinglePrefillTakesOneIterationOfTheFormula) {
  Make();
  Submit(Req(1, Tokens(1, 1000)));
  sched_.RunUntilIdle();
  const auto& r = rec_.at(1);
  ASSERT_TRUE(r.complete);
  // 6 + 0.03*1000 + 1.5e-6*1000*500 = 36.75 ms, starting at t = 0.
  EXPECT_EQ(r.first_at - TimePoint{}, FromMillis(36.75));
  EXPECT_EQ(r.complete_at, r.first_at);
  EXPECT_EQ(r.admission.cached_tokens, 0u);
  EXPECT_EQ(r.admission.prompt_tokens, 1000u);
  EXPECT_EQ(r.first_token.prompt_tokens, 1000u);
  EXPECT_EQ(r.usage, (Usage{1000, 1, 0}));
  EXPECT_EQ(engine_->iterations(), 1u);
}

// Iteration times that stray from the model (a log-normal jitter of sigma 0.2: a tenth of them are
// off by more than 1.3x either way) barely move the measured speed: it is a median. (The median
// of a mean-1 log-normal is exp(-sigma^2 / 2) = 0.98.)
TEST_F(SimEngineTest, MeasuredSpeedIsRobustToOutlierIterations) {
  SimEngineOptions o;
  o.jitter = 0.2;
  o.seed = 3;
  Make(o);
  for (RequestId id = 1; id <= 64; ++id) {
    Submit(Req(id, Tokens(static_cast<uint32_t>(id), 1000)));
    sched_.RunUntilIdle();
  }
  const double truth = Cost().params().a_ms_per_token;
  EXPECT_NEAR(engine_->Load().prefill_ms_per_token, truth, 0.1 * truth);
}

TEST_F(SimEngineTest, SlowdownScalesIterationsAndTheMeasuredSpeedFollowsIt) {
  Make();
  Submit(Req(1, Tokens(1, 1000)));
  sched_.RunUntilIdle();
  const double fast = engine_->Load().prefill_ms_per_token;
  // At the model's own speed: its cost per new token, whatever the prefill's attention.
  EXPECT_NEAR(fast, Cost().params().a_ms_per_token, 1e-9);

  engine_->SetSlowdown(2);
  const TimePoint before = sched_.Now();
  Submit(Req(2, Tokens(2, 1000)));
  sched_.RunUntilIdle();
  // Twice 36.75 ms; one slow sample does not move the median of two much yet.
  EXPECT_EQ(rec_.at(2).first_at - before, FromMillis(73.5));
  for (RequestId id = 3; id < 6; ++id) {
    Submit(Req(id, Tokens(static_cast<uint32_t>(id), 1000)));
    sched_.RunUntilIdle();
  }
  // The slow samples are now the majority of the window: the median doubled.
  EXPECT_NEAR(engine_->Load().prefill_ms_per_token, 2 * fast, 1e-9);

  engine_->SetSlowdown(1);
  const TimePoint again = sched_.Now();
  Submit(Req(9, Tokens(9, 1000)));
  sched_.RunUntilIdle();
  EXPECT_EQ(rec_.at(9).first_at - again, FromMillis(36.75));
}

TEST_F(SimEngineTest, DecodeStepsFollowTheFormula) {
  Make();
  Submit(Req(1, Tokens(1, 100), 3));
  sched_.RunUntilIdle();
  const auto& r = rec_.at(1);
  ASSERT_TRUE(r.complete);
  ASSERT_EQ(r.token_times.size(), 3u);
  const CostModel m = Cost();
  IterationShape prefill;
  prefill.AddPrefill(100, 0);
  IterationShape d1;
  d1.AddDecode(101);
  IterationShape d2;
  d2.AddDecode(102);
  const Duration t1 = m.IterationTime(prefill);
  EXPECT_EQ(r.token_times[0] - TimePoint{}, t1);
  EXPECT_EQ(r.token_times[1] - r.token_times[0], m.IterationTime(d1));
  EXPECT_EQ(r.token_times[2] - r.token_times[1], m.IterationTime(d2));
  EXPECT_EQ(r.complete_at, r.token_times[2]);
  EXPECT_EQ(r.usage, (Usage{100, 3, 0}));
}

TEST_F(SimEngineTest, ScriptedOutputIsEmitted) {
  Make();
  EngineRequest q = Req(1, Tokens(1, 50), 4);
  q.scripted_output = {7, 8, 9};
  Submit(std::move(q));
  sched_.RunUntilIdle();
  const auto& t = rec_.at(1).tokens;
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0], 7u);
  EXPECT_EQ(t[1], 8u);
  EXPECT_EQ(t[2], 9u);
}

TEST_F(SimEngineTest, SharedPrefixIsCachedTokenExactAndLowersTtft) {
  Make();
  const auto prefix = Tokens(1, 500);
  Submit(Req(1, Concat(prefix, Tokens(2, 120))));
  sched_.RunUntilIdle();
  const TimePoint t1 = sched_.Now();
  // Not block aligned on purpose: 503 shared tokens.
  Submit(Req(2, Concat(Concat(prefix, Tokens(2, 3)), Tokens(3, 117))));
  sched_.RunUntilIdle();
  const auto& a = rec_.at(1);
  const auto& b = rec_.at(2);
  EXPECT_EQ(a.first_token.cached_tokens, 0u);
  EXPECT_EQ(b.first_token.cached_tokens, 503u);
  EXPECT_EQ(b.admission.cached_tokens, 503u);
  EXPECT_EQ(b.usage.cached_tokens, 503u);
  const Duration ttft_a = a.first_at - TimePoint{};
  const Duration ttft_b = b.first_at - t1;
  EXPECT_LT(ttft_b, ttft_a);
  IterationShape s;
  s.AddPrefill(117, 503);
  EXPECT_EQ(ttft_b, Cost().IterationTime(s));

  // An identical prompt hits all but its last token, which must be recomputed.
  Submit(Req(3, Concat(prefix, Tokens(2, 120))));
  sched_.RunUntilIdle();
  EXPECT_EQ(rec_.at(3).first_token.cached_tokens, 619u);
  EXPECT_EQ(engine_->CachedPrefixTokens(Concat(prefix, Tokens(2, 120))), 620u);
  // The generated token was cached behind the prompt too.
  EXPECT_EQ(engine_->CachedPrefixTokens(Concat(Concat(prefix, Tokens(2, 120)), rec_.at(3).tokens)),
            621u);
}

TEST_F(SimEngineTest, CacheNamespacesAreIsolatedAndReportedWithoutTheirBlock) {
  Make();
  const auto prompt = Tokens(1, 500);
  auto in = [](EngineRequest r, uint64_t ns) {
    r.cache_namespace = ns;
    return r;
  };
  Submit(in(Req(1, prompt), 11));
  sched_.RunUntilIdle();
  EXPECT_EQ(rec_.at(1).usage, (Usage{500, 1, 0}));
  EXPECT_EQ(engine_->CachedPrefixTokens(prompt, 11), 500u);
  // Its cache events and snapshot name the prompt's blocks as the node keys them (the prompt's
  // first block at index 0), never the namespace block that heads it in the cache.
  std::vector<prefix::BlockKey> want;
  prefix::AppendNamespacedKeys(engine_->cache().keyer(), 11, prompt, &want);
  ASSERT_EQ(want.size(), 500u / 16);
  std::vector<prefix::BlockEvent> events, snapshot;
  engine_->DrainCacheEvents(events);
  engine_->AppendCacheSnapshot(snapshot);
  for (const auto* list : {&events, &snapshot}) {
    ASSERT_EQ(list->size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ((*list)[i], (prefix::BlockEvent{prefix::BlockEvent::Kind::kAdded, want[i],
                                                static_cast<uint32_t>(i)}));
    }
  }
  // Another namespace, and the shared one, find nothing of it.
  EXPECT_EQ(engine_->CachedPrefixTokens(prompt, 12), 0u);
  EXPECT_EQ(engine_->CachedPrefixTokens(prompt), 0u);
  Submit(in(Req(2, prompt), 12));
  sched_.RunUntilIdle();
  EXPECT_EQ(rec_.at(2).first_token.cached_tokens, 0u);
  EXPECT_EQ(rec_.at(2).admission.prompt_tokens, 500u);
  Submit(Req(3, prompt));
  sched_.RunUntilIdle();
  EXPECT_EQ(rec_.at(3).usage.cached_tokens, 0u);
  // The same namespace hits all but the last token, as without namespaces.
  Submit(in(Req(4, prompt), 11));
  sched_.RunUntilIdle();
  EXPECT_EQ(rec_.at(4).usage, (Usage{500, 1, 499}));
  EXPECT_EQ(rec_.at(4).first_token.cached_tokens, 499u);
  // And its time to first token is that of a hit; the other namespaces' were those of misses.
  EXPECT_LT(rec_.at(4).first_at - rec_.at(4).admitted_at,
            rec_.at(2).first_at - rec_.at(2).admitted_at);
}

// The namespace block is held in KV to keep namespaces apart, but it is a header, not context:
// a namespaced prompt costs what the same prompt costs in the shared namespace.
TEST_F(SimEngineTest, TheNamespaceBlockCostsNoCompute) {
  Make();
  auto in = [](EngineRequest r, uint64_t ns) {
    r.cache_namespace = ns;
    return r;
  };
  Submit(in(Req(1, Tokens(1, 100)), 11));  // caches the namespace block
  sched_.RunUntilIdle();
  const TimePoint before = sched_.Now();
  Submit(in(Req(2, Tokens(2, 1000)), 11));
  sched_.RunUntilIdle();
  EXPECT_EQ(rec_.at(2).admission.cached_tokens, 0u);
  // As in SinglePrefillTakesOneIterationOfTheFormula: 6 + 0.03*1000 + 1.5e-6*1000*500 = 36.75 ms.
  EXPECT_EQ(rec_.at(2).first_at - before, FromMillis(36.75));
}

TEST_F(SimEngineTest, SamePrefixInOneIterationDoesNotHitUncomputedTokens) {
  Make();
  const auto prefix = Tokens(1, 400);
  Submit(Req(1, Concat(prefix, Tokens(2, 10))));
  Submit(Req(2, Concat(prefix, Tokens(3, 10))));
  sched_.RunUntilIdle();
  // Both ran in the first iteration: the second could not reuse what was not computed yet.
  EXPECT_EQ(rec_.at(1).first_at, rec_.at(2).first_at);
  EXPECT_EQ(rec_.at(2).usage.cached_tokens, 0u);
  EXPECT_EQ(engine_->CachedPrefixTokens(prefix), 400u);
  // The KV accounting reflects the shared prefix once.
  EXPECT_EQ(engine_->Load().kv_used_tokens, 400u + 2 * 11);
}

TEST_F(SimEngineTest, ChunkedPrefillRespectsTheBudget) {
  SimEngineOptions o;
  o.token_budget = 1000;
  Make(o);
  Submit(Req(1, Tokens(1, 2500), 2));
  std::vector<IterationShape> shapes;
  while (sched_.pending() > 0) {
    if (!engine_->current_iteration().empty()) shapes.push_back(engine_->current_iteration());
    sched_.Step();
  }
  // Chunks of 1000, 1000, 500, then one decode step.
  ASSERT_EQ(shapes.size(), 4u);
  EXPECT_EQ(shapes[0].prefill_tokens, 1000u);
  EXPECT_EQ(shapes[1].prefill_tokens, 1000u);
  EXPECT_EQ(shapes[2].prefill_tokens, 500u);
  EXPECT_EQ(shapes[3].prefill_tokens, 0u);
  EXPECT_EQ(shapes[3].decode_batch, 1u);
  // TTFT is three iterations, each pricing its chunk after the earlier ones.
  const CostModel m = Cost();
  Duration expect{0};
  for (uint64_t done = 0; done < 2500; done += 1000) {
    IterationShape s;
    s.AddPrefill(std::min<uint64_t>(1000, 2500 - done), done);
    EXPECT_DOUBLE_EQ(s.prefill_attention, shapes[done / 1000].prefill_attention);
    expect += m.IterationTime(s);
  }
  EXPECT_EQ(rec_.at(1).first_at - TimePoint{}, expect);
  EXPECT_EQ(rec_.at(1).usage, (Usage{2500, 2, 0}));
}

TEST_F(SimEngineTest, EveryIterationStaysWithinBudgetAndDecodesFirst) {
  SimEngineOptions o;
  o.token_budget = 512;
  Make(o);
  for (RequestId id = 0; id < 20; ++id) {
    Submit(Req(id, Tokens(static_cast<uint32_t>(id) + 1, 100 + 37 * id), 1 + id % 5));
  }
  uint64_t iterations = 0;
  while (sched_.pending() > 0) {
    const IterationShape& s = engine_->current_iteration();
    if (!s.empty()) {
      ++iterations;
      EXPECT_LE(s.prefill_tokens + s.decode_batch, 512u);
      EXPECT_GT(s.prefill_tokens + s.decode_batch, 0u);
    }
    sched_.Step();
  }
  for (RequestId id = 0; id < 20; ++id) {
    ASSERT_TRUE(rec_.at(id).complete) << id;
    EXPECT_EQ(rec_.at(id).usage.completion_tokens, 1 + id % 5);
  }
  EXPECT_GT(iterations, 5u);
}

TEST_F(SimEngineTest, AdmitsFirstComeFirstServed) {
  SimEngineOptions o;
  o.token_budget = 300;
  Make(o);
  for (RequestId id = 0; id < 10; ++id)
    Submit(Req(100 - id, Tokens(static_cast<uint32_t>(id) + 1, 200)));
  sched_.RunUntilIdle();
  std::vector<RequestId> expect;
  for (RequestId id = 0; id < 10; ++id) expect.push_back(100 - id);
  EXPECT_EQ(rec_.admission_order, expect);
  EXPECT_EQ(rec_.first_token_order, expect);
  // With a 300-token budget the 200-token prompts are split, so admission times spread out.
  EXPECT_LT(rec_.at(100).admitted_at, rec_.at(91).admitted_at);
}

TEST_F(SimEngineTest, HeadOfLineBlocksOnKvNotOnOrder) {
  SimEngineOptions o;
  o.kv_capacity_tokens = 1000;
  Make(o);
  // 1 holds 600 tokens of KV for a long while; 2 needs 600 and must wait; 3 is small and would
  // fit, but FCFS keeps it behind 2.
  Submit(Req(1, Tokens(1, 500), 100));
  Submit(Req(2, Tokens(2, 500), 100));
  Submit(Req(3, Tokens(3, 50), 1));
  sched_.RunUntilIdle();
  EXPECT_EQ(rec_.admission_order, (std::vector<RequestId>{1, 2, 3}));
  EXPECT_GE(rec_.at(2).admitted_at, rec_.at(1).complete_at);
  EXPECT_GE(rec_.at(3).admitted_at, rec_.at(2).admitted_at);
  EXPECT_TRUE(rec_.at(3).complete);
}

TEST_F(SimEngineTest, LruEvictionDropsOldestUnpinnedPrefixAndEmitsRemovals) {
  SimEngineOptions o;
  o.kv_capacity_tokens = 1000;
  Make(o);
  const auto a = Tokens(1, 320);
  const auto b = Tokens(2, 320);
  const auto c = Tokens(3, 320);
  const auto d = Tokens(4, 320);
  Submit(Req(1, a));
  sched_.RunUntilIdle();
  Submit(Req(2, b));
  sched_.RunUntilIdle();
  Submit(Req(3, c));
  sched_.RunUntilIdle();
  std::vector<prefix::BlockEvent> events;
  engine_->DrainCacheEvents(events);
  size_t added = 0;
  for (const auto& e : events) {
    EXPECT_EQ(e.kind, prefix::BlockEvent::Kind::kAdded);
    ++added;
  }
  EXPECT_EQ(added, 3 * (321 / 16));  // full blocks of each prompt + its output token
  events.clear();
  engine_->DrainCacheEvents(events);
  EXPECT_TRUE(events.empty());
  // Touch a: it becomes the most recent, so b is now the oldest.
  Submit(Req(4, a));
  sched_.RunUntilIdle();
  EXPECT_EQ(rec_.at(4).usage.cached_tokens, 319u);
  // d needs 321 tokens: only b's are evicted.
  Submit(Req(5, d));
  sched_.RunUntilIdle();
  EXPECT_EQ(rec_.at(5).usage.cached_tokens, 0u);
  EXPECT_EQ(engine_->CachedPrefixTokens(a), 320u);
  EXPECT_EQ(engine_->CachedPrefixTokens(c), 320u);
  EXPECT_EQ(engine_->CachedPrefixTokens(d), 320u);
  EXPECT_LT(engine_->CachedPrefixTokens(b), 320u);
  engine_->DrainCacheEvents(events);
  size_t removed = 0;
  for (const auto& e : events) removed += e.kind == prefix::BlockEvent::Kind::kRemoved;
  EXPECT_GT(removed, 0u);
  EXPECT_LE(engine_->Load().kv_used_tokens, 1000u);
}

TEST_F(SimEngineTest, PinnedPrefixesSurviveEviction) {
  SimEngineOptions o;
  o.kv_capacity_tokens = 1000;
  Make(o);
  const auto a = Tokens(1, 300);
  // 1 runs long with a pinned 300-token prompt (and 200 reserved outputs).
  Submit(Req(1, a, 200));
  sched_.RunFor(FromMillis(100));
  ASSERT_TRUE(rec_.at(1).first);
  EXPECT_EQ(engine_->Load().kv_pinned_tokens, 500u);
  // 2 fills the rest and finishes, leaving its prefix evictable.
  Submit(Req(2, Tokens(2, 400)));
  sched_.RunFor(FromMillis(100));
  ASSERT_TRUE(rec_.at(2).complete);
  // 3 needs 450: only 2's unpinned prefix can go; 1's pinned prompt stays.
  Submit(Req(3, Tokens(3, 449)));
  sched_.RunFor(FromMillis(100));
  ASSERT_TRUE(rec_.at(3).complete);
  EXPECT_FALSE(rec_.at(1).complete);
  EXPECT_EQ(engine_->CachedPrefixTokens(a), 300u);
  EXPECT_LT(engine_->CachedPrefixTokens(Tokens(2, 400)), 400u);
  // 4 needs 600 and cannot fit beside 1's pinned 500 until 1 completes.
  Submit(Req(4, Tokens(4, 599)));
  sched_.RunUntilIdle();
  ASSERT_TRUE(rec_.at(4).complete);
  EXPECT_GE(rec_.at(4).admitted_at, rec_.at(1).complete_at);
  EXPECT_EQ(engine_->Load().kv_pinned_tokens, 0u);
}

TEST_F(SimEngineTest, RejectsBadRequestsAndKeepsRunning) {
  SimEngineOptions o;
  o.kv_capacity_tokens = 1000;
  o.max_context_tokens = 800;
  Make(o);
  EXPECT_EQ(engine_->Submit(Req(1, {}), &rec_).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine_->Submit(Req(2, Tokens(1, 10), 0), &rec_).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine_->Submit(Req(3, Tokens(1, 800), 1), &rec_).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine_->Submit(Req(4, Tokens(1, 10)), nullptr).code(), StatusCode::kInvalidArgument);
  Make([] {
    SimEngineOptions o2;
    o2.kv_capacity_tokens = 1000;
    return o2;
  }());
  const Status big = engine_->Submit(Req(5, Tokens(1, 1000), 1), &rec_);
  EXPECT_EQ(big.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(big.message().find("1000"), std::string::npos) << big.ToString();
  Submit(Req(6, Tokens(1, 999), 1));
  EXPECT_EQ(engine_->Submit(Req(6, Tokens(2, 10)), &rec_).code(), StatusCode::kAlreadyExists);
  sched_.RunUntilIdle();
  EXPECT_TRUE(rec_.at(6).complete);
  EXPECT_FALSE(rec_.seen(5));
  // Once finished, the id may be used again.
  Recorder again(sched_);
  ASSERT_TRUE(engine_->Submit(Req(6, Tokens(2, 10)), &again).ok());
  sched_.RunUntilIdle();
  EXPECT_TRUE(again.at(6).complete);
  EXPECT_EQ(rec_.at(6).callbacks_after_terminal, 0);
}

TEST_F(SimEngineTest, CancelWaitingAndRunningRequests) {
  SimEngineOptions o;
  o.token_budget = 100;
  Make(o);
  Submit(Req(1, Tokens(1, 250), 5));
  Submit(Req(2, Tokens(2, 250), 5));
  Submit(Req(3, Tokens(3, 50), 5));
  sched_.Step();  // the first iteration starts: 1 is admitted, 2 and 3 wait
  EXPECT_EQ(engine_->Load().running_requests, 1u);
  EXPECT_EQ(engine_->Load().waiting_requests, 2u);
  EXPECT_TRUE(engine_->Cancel(2));
  EXPECT_FALSE(engine_->Cancel(2));
  EXPECT_EQ(engine_->Load().waiting_requests, 1u);
  EXPECT_TRUE(engine_->Cancel(1));  // running, mid-prefill
  EXPECT_EQ(engine_->Load().running_requests, 0u);
  EXPECT_FALSE(engine_->Cancel(42));
  sched_.RunUntilIdle();
  EXPECT_TRUE(rec_.at(1).admitted);
  EXPECT_FALSE(rec_.at(1).first);
  EXPECT_FALSE(rec_.seen(2));
  EXPECT_TRUE(rec_.at(3).complete);
  const EngineLoad load = engine_->Load();
  EXPECT_EQ(load.kv_pinned_tokens, 0u);
  EXPECT_EQ(load.running_requests + load.waiting_requests, 0u);
  EXPECT_EQ(load.waiting_prefill_tokens, 0u);
  // The cancelled request's computed chunk stays cached; nothing of it is pinned.
  EXPECT_EQ(load.kv_used_tokens, engine_->cache().size_tokens());
}

TEST_F(SimEngineTest, CancelFromInsideACallback) {
  Make();
  rec_.on_first = [&](RequestId id) {
    if (id == 1) {
      EXPECT_TRUE(engine_->Cancel(1));
    }
    if (id == 2) {
      EXPECT_TRUE(engine_->Cancel(3));
    }
  };
  Submit(Req(1, Tokens(1, 100), 3));
  Submit(Req(2, Tokens(2, 100), 3));
  Submit(Req(3, Tokens(3, 100), 3));
  sched_.RunUntilIdle();
  EXPECT_TRUE(rec_.at(1).first);
  EXPECT_FALSE(rec_.at(1).complete);
  EXPECT_EQ(rec_.at(1).tokens.size(), 1u);
  EXPECT_TRUE(rec_.at(2).complete);
  EXPECT_FALSE(rec_.at(3).first);  // cancelled before its own first token was delivered
  EXPECT_EQ(engine_->Load().kv_pinned_tokens, 0u);
}

TEST_F(SimEngineTest, SubmitFromInsideACallback) {
  Make();
  rec_.on_first = [&](RequestId id) {
    if (id < 5) {
      ASSERT_TRUE(engine_->Submit(Req(id + 1, Tokens(1, 100 + id)), &rec_).ok());
    }
  };
  Submit(Req(1, Tokens(1, 100)));
  sched_.RunUntilIdle();
  for (RequestId id = 1; id <= 5; ++id) EXPECT_TRUE(rec_.at(id).complete) << id;
  // Each resubmission extends the previous prompt by one token: all but the last is cached.
  EXPECT_EQ(rec_.at(5).usage.cached_tokens, 103u);
}

TEST_F(SimEngineTest, LoadReport) {
  SimEngineOptions o;
  o.token_budget = 750;
  o.kv_capacity_tokens = 100000;
  Make(o);
  EngineLoad idle = engine_->Load();
  EXPECT_EQ(idle.kv_capacity_tokens, 100000u);
  EXPECT_EQ(idle.kv_used_tokens, 0u);
  EXPECT_EQ(idle.estimated_queue_wait, Duration::zero());
  // Before any prefill: the configured speed, the starting point peers price it with.
  EXPECT_EQ(idle.prefill_ms_per_token, Cost().params().a_ms_per_token);

  // Warm a 500-token prefix so later requests' estimates see the cache.
  const auto prefix = Tokens(1, 500);
  Submit(Req(1, Concat(prefix, Tokens(2, 100))));
  sched_.RunUntilIdle();
  IterationShape first;
  first.AddPrefill(600, 0);  // within one iteration: 600 < 750
  // The iteration's time over the model's, times the model's cost per new token: at the model's
  // own speed, that cost itself (neither the t0 overhead nor the attention is speed).
  EXPECT_NEAR(engine_->Load().prefill_ms_per_token, Cost().params().a_ms_per_token, 1e-9);

  for (RequestId id = 2; id < 12; ++id) {
    Submit(Req(id, Concat(prefix, Tokens(static_cast<uint32_t>(id) + 10, 100)), 10));
  }
  EngineLoad queued = engine_->Load();
  EXPECT_EQ(queued.waiting_requests, 10u);
  EXPECT_EQ(queued.running_requests, 0u);
  EXPECT_EQ(queued.waiting_prefill_tokens, 10u * 100);  // net of the cached prefix
  EXPECT_GT(queued.estimated_queue_wait, Duration::zero());

  sched_.Step();  // first iteration: 7.5 suffixes fit the budget; 2 requests keep waiting
  EngineLoad busy = engine_->Load();
  EXPECT_EQ(busy.running_requests + busy.waiting_requests, 10u);
  EXPECT_GT(busy.running_requests, 0u);
  EXPECT_EQ(busy.kv_pinned_tokens, 500u + 100 * busy.running_requests + 10 * busy.running_requests);
  EXPECT_LE(busy.kv_used_tokens, busy.kv_capacity_tokens);
  EXPECT_GT(busy.kv_used_tokens, 600u);
  // What remains to prefill is what was not scheduled in the running iteration.
  EXPECT_EQ(busy.waiting_prefill_tokens, 1000u - engine_->current_iteration().prefill_tokens);
  EXPECT_EQ(busy.waiting_requests, 2u);
  // The wait a new request would see covers at least the rest of the running iteration.
  EXPECT_GT(ToMillis(busy.estimated_queue_wait),
            ToMillis(Cost().IterationTime(engine_->current_iteration())) - 1e-6);
  sched_.RunUntilIdle();
  EngineLoad done = engine_->Load();
  EXPECT_EQ(done.running_requests + done.waiting_requests, 0u);
  // Suffixes after a 500-token cached prefix take longer per token (attention): still the same
  // speed, the model's.
  EXPECT_NEAR(done.prefill_ms_per_token, Cost().params().a_ms_per_token, 1e-9);
  EXPECT_EQ(done.kv_pinned_tokens, 0u);
  EXPECT_EQ(done.waiting_prefill_tokens, 0u);
  EXPECT_EQ(done.estimated_queue_wait, Duration::zero());
}

TEST_F(SimEngineTest, ASlotEngineKeepsWholeSequencesAsLlamaServerDoes) {
  SimEngineOptions o;
  o.cache_layout = CacheLayout::kSlots;
  o.max_running = 1;
  o.kv_capacity_tokens = 2000;
  Make(o);
  const auto prefix = Tokens(1, 500);
  const auto q1 = Concat(prefix, Tokens(2, 40));
  const auto q2 = Concat(prefix, Tokens(3, 40));
  Submit(Req(1, q1));
  sched_.RunUntilIdle();
  Submit(Req(2, q2));
  sched_.RunUntilIdle();
  EXPECT_EQ(rec_.at(2).usage.cached_tokens, 500u);
  // q2 took q1's slot: q1's question is gone (a paged cache would hit all but its last token).
  Submit(Req(3, q1));
  sched_.RunUntilIdle();
  EXPECT_EQ(rec_.at(3).usage.cached_tokens, 500u);
  // An unrelated prompt sends the slot's sequence to the host cache, whose tokens are the load's.
  Submit(Req(4, Tokens(4, 300)));
  sched_.RunUntilIdle();
  EXPECT_EQ(engine_->Load().kv_used_tokens, 541u);
  EXPECT_EQ(engine_->CachedPrefixTokens(q1), 540u);
  ASSERT_NE(engine_->slot_cache(), nullptr);
  EXPECT_TRUE(engine_->slot_cache()->CheckInvariants().ok());
  std::vector<prefix::BlockEvent> events;
  engine_->DrainCacheEvents(events);
  std::vector<prefix::BlockEvent> snapshot;
  engine_->AppendCacheSnapshot(snapshot);
  int64_t held = 0;
  for (const auto& e : events) held += e.kind == prefix::BlockEvent::Kind::kAdded ? 1 : -1;
  EXPECT_EQ(held, static_cast<int64_t>(snapshot.size()));
}

}  // namespace
}  // namespace hearsay::engine
