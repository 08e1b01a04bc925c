#include "hearsay/route/paper_policy.h"

#include <gtest/gtest.h>

#include <map>

#include "hearsay/route/route_test_util.h"

namespace hearsay::route {
namespace {

using testing::MakeChain;
using testing::MakeRequest;
using testing::PeerCandidate;
using testing::SelfCandidate;

class PaperPolicyTest : public ::testing::Test {
 protected:
  std::unique_ptr<Policy> policy_ = NewPaperPolicy();
  std::vector<prefix::BlockKey> chain_ = MakeChain(1, 0, 64, 64);
  RouteRequest request_ = MakeRequest(chain_);
  Rng rng_{9};
};

TEST_F(PaperPolicyTest, PicksTheLongestEstimatedMatchWhateverTheDelayOrLoad) {
  EXPECT_EQ(policy_->name(), "paper");
  Candidate far = PeerCandidate(2, 80.0, 768);
  far.load.queued = 40;
  const std::vector<Candidate> candidates = {SelfCandidate(0, 256), PeerCandidate(1, 0.1, 512),
                                             far};
  const Decision d = policy_->Choose(request_, candidates, rng_);
  EXPECT_EQ(d.slot, 2u);
  EXPECT_EQ(d.reason, Reason::kLongestMatch);
  EXPECT_EQ(d.estimated_cached_tokens, 768u);
}

TEST_F(PaperPolicyTest, SkipsOverloadedMembers) {
  Candidate best = PeerCandidate(1, 0.1, 1024);
  best.load.overloaded = true;
  const std::vector<Candidate> candidates = {SelfCandidate(0), best, PeerCandidate(2, 0.1, 64)};
  EXPECT_EQ(policy_->Choose(request_, candidates, rng_).slot, 2u);
}

TEST_F(PaperPolicyTest, BreaksTiesAtRandom) {
  const std::vector<Candidate> candidates = {SelfCandidate(0, 128), PeerCandidate(1, 0.1, 512),
                                             PeerCandidate(2, 0.1, 512),
                                             PeerCandidate(3, 0.1, 512)};
  std::map<Slot, int> hits;
  for (int i = 0; i < 3000; ++i) ++hits[policy_->Choose(request_, candidates, rng_).slot];
  EXPECT_EQ(hits.count(0), 0u);
  for (Slot s = 1; s <= 3; ++s) EXPECT_NEAR(hits[s], 1000, 150) << s;
}

TEST_F(PaperPolicyTest, FallsBackToLocal) {
  // Nobody holds anything.
  std::vector<Candidate> candidates = {PeerCandidate(1, 0.1), SelfCandidate(5),
                                       PeerCandidate(2, 0.1)};
  request_.entry_slot = 5;
  Decision d = policy_->Choose(request_, candidates, rng_);
  EXPECT_EQ(d.slot, 5u);
  EXPECT_EQ(d.reason, Reason::kNoMatch);
  // Everyone is overloaded.
  for (Candidate& c : candidates) {
    c.load.overloaded = true;
    c.cached_tokens = 512;
  }
  d = policy_->Choose(request_, candidates, rng_);
  EXPECT_EQ(d.slot, 5u);
  EXPECT_EQ(d.reason, Reason::kAllOverloaded);
  // Only holders that are dead.
  candidates = {SelfCandidate(5), PeerCandidate(1, 0.1, 512)};
  candidates[1].usable = false;
  EXPECT_EQ(policy_->Choose(request_, candidates, rng_).slot, 5u);
}

}  // namespace
}  // namespace hearsay::route
