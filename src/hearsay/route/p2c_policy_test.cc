#include "hearsay/route/p2c_policy.h"

#include <gtest/gtest.h>

#include <map>

#include "hearsay/route/route_test_util.h"

namespace hearsay::route {
namespace {

using testing::MakeChain;
using testing::MakeRequest;
using testing::PeerCandidate;
using testing::SelfCandidate;

TEST(P2cPolicy, ThePairsLessLoadedWins) {
  auto policy = NewP2cPolicy(PolicyOptions{});
  EXPECT_EQ(policy->name(), "p2c");
  const auto chain = MakeChain(1, 0, 32, 32);
  std::vector<Candidate> candidates = {SelfCandidate(0)};
  for (Slot s = 1; s <= 3; ++s) candidates.push_back(PeerCandidate(s, 0.1));
  for (Slot s = 0; s <= 3; ++s) candidates[s].load.queued = s;  // slot 3 is the most loaded
  Rng rng(11);
  std::map<Slot, int> hits;
  for (int i = 0; i < 3000; ++i) ++hits[policy->Choose(MakeRequest(chain), candidates, rng).slot];
  // The most loaded is never the lesser of two distinct members; the least loaded wins every
  // pair it is in (probability 1/2), the next 1/3, the next 1/6.
  EXPECT_EQ(hits.count(3), 0u);
  EXPECT_NEAR(hits[0], 1500, 150);
  EXPECT_NEAR(hits[1], 1000, 150);
  EXPECT_NEAR(hits[2], 500, 150);
}

TEST(P2cPolicy, ASingleUsableMemberIsChosen) {
  auto policy = NewP2cPolicy(PolicyOptions{});
  const auto chain = MakeChain(1, 0, 32, 32);
  std::vector<Candidate> candidates = {PeerCandidate(1, 0.1), PeerCandidate(2, 0.1)};
  candidates[0].usable = false;
  Rng rng(1);
  EXPECT_EQ(policy->Choose(MakeRequest(chain), candidates, rng).slot, 2u);
}

}  // namespace
}  // namespace hearsay::route
