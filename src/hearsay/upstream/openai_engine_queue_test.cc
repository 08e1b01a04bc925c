// OpenAiEngine tests of the engine's own queue and cache as it publishes them: /slots
// reconciliation, llama.cpp's /metrics and busy slots, vLLM's queue gauges and stale samples.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hearsay/upstream/engine_metrics.h"
#include "hearsay/upstream/openai_engine.h"
#include "hearsay/upstream/openai_engine_test_util.h"

namespace hearsay::upstream::openai_engine_queue_test {
namespace {

using namespace std::chrono_literals;
using engine::RequestId;
using testing::Chunk;
using testing::OpenAiEngineTest;
using testing::UsageChunk;

TEST_F(OpenAiEngineTest, SlotsReconciliationPrunesWhatNoSlotHolds) {
  OpenAiEngineOptions o;
  o.flavor = UpstreamFlavor::kLlamaCpp;
  o.slots_authoritative = true;
  o.prediction_lease = 1s;
  o.reconcile_interval = 2s;
  o.health_interval = 1s;
  Make(o);
  auto serve = [&](RequestId id, engine::TokenId base, const char* prompt) {
    auto r = Req(id, 16, base);
    r.api_body = std::string(R"({"prompt":")") + prompt + R"(","max_tokens":2})";
    ASSERT_TRUE(engine_->Submit(r, &rec_).ok());
    auto c = LastCompletion();
    c->Headers(200);
    c->Body(Chunk("z", 0, 16) + "data: [DONE]\n\n");
    c->Done();
  };
  serve(1, 100, "alpha prompt");
  serve(2, 200, "beta prompt");
  sched_.RunFor(2s);
  AnswerProbes(200);
  auto slots = transport_.Open("/slots");
  ASSERT_EQ(slots.size(), 1u);
  slots[0]->Respond(200,
                    R"([{"id":0,"is_processing":false,"prompt":"<s> alpha prompt","generated":"z"},
                             {"id":1,"is_processing":false}])");
  EXPECT_EQ(engine_->stats().reconciles, 1u);
  EXPECT_EQ(engine_->stats().reconcile_confirmed, 1u);
  EXPECT_EQ(engine_->stats().reconcile_removed, 1u);
  EXPECT_EQ(engine_->CachedPrefixTokens(Req(0, 16, 100).prompt), 16u);
  EXPECT_EQ(engine_->CachedPrefixTokens(Req(0, 16, 200).prompt), 0u);
}

TEST_F(OpenAiEngineTest, EngineQueueAddsOtherClientsRequestsToTheLoad) {
  OpenAiEngineOptions o;
  o.flavor = UpstreamFlavor::kVllm;
  o.queue_poll_interval = 1s;
  o.health_interval = 1s;
  Make(o);
  // The node's own request, still without a first token, with 16 uncached tokens.
  ASSERT_TRUE(engine_->Submit(Req(1, 16), &rec_).ok());
  EXPECT_EQ(engine_->Load().waiting_requests, 1u);
  // The engine reports 2 running and 3 waiting while the node has 1 in flight: 4 are another
  // client's, 3 of them counted as waiting.
  sched_.RunFor(1s);
  AnswerProbes(200);
  auto polls = transport_.Open("/metrics");
  ASSERT_EQ(polls.size(), 1u);
  EXPECT_EQ(polls[0]->request.method, "GET");
  polls[0]->Respond(200,
                    "vllm:num_requests_running{model_name=\"m\"} 2\n"
                    "vllm:num_requests_waiting{model_name=\"m\"} 3\n");
  EXPECT_EQ(engine_->stats().queue_polls, 1u);
  ASSERT_TRUE(engine_->engine_queue().has_value());
  EXPECT_EQ(engine_->engine_queue()->foreign(), 4u);
  engine::EngineLoad l = engine_->Load();
  EXPECT_EQ(l.waiting_requests, 4u);
  EXPECT_EQ(l.running_requests, 1u);
  EXPECT_EQ(l.waiting_prefill_tokens, 4u * 16u);  // each priced as the node's own median
  // A page without the gauges drops the sample: back to the node's own count.
  sched_.RunFor(1s);
  AnswerProbes(200);
  polls = transport_.Open("/metrics");
  ASSERT_EQ(polls.size(), 1u);
  polls[0]->Respond(404, "not found");
  EXPECT_EQ(engine_->stats().queue_poll_failures, 1u);
  EXPECT_FALSE(engine_->engine_queue().has_value());
  EXPECT_EQ(engine_->Load().waiting_requests, 1u);
}

TEST_F(OpenAiEngineTest, StaleOrUnreadableQueueSamplesAreNotUsed) {
  OpenAiEngineOptions o;
  o.flavor = UpstreamFlavor::kLlamaCpp;
  o.queue_poll_interval = 1s;
  o.health_interval = 1s;
  Make(o);
  auto polls = transport_.Open("/metrics");
  ASSERT_EQ(polls.size(), 1u);
  polls[0]->Respond(200, "llamacpp:requests_processing 1\nllamacpp:requests_deferred 6\n");
  EXPECT_EQ(engine_->Load().waiting_requests, 6u);
  // Unanswered polls: after three periods the sample is too old to count.
  sched_.RunFor(3500ms);
  AnswerProbes(200);
  EXPECT_FALSE(engine_->engine_queue().has_value());
  EXPECT_EQ(engine_->Load().waiting_requests, 0u);
  // A page over the limit is refused, not kept.
  for (auto& c : transport_.Open("/metrics")) {
    c->Headers(200);
    c->Body(std::string(kMaxMetricsBytes, '#'));
    c->Body("llamacpp:requests_processing 1\nllamacpp:requests_deferred 6\n");
    c->Done();
  }
  EXPECT_FALSE(engine_->engine_queue().has_value());
  EXPECT_GE(engine_->stats().queue_poll_failures, 1u);
}

// llama-server's /slots, as it reads without LLAMA_SERVER_SLOTS_DEBUG: `busy` of `slots` slots
// processing, each busy one with `remain` output tokens still to make.
std::string SlotsPage(int slots, int busy, int remain) {
  nlohmann::json page = nlohmann::json::array();
  for (int i = 0; i < slots; ++i) {
    page.push_back({{"id", i},
                    {"n_ctx", 2048},
                    {"is_processing", i < busy},
                    {"next_token", {{{"n_remain", i < busy ? remain + i : 0}}}}});
  }
  return page.dump();
}

TEST_F(OpenAiEngineTest, LlamaCppWithoutMetricsCountsOtherClientsFromItsBusySlots) {
  OpenAiEngineOptions o;
  o.flavor = UpstreamFlavor::kLlamaCpp;
  o.queue_poll_interval = 1s;
  o.reconcile_interval = 10s;
  o.health_interval = 1s;
  Make(o);
  // llama-server without --metrics: /metrics answers 501; /slots is read on the same period.
  for (auto& c : transport_.Open("/metrics")) c->Respond(501, R"({"error":"not supported"})");
  auto slots = transport_.Open("/slots");
  ASSERT_EQ(slots.size(), 1u);
  slots[0]->Respond(200, SlotsPage(4, 3, 40));
  EXPECT_EQ(engine_->stats().slots_polls, 1u);
  EXPECT_EQ(engine_->stats().reconciles, 1u);  // the first read was also due to reconcile
  ASSERT_TRUE(engine_->engine_queue().has_value());
  EXPECT_EQ(engine_->engine_queue()->slots, 4u);
  EXPECT_EQ(engine_->engine_queue()->foreign(), 3u);
  engine::EngineLoad l = engine_->Load();
  EXPECT_EQ(l.running_requests, 3u);  // other clients' requests hold 3 slots
  EXPECT_EQ(l.waiting_requests, 0u);
  EXPECT_EQ(l.estimated_queue_wait, Duration::zero());  // a slot is free
  // The next period's read, not due to reconcile: every slot busy.
  sched_.RunFor(1s);
  AnswerProbes(200);
  for (auto& c : transport_.Open("/metrics")) c->Respond(501, R"({"error":"not supported"})");
  slots = transport_.Open("/slots");
  ASSERT_EQ(slots.size(), 1u);
  slots[0]->Respond(200, SlotsPage(4, 4, 40));
  EXPECT_EQ(engine_->stats().slots_polls, 2u);
  EXPECT_EQ(engine_->stats().reconciles, 1u);
  EXPECT_EQ(engine_->Load().running_requests, 4u);
  // Unanswered reads: the sample goes stale after three periods.
  sched_.RunFor(3500ms);
  AnswerProbes(200);
  EXPECT_FALSE(engine_->engine_queue().has_value());
  EXPECT_EQ(engine_->Load().running_requests, 0u);
}

TEST_F(OpenAiEngineTest, EverySlotBusyAddsTheSoonestSlotsRemainingDecodeToTheQueueWait) {
  OpenAiEngineOptions o;
  o.flavor = UpstreamFlavor::kLlamaCpp;
  o.queue_poll_interval = 1s;
  o.reconcile_interval = 0s;
  o.health_interval = 1s;
  o.price_slot_wait = true;
  Make(o);
  // Learn 25 ms per output token from one answer.
  ASSERT_TRUE(engine_->Submit(Req(1, 16), &rec_).ok());
  auto call = LastCompletion();
  call->Headers(200);
  call->Body(Chunk("a"));
  sched_.RunFor(100ms);
  call->Body(Chunk("bcde"));
  call->Body(UsageChunk(16, 5, 0));
  call->Body("data: [DONE]\n\n");
  call->Done();
  ASSERT_DOUBLE_EQ(engine_->decode_ms_per_token(), 25.0);
  sched_.RunFor(900ms);
  AnswerProbes(200);
  // /metrics: 2 running, 1 deferred; /slots: both slots busy, the soonest with 8 tokens left.
  auto metrics = transport_.Open("/metrics");
  ASSERT_FALSE(metrics.empty());
  metrics.back()->Respond(200, "llamacpp:requests_processing 2\nllamacpp:requests_deferred 1\n");
  auto slots = transport_.Open("/slots");
  ASSERT_EQ(slots.size(), 1u);
  slots[0]->Respond(200, SlotsPage(2, 2, 8));
  ASSERT_TRUE(engine_->engine_queue().has_value());
  EXPECT_EQ(engine_->engine_queue()->running, 2u);  // /metrics' counts, /slots' slots
  EXPECT_EQ(engine_->engine_queue()->waiting, 1u);
  EXPECT_EQ(engine_->engine_queue()->busy_slots, 2u);
  engine::EngineLoad l = engine_->Load();
  EXPECT_EQ(l.running_requests, 2u);
  EXPECT_EQ(l.waiting_requests, 1u);
  // No prefill speed measured yet: the whole wait is the slot's 8 tokens x 25 ms.
  EXPECT_EQ(l.estimated_queue_wait, 200ms);
  // 120 ms later, the slot is that much closer to free.
  sched_.RunFor(120ms);
  EXPECT_EQ(engine_->Load().estimated_queue_wait, 80ms);
}

}  // namespace
}  // namespace hearsay::upstream::openai_engine_queue_test
