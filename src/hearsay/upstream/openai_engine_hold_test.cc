// OpenAiEngine's prefix holding (OpenAiEngineOptions::prefix_hold_tokens) in virtual time: a
// request sharing a prefix with one in flight at llama.cpp is sent only once that one ends, one
// after another when several wait, at the hold's bound at the latest, and never for unrelated
// prompts, other flavors, or with the option off.
#include <gtest/gtest.h>

#include <vector>

#include "hearsay/upstream/openai_engine_test_util.h"

namespace hearsay::upstream {
namespace {

using namespace std::chrono_literals;
using engine::RequestId;
using testing::Chunk;
using testing::OpenAiEngineTest;
using testing::UsageChunk;

class PrefixHoldTest : public OpenAiEngineTest {
 protected:
  // llama.cpp, holding prompts that share 32 tokens (8 blocks of 4) or more.
  void MakeHolding(UpstreamFlavor flavor = UpstreamFlavor::kLlamaCpp, uint32_t hold_tokens = 32) {
    OpenAiEngineOptions o;
    o.flavor = flavor;
    o.prefix_hold_tokens = hold_tokens;
    o.prefix_hold_max = 3s;
    o.reconcile_interval = Duration::zero();
    o.queue_poll_interval = Duration::zero();
    Make(o);
  }
  size_t Sent() const { return transport_.Open("/v1/completions").size(); }
  // Answers the completion call `i` (in the order sent) with one token and ends it.
  void Answer(size_t i, int prompt, int cached) {
    auto call = transport_.Open("/v1/completions").at(i);
    call->Headers(200);
    call->Body(Chunk("x", cached, prompt - cached));
    call->Body(UsageChunk(prompt, 1, cached));
    call->Body("data: [DONE]\n\n");
    call->Done();
  }
};

TEST_F(PrefixHoldTest, ARequestWaitsForTheOneComputingItsPrefixThenFollowsIt) {
  MakeHolding();
  ASSERT_TRUE(engine_->Submit(Req(1, 64), &rec_).ok());
  ASSERT_TRUE(engine_->Submit(Req(2, 48), &rec_).ok());  // its first 48 tokens are request 1's
  ASSERT_TRUE(engine_->Submit(Req(3, 64, 1000), &rec_).ok());  // shares nothing
  EXPECT_EQ(Sent(), 2u);  // 1 and 3; 2 is held
  EXPECT_EQ(engine_->stats().prefix_holds, 1u);
  // The held request counts as waiting, for the part it will still compute (none here).
  EXPECT_EQ(engine_->Load().waiting_requests, 3u);
  Answer(0, 64, 0);
  ASSERT_TRUE(rec_.recs[1].complete);
  ASSERT_EQ(Sent(), 2u);  // 3, then 2 sent once 1 ended
  EXPECT_EQ(engine_->stats().prefix_holds_released, 1u);
  Answer(1, 48, 44);
  EXPECT_TRUE(rec_.recs[2].complete);
  EXPECT_EQ(engine_->stats().prefix_holds_at_bound, 0u);
}

TEST_F(PrefixHoldTest, SeveralWaitingForOnePrefixGoOneAfterAnother) {
  MakeHolding();
  for (RequestId id = 1; id <= 3; ++id) ASSERT_TRUE(engine_->Submit(Req(id, 64), &rec_).ok());
  EXPECT_EQ(Sent(), 1u);
  Answer(0, 64, 0);
  EXPECT_EQ(Sent(), 1u);  // 2 now computes nothing new, and 3 waits for it
  Answer(0, 64, 60);
  EXPECT_EQ(Sent(), 1u);
  Answer(0, 64, 60);
  for (RequestId id = 1; id <= 3; ++id) EXPECT_TRUE(rec_.recs[id].complete) << id;
  EXPECT_EQ(engine_->stats().prefix_holds, 2u);
}

TEST_F(PrefixHoldTest, AHoldEndsAtItsBoundAndACancelledOneIsNeverSent) {
  MakeHolding();
  ASSERT_TRUE(engine_->Submit(Req(1, 64), &rec_).ok());
  ASSERT_TRUE(engine_->Submit(Req(2, 64), &rec_).ok());
  ASSERT_TRUE(engine_->Submit(Req(3, 64), &rec_).ok());
  EXPECT_TRUE(engine_->Cancel(3));
  // No speed measured yet: the bound is prefix_hold_max.
  sched_.RunFor(2900ms);
  EXPECT_EQ(Sent(), 1u);
  sched_.RunFor(200ms);
  EXPECT_EQ(Sent(), 2u);
  EXPECT_EQ(engine_->stats().prefix_holds_at_bound, 1u);
  Answer(1, 64, 0);
  Answer(0, 64, 0);
  EXPECT_TRUE(rec_.recs[1].complete);
  EXPECT_TRUE(rec_.recs[2].complete);
  EXPECT_FALSE(rec_.recs[3].complete || rec_.recs[3].error);
  EXPECT_EQ(Sent(), 0u);
}

TEST_F(PrefixHoldTest, OnceTheOneAheadHasItsFirstTokenTheHoldIsWorthTheRecomputeAtMost) {
  MakeHolding();
  ASSERT_TRUE(engine_->Submit(Req(1, 64), &rec_).ok());
  Answer(0, 64, 0);  // 64 computed in 2.5 ms (Chunk's prompt_ms): about 0.04 ms a token
  ASSERT_GT(engine_->Load().prefill_ms_per_token, 0);
  ASSERT_TRUE(engine_->Submit(Req(2, 64, 500), &rec_).ok());
  ASSERT_TRUE(engine_->Submit(Req(3, 64, 500), &rec_).ok());
  EXPECT_EQ(Sent(), 1u);
  // While 2 computes the prefix, 3 waits for it, however long that takes (up to the cap).
  sched_.RunFor(1s);
  EXPECT_EQ(Sent(), 1u);
  // 2 has its first token and goes on writing: its slot stays busy.
  auto call = transport_.Open("/v1/completions").at(0);
  call->Headers(200);
  call->Body(Chunk("x", 0, 64));
  EXPECT_EQ(Sent(), 1u);
  sched_.RunFor(10ms);  // more than 64 tokens' prefill at the measured speed
  EXPECT_EQ(Sent(), 2u);
  EXPECT_EQ(engine_->stats().prefix_holds_at_bound, 1u);
}

TEST_F(PrefixHoldTest, APrefixTheEngineHeldBeforeIsNoReasonToWait) {
  MakeHolding();
  ASSERT_TRUE(engine_->Submit(Req(1, 64), &rec_).ok());
  Answer(0, 64, 0);  // the engine holds these 64 tokens now
  ASSERT_TRUE(engine_->Submit(Req(2, 80), &rec_).ok());  // reuses the 64, computes 16
  ASSERT_TRUE(engine_->Submit(Req(3, 80), &rec_).ok());  // would reuse 16 more by waiting
  EXPECT_EQ(Sent(), 2u);
  ASSERT_TRUE(engine_->Submit(Req(4, 120), &rec_).ok());  // 40 new past 2's
  ASSERT_TRUE(engine_->Submit(Req(5, 120), &rec_).ok());  // would reuse 40 by waiting for 4
  EXPECT_EQ(Sent(), 3u);
  EXPECT_EQ(engine_->stats().prefix_holds, 1u);
}

TEST_F(PrefixHoldTest, NoHoldBelowTheThresholdForOtherFlavorsOrWhenOff) {
  MakeHolding(UpstreamFlavor::kLlamaCpp, /*hold_tokens=*/64);
  ASSERT_TRUE(engine_->Submit(Req(1, 64), &rec_).ok());
  ASSERT_TRUE(engine_->Submit(Req(2, 60), &rec_).ok());  // shares 60 tokens: below 64
  EXPECT_EQ(Sent(), 2u);
  for (const auto& [flavor, tokens] : std::vector<std::pair<UpstreamFlavor, uint32_t>>{
           {UpstreamFlavor::kVllm, 32}, {UpstreamFlavor::kLlamaCpp, 0}}) {
    engine_.reset();  // its calls are cancelled: Sent() counts only the new engine's
    MakeHolding(flavor, tokens);
    ASSERT_TRUE(engine_->Submit(Req(1, 64), &rec_).ok());
    ASSERT_TRUE(engine_->Submit(Req(2, 64), &rec_).ok());
    EXPECT_EQ(Sent(), 2u);
    EXPECT_EQ(engine_->stats().prefix_holds, 0u);
  }
}

}  // namespace
}  // namespace hearsay::upstream
