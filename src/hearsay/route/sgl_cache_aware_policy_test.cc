#include "hearsay/route/sgl_cache_aware_policy.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "hearsay/route/route_test_util.h"

namespace hearsay::route {
namespace {

using testing::At;
using testing::MakeChain;
using testing::MakeRequest;
using testing::PeerCandidate;

// Three workers behind a central gateway (no self: a router is no member).
std::vector<Candidate> Workers(int n = 3) {
  std::vector<Candidate> c;
  for (int i = 0; i < n; ++i) c.push_back(PeerCandidate(static_cast<Slot>(i), 1.0));
  return c;
}

class SglCacheAwareTest : public ::testing::Test {
 protected:
  Decision Route(const std::vector<prefix::BlockKey>& chain, uint64_t id, double at_ms = 0) {
    RouteRequest r = MakeRequest(chain, id, At(at_ms));
    r.entry_slot = kNoSlot;
    return policy_->Choose(r, workers_, rng_);
  }
  PeerParams params_;
  std::unique_ptr<Policy> policy_ = NewSglCacheAwarePolicy(params_);
  std::vector<Candidate> workers_ = Workers();
  Rng rng_{5};
  // Chains of 16 blocks: x, and its relatives sharing 8 (50%) and 4 (25%) blocks.
  std::vector<prefix::BlockKey> x_ = MakeChain(1, 0, 16, 16);
  std::vector<prefix::BlockKey> half_ = MakeChain(1, 1, 8, 16);
  std::vector<prefix::BlockKey> quarter_ = MakeChain(1, 2, 4, 16);
};

TEST_F(SglCacheAwareTest, WithoutAMatchGoesToTheWorkerWithTheSmallestTree) {
  EXPECT_EQ(policy_->name(), "sgl-cache-aware");
  // Empty trees tie: the first worker. Then each unrelated prompt fills the next empty tree.
  EXPECT_EQ(Route(MakeChain(7, 0, 16, 16), 1).slot, 0u);
  EXPECT_EQ(Route(MakeChain(8, 0, 16, 16), 2).slot, 1u);
  const Decision d = Route(MakeChain(9, 0, 4, 4), 3);
  EXPECT_EQ(d.slot, 2u);
  EXPECT_EQ(d.reason, Reason::kNoMatch);
  // Worker 2's tree (4 blocks) is now the smallest.
  EXPECT_EQ(Route(MakeChain(10, 0, 16, 16), 4).slot, 2u);
}

TEST_F(SglCacheAwareTest, AMatchAboveTheThresholdFollowsTheTreeFedByItsOwnDecisions) {
  EXPECT_EQ(Route(x_, 1).slot, 0u);
  EXPECT_EQ(Route(MakeChain(8, 0, 4, 4), 2).slot, 1u);
  // 8 of 16 blocks match worker 0's tree: 0.5 > 0.3, though worker 0 has the larger tree.
  const Decision d = Route(half_, 3);
  EXPECT_EQ(d.slot, 0u);
  EXPECT_EQ(d.reason, Reason::kLongestMatch);
  EXPECT_EQ(d.estimated_cached_tokens, 8u * 16);
}

TEST_F(SglCacheAwareTest, AMatchAtOrBelowTheThresholdIsIgnored) {
  EXPECT_EQ(Route(x_, 1).slot, 0u);
  // 4 of 16 blocks = 0.25 <= 0.3: the smallest tree (worker 1) instead of the holder.
  const Decision d = Route(quarter_, 2);
  EXPECT_EQ(d.slot, 1u);
  EXPECT_EQ(d.reason, Reason::kNoMatch);
  // With a threshold of 0.2 the same match wins.
  params_.sgl_cache_threshold = 0.2;
  policy_ = NewSglCacheAwarePolicy(params_);
  EXPECT_EQ(Route(x_, 1).slot, 0u);
  EXPECT_EQ(Route(quarter_, 2).slot, 0u);
}

TEST_F(SglCacheAwareTest, AbsoluteImbalanceSwitchesToTheShortestQueue) {
  // Every copy of x matches worker 0 fully, until worker 0 has 65 more in flight than the least
  // loaded worker (65 - 0 > 64 and 65 > 1.5 × 0).
  for (uint64_t id = 1; id <= 65; ++id) ASSERT_EQ(Route(x_, id).slot, 0u) << id;
  Decision d = Route(x_, 66);
  EXPECT_EQ(d.slot, 1u);
  EXPECT_EQ(d.reason, Reason::kLoadBalance);
  // Still imbalanced (65 - 0 > 64): the next least loaded worker.
  EXPECT_EQ(Route(x_, 67).slot, 2u);
  // 65 - 1 = 64 is not > 64: back to the tree, where workers 0, 1 and 2 now all hold x.
  std::set<Slot> seen;
  for (uint64_t id = 68; id < 68 + 30; ++id) {
    d = Route(x_, id);
    seen.insert(d.slot);
    policy_->OnFinished(d.slot, id);  // keep the loads where they are
  }
  EXPECT_EQ(seen, (std::set<Slot>{0, 1, 2}));
}

TEST_F(SglCacheAwareTest, FinishedRequestsLeaveTheLoadCount) {
  for (uint64_t id = 1; id <= 65; ++id) ASSERT_EQ(Route(x_, id).slot, 0u);
  policy_->OnFinished(0, 1);  // 64 in flight: balanced again
  EXPECT_EQ(Route(x_, 66).slot, 0u);
}

TEST_F(SglCacheAwareTest, RelativeThresholdMustAlsoBeExceeded) {
  params_.sgl_balance_abs_threshold = 0;
  params_.sgl_balance_rel_threshold = 1.5;
  policy_ = NewSglCacheAwarePolicy(params_);
  workers_ = Workers(2);
  // Loads 1 and 0: 1 > 0 and 1 > 1.5 × 0 -> the shortest queue (worker 1), though x is on 0.
  EXPECT_EQ(Route(x_, 1).slot, 0u);
  EXPECT_EQ(Route(x_, 2).slot, 1u);
  // Loads 1 and 1: balanced; the tree holds x on both. Loads 2 and 1: 2 > 1.5 -> imbalanced.
  const Slot third = Route(x_, 3).slot;
  EXPECT_EQ(Route(x_, 4).slot, third == 0 ? 1u : 0u);
  // Loads 2 and 2, then 3 and 2: 3 > 3.0 is false, so still balanced: the tree decides.
  EXPECT_EQ(Route(x_, 5).reason, Reason::kLongestMatch);
  EXPECT_EQ(Route(x_, 6).reason, Reason::kLongestMatch);
}

TEST_F(SglCacheAwareTest, EvictionTrimsEachWorkersTreeByLeastRecentUse) {
  params_.sgl_max_tree_tokens = 8 * 16;
  params_.sgl_eviction_interval = FromMillis(1000);
  policy_ = NewSglCacheAwarePolicy(params_);
  EXPECT_EQ(Route(x_, 1, 0).slot, 0u);
  EXPECT_EQ(Route(x_, 2, 10).estimated_cached_tokens, 16u * 16);
  policy_->OnFinished(0, 1);
  policy_->OnFinished(0, 2);
  // The eviction due at 1 s trims worker 0 to 8 blocks: its deepest (least recent) leaves go.
  const Decision d = Route(x_, 3, 1500);
  EXPECT_EQ(d.slot, 0u);
  EXPECT_EQ(d.estimated_cached_tokens, 8u * 16);
}

}  // namespace
}  // namespace hearsay::route
