// The engine's measured prefill speed, taken against the node's cost model
// (OpenAiEngineOptions::prefill_model): a prefill after a long cached prefix attends to all of it
// and takes longer per computed token, which is the model's shape, not a slower engine.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "hearsay/upstream/openai_engine_test_util.h"

namespace hearsay::upstream::testing {
namespace {

// A model whose attention term dominates, as on a CPU llama.cpp: a prefill of 4 tokens after 12
// cached ones costs 0.24 ms per token, one of 16 from scratch 0.18.
engine::CostParams AttentionHeavy() {
  engine::CostParams p;
  p.t0_ms = 0;
  p.a_ms_per_token = 0.1;
  p.b_ms_per_token2 = 0.01;
  return p;
}

class OpenAiEngineSpeedTest : public OpenAiEngineTest {
 protected:
  // Answers request `id` (16 prompt tokens) in one piece: `computed` of them computed in
  // `prompt_ms`, the rest cached.
  void Answer(RequestId id, int computed, double prompt_ms) {
    Submit(id);
    Respond(LastCompletion(), id, computed, prompt_ms);
  }
  // Requests `id` and `id` + 1 (16 tokens, none cached) sent before either answers, each
  // reporting `prompt_ms`.
  void AnswerTwoAtOnce(RequestId id, double prompt_ms) {
    Submit(id);
    auto first = LastCompletion();
    Submit(id + 1);
    auto second = LastCompletion();
    Respond(first, id, 16, prompt_ms);
    Respond(second, id + 1, 16, prompt_ms);
  }
  void Submit(RequestId id) {
    engine::EngineRequest r = Req(id, 16);
    r.stream = false;
    ASSERT_TRUE(engine_->Submit(std::move(r), &rec_).ok());
  }
  void Respond(const std::shared_ptr<FakeTransport::Call>& call, RequestId id, int computed,
               double prompt_ms) {
    ASSERT_NE(call, nullptr);
    const nlohmann::json answer = {
        {"object", "text_completion"},
        {"choices", {{{"index", 0}, {"text", "Hi"}, {"finish_reason", "length"}}}},
        {"usage",
         {{"prompt_tokens", 16},
          {"completion_tokens", 1},
          {"prompt_tokens_details", {{"cached_tokens", 16 - computed}}}}},
        {"timings",
         {{"cache_n", 16 - computed}, {"prompt_n", computed}, {"prompt_ms", prompt_ms}}}};
    call->Respond(200, answer.dump());
    ASSERT_TRUE(rec_.recs[id].complete);
  }
};

// Two prefills at exactly the model's speed, one after a cached prefix: both say the model's cost
// per new token, so a member serving cache hits is not priced as a slower engine.
TEST_F(OpenAiEngineSpeedTest, APrefillAfterACachedPrefixIsTakenAgainstTheModel) {
  OpenAiEngineOptions o;
  o.prefill_model = AttentionHeavy();
  Make(o);
  Answer(1, 16, 0.1 * 16 + 0.01 * 16 * 8);      // 2.88 ms: 0.18 per token
  Answer(2, 4, 0.1 * 4 + 0.01 * 4 * (12 + 2));  // 0.96 ms: 0.24 per token
  EXPECT_NEAR(engine_->Load().prefill_ms_per_token, 0.1, 1e-9);

  // Twice as slow on both: twice the model's cost per token.
  Answer(3, 16, 2 * 2.88);
  Answer(4, 4, 2 * 0.96);
  EXPECT_NEAR(engine_->Load().prefill_ms_per_token, 0.15, 1e-9);  // the median of 0.1 x {1,1,2,2}
}

// llama.cpp runs requests in parallel slots, and each one's prompt_ms counts the batches it shared:
// two prefills at once each report about twice their time alone. Such a sample is no measure of
// the engine's speed (a member that is sent many requests at once would look slow and be priced
// away from the prefixes it holds), unless the engine is never measured alone.
TEST_F(OpenAiEngineSpeedTest, APrefillThatSharedTheEngineIsNoSpeedSample) {
  Make();
  Answer(1, 16, 1.6);  // alone: 0.1 ms a token
  for (RequestId id = 2; id < 6; id += 2) AnswerTwoAtOnce(id, 3.2);
  EXPECT_NEAR(engine_->Load().prefill_ms_per_token, 0.1, 1e-9);
  // A request sent after the other's answer ran alone.
  Answer(6, 16, 1.6);
  EXPECT_NEAR(engine_->Load().prefill_ms_per_token, 0.1, 1e-9);
  // Never alone for longer than the estimate's window: the shared speed is the speed there is.
  for (RequestId id = 10; id < 10 + 2 * 40; id += 2) AnswerTwoAtOnce(id, 3.2);
  EXPECT_NEAR(engine_->Load().prefill_ms_per_token, 0.2, 1e-9);
}

// A fresh engine has answered nothing yet, but its first prefills are still work ahead of the next
// request: until it is measured it is priced at the model's speed, as peers price it.
TEST_F(OpenAiEngineSpeedTest, BeforeItsFirstAnswerAnEngineIsPricedAtItsModelsSpeed) {
  OpenAiEngineOptions o;
  o.prefill_model = AttentionHeavy();
  o.prefill_model->b_ms_per_token2 = 0;  // 0.1 ms a token
  Make(o);
  ASSERT_TRUE(engine_->Submit(Req(1, 160), &rec_).ok());
  EXPECT_EQ(engine_->Load().estimated_queue_wait, 16ms);
  EXPECT_EQ(engine_->Load().prefill_ms_per_token, 0);  // what it gossips: not measured yet
}

// Without a model, a sample is the time per computed token.
TEST_F(OpenAiEngineSpeedTest, WithoutAModelASampleIsTimePerComputedToken) {
  Make();
  Answer(1, 16, 2.88);
  Answer(2, 4, 0.96);
  EXPECT_NEAR(engine_->Load().prefill_ms_per_token, (0.18 + 0.24) / 2, 1e-9);
}

}  // namespace
}  // namespace hearsay::upstream::testing
