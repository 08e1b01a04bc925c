#include "hearsay/route/llmd_precise_policy.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "hearsay/route/route_test_util.h"

namespace hearsay::route {
namespace {

using testing::MakeChain;
using testing::MakeRequest;
using testing::PeerCandidate;

class LlmdPreciseTest : public ::testing::Test {
 protected:
  Candidate Endpoint(Slot s, uint32_t cached, uint32_t queued = 0, double kv_used = 0) {
    Candidate c = PeerCandidate(s, 1.0, cached);
    c.load.queued = queued;
    c.load.kv_capacity_tokens = 1000;
    c.load.kv_used_tokens = static_cast<uint64_t>(kv_used * 1000);
    return c;
  }
  std::vector<double> Scores() const {
    std::vector<double> out;
    for (const Price& p : policy_->LastPrices()) out.push_back(-p.cost_ms);
    return out;
  }
  std::unique_ptr<Policy> policy_ = NewLlmdPrecisePolicy(PeerParams{});
  Rng rng_{11};
  std::vector<prefix::BlockKey> chain_ = MakeChain(1, 0, 8, 8);
  RouteRequest request_ = [this] {
    RouteRequest r = MakeRequest(chain_);
    r.entry_slot = kNoSlot;
    return r;
  }();
};

TEST_F(LlmdPreciseTest, PrefixScoreIsMinMaxNormalizedOverEndpointsWithAMatch) {
  EXPECT_EQ(policy_->name(), "llmd-precise");
  // 2 and 6 matched blocks normalize to 0 and 1; no match scores 0. Queues and KV are equal, so
  // each endpoint gets 2 + 2 on top.
  const Decision d = policy_->Choose(
      request_, std::vector<Candidate>{Endpoint(0, 32), Endpoint(1, 96), Endpoint(2, 0)}, rng_);
  EXPECT_EQ(d.slot, 1u);
  EXPECT_EQ(Scores(), (std::vector<double>{4, 7, 4}));
  // A single matching endpoint (min == max) scores 1.
  policy_->Choose(request_, std::vector<Candidate>{Endpoint(0, 0), Endpoint(1, 48)}, rng_);
  EXPECT_EQ(Scores(), (std::vector<double>{4, 7}));
}

TEST_F(LlmdPreciseTest, QueueAndKvUtilizationScorersCanOutweighThePrefix) {
  // Endpoint 0: the longest match (3) but the longest queue (0) and 90% KV use (2 × 0.1);
  // endpoint 1: a shorter match (0), an empty queue (2) and an empty cache (2).
  const Decision d = policy_->Choose(
      request_, std::vector<Candidate>{Endpoint(0, 128, 10, 0.9), Endpoint(1, 32, 0, 0)}, rng_);
  EXPECT_EQ(d.slot, 1u);
  const std::vector<double> s = Scores();
  EXPECT_NEAR(s[0], 3.2, 1e-9);
  EXPECT_NEAR(s[1], 4.0, 1e-9);
}

TEST_F(LlmdPreciseTest, QueueScoreIsMinMaxNormalized) {
  const Decision d = policy_->Choose(
      request_, std::vector<Candidate>{Endpoint(0, 0, 4), Endpoint(1, 0, 2), Endpoint(2, 0, 0)},
      rng_);
  EXPECT_EQ(d.slot, 2u);
  EXPECT_EQ(Scores(), (std::vector<double>{2, 3, 4}));
}

TEST_F(LlmdPreciseTest, EqualScoresAreDrawnAtRandom) {
  std::set<Slot> seen;
  for (int i = 0; i < 40; ++i) {
    seen.insert(
        policy_->Choose(request_, std::vector<Candidate>{Endpoint(0, 0), Endpoint(1, 0)}, rng_)
            .slot);
  }
  EXPECT_EQ(seen, (std::set<Slot>{0, 1}));
}

}  // namespace
}  // namespace hearsay::route
