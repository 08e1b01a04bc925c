#include "hearsay/route/dynamo_kv_policy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "hearsay/route/route_test_util.h"

namespace hearsay::route {
namespace {

using testing::At;
using testing::MakeChain;
using testing::MakeRequest;
using testing::PeerCandidate;

class DynamoKvTest : public ::testing::Test {
 protected:
  RouteRequest Request(const std::vector<prefix::BlockKey>& chain, uint64_t id, double at_ms = 0) {
    RouteRequest r = MakeRequest(chain, id, At(at_ms));
    r.entry_slot = kNoSlot;
    return r;
  }
  // Worker i holds cached[i] tokens of the prompt, as the KV-event index says.
  std::vector<Candidate> Workers(std::vector<uint32_t> cached) {
    std::vector<Candidate> c;
    for (size_t i = 0; i < cached.size(); ++i) {
      c.push_back(PeerCandidate(static_cast<Slot>(i), 1.0, cached[i]));
    }
    return c;
  }
  std::vector<double> Logits() const {
    std::vector<double> out;
    for (const Price& p : policy_->LastPrices()) out.push_back(p.cost_ms);
    return out;
  }
  PeerParams params_;
  std::unique_ptr<Policy> policy_ = NewDynamoKvPolicy(params_, false);
  Rng rng_{3};
  // 4 blocks of 16 tokens.
  std::vector<prefix::BlockKey> a_ = MakeChain(1, 0, 4, 4);
  std::vector<prefix::BlockKey> b_ = MakeChain(2, 0, 4, 4);
};

TEST_F(DynamoKvTest, LogitIsOverlapWeightTimesPrefillBlocksPlusDecodeBlocks) {
  EXPECT_EQ(policy_->name(), "dynamo-kv");
  // Worker 0 holds 2 of the 4 blocks: 1 × (64 - 32) / 16 + 4 = 6; worker 1: 64 / 16 + 4 = 8.
  const Decision d = policy_->Choose(Request(a_, 1), Workers({32, 0}), rng_);
  EXPECT_EQ(d.slot, 0u);
  EXPECT_EQ(d.estimated_cached_tokens, 32u);
  EXPECT_EQ(Logits(), (std::vector<double>{6, 8}));
}

TEST_F(DynamoKvTest, ActiveRequestsAddPrefillUntilTheirFirstTokenAndBlocksUntilTheyFinish) {
  ASSERT_EQ(policy_->Choose(Request(a_, 1), Workers({32, 0}), rng_).slot, 0u);
  // b is new everywhere. Worker 0: (64 + 32 pending) / 16 + (4 new + 4 active) = 14; worker 1: 8.
  EXPECT_EQ(policy_->Choose(Request(b_, 2), Workers({0, 0}), rng_).slot, 1u);
  EXPECT_EQ(Logits(), (std::vector<double>{14, 8}));
  // a's first token: its prefill is done, its blocks stay active until it finishes.
  Outcome first;
  first.slot = 0;
  first.request_id = 1;
  policy_->OnOutcome(first);
  const Decision third = policy_->Choose(Request(b_, 3), Workers({0, 0}), rng_);
  EXPECT_EQ(Logits()[0], 4 + 8);
  policy_->OnFinished(0, 1);
  policy_->OnFinished(1, 2);
  policy_->OnFinished(third.slot, 3);
  policy_->Choose(Request(b_, 4), Workers({0, 0}), rng_);
  EXPECT_EQ(Logits()[0], 8);
}

TEST_F(DynamoKvTest, SharedActiveBlocksAreNotNewBlocks) {
  ASSERT_EQ(policy_->Choose(Request(a_, 1), Workers({64, 0}), rng_).slot, 0u);
  // A second copy of a: worker 0 already has its 4 blocks active (no new blocks) and holds them:
  // 0 + (0 + 4) = 4; worker 1: 4 + (4 + 0) = 8.
  policy_->Choose(Request(a_, 2), Workers({64, 0}), rng_);
  EXPECT_EQ(Logits(), (std::vector<double>{4, 8}));
}

TEST_F(DynamoKvTest, ZeroOverlapWeightIgnoresTheCache) {
  params_.dynamo_overlap_score_weight = 0;
  policy_ = NewDynamoKvPolicy(params_, false);
  // Worker 0 holds all of a, but only decode blocks count: both logits are 4, a tie.
  std::set<Slot> seen;
  for (int i = 0; i < 40; ++i) {
    const Decision d = policy_->Choose(Request(a_, 1 + i), Workers({64, 0}), rng_);
    EXPECT_EQ(Logits(), (std::vector<double>{4, 4}));
    policy_->OnFinished(d.slot, 1 + i);
    seen.insert(d.slot);
  }
  EXPECT_EQ(seen, (std::set<Slot>{0, 1}));
}

TEST_F(DynamoKvTest, TemperatureSamplesNormalizedLogits) {
  params_.dynamo_temperature = 1.0;
  policy_ = NewDynamoKvPolicy(params_, false);
  // Logits 6 and 8 normalize to 0 and 1: p(worker 0) = 1 / (1 + e^-1) = 0.731.
  int zero = 0;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    const Decision d = policy_->Choose(Request(a_, 100 + i), Workers({32, 0}), rng_);
    policy_->OnFinished(d.slot, 100 + i);
    zero += d.slot == 0;
  }
  EXPECT_NEAR(zero / double(n), 1 / (1 + std::exp(-1.0)), 0.025);
  // At temperature 0 the same choice is always the lowest logit.
  params_.dynamo_temperature = 0;
  policy_ = NewDynamoKvPolicy(params_, false);
  for (int i = 0; i < 50; ++i) {
    const Decision d = policy_->Choose(Request(a_, 100 + i), Workers({32, 0}), rng_);
    policy_->OnFinished(d.slot, 100 + i);
    ASSERT_EQ(d.slot, 0u);
  }
}

TEST_F(DynamoKvTest, ApproximateModePredictsFromItsOwnDecisionsForTheTtl) {
  params_.dynamo_approx_ttl = FromMillis(1000);
  policy_ = NewDynamoKvPolicy(params_, true);
  EXPECT_EQ(policy_->name(), "dynamo-kv-approx");
  // The candidates' cache fields are ignored: approximate mode has no events.
  const Slot first = policy_->Choose(Request(a_, 1), Workers({0, 64, 0}), rng_).slot;
  policy_->OnFinished(first, 1);
  for (int i = 0; i < 20; ++i) {
    const Decision d = policy_->Choose(Request(a_, 2 + i, 500), Workers({0, 64, 0}), rng_);
    policy_->OnFinished(d.slot, 2 + i);
    ASSERT_EQ(d.slot, first);
    ASSERT_EQ(d.estimated_cached_tokens, 64u);
  }
  // Every decision renewed the prediction at 500 ms; at 1600 ms it has expired.
  const Decision late = policy_->Choose(Request(a_, 50, 1600), Workers({0, 64, 0}), rng_);
  EXPECT_EQ(late.estimated_cached_tokens, 0u);
}

TEST_F(DynamoKvTest, ReplicaSyncSharesDecisionsAsActiveLoad) {
  // Another replica sent a (nothing cached) to worker 0: 64 prefill tokens and 4 blocks there.
  policy_->OnPeerDecision(0, Request(a_, 7), 0);
  policy_->Choose(Request(b_, 8), Workers({0, 0}), rng_);
  EXPECT_EQ(Logits(), (std::vector<double>{8 + 8, 8}));
  policy_->OnFinished(0, 7);
  policy_->OnFinished(1, 8);
  policy_->Choose(Request(b_, 9), Workers({0, 0}), rng_);
  EXPECT_EQ(Logits(), (std::vector<double>{8, 8}));
}

}  // namespace
}  // namespace hearsay::route
