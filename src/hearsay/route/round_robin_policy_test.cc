#include "hearsay/route/round_robin_policy.h"

#include <gtest/gtest.h>

#include "hearsay/route/route_test_util.h"

namespace hearsay::route {
namespace {

using testing::MakeChain;
using testing::MakeRequest;
using testing::PeerCandidate;
using testing::SelfCandidate;

TEST(RoundRobinPolicy, CyclesThroughUsableMembersInSlotOrder) {
  auto policy = NewRoundRobinPolicy();
  EXPECT_EQ(policy->name(), "round-robin");
  const auto chain = MakeChain(1, 0, 32, 32);
  // Listed out of order; slot 5 is dead.
  std::vector<Candidate> candidates = {PeerCandidate(9, 1), SelfCandidate(0), PeerCandidate(5, 1),
                                       PeerCandidate(3, 1)};
  candidates[2].usable = false;
  Rng rng(1);
  std::vector<Slot> got;
  for (int i = 0; i < 7; ++i)
    got.push_back(policy->Choose(MakeRequest(chain), candidates, rng).slot);
  EXPECT_EQ(got, (std::vector<Slot>{0, 3, 9, 0, 3, 9, 0}));
  // A member that comes back joins the rotation where its slot falls.
  candidates[2].usable = true;
  got.clear();
  for (int i = 0; i < 4; ++i)
    got.push_back(policy->Choose(MakeRequest(chain), candidates, rng).slot);
  EXPECT_EQ(got, (std::vector<Slot>{3, 5, 9, 0}));
}

}  // namespace
}  // namespace hearsay::route
