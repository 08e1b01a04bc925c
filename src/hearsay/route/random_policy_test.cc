#include "hearsay/route/random_policy.h"

#include <gtest/gtest.h>

#include <map>

#include "hearsay/route/route_test_util.h"

namespace hearsay::route {
namespace {

using testing::MakeChain;
using testing::MakeRequest;
using testing::PeerCandidate;
using testing::SelfCandidate;

TEST(RandomPolicy, SpreadsUniformlyOverUsableMembers) {
  auto policy = NewRandomPolicy();
  EXPECT_EQ(policy->name(), "random");
  const auto chain = MakeChain(1, 0, 32, 32);
  std::vector<Candidate> candidates = {SelfCandidate(0)};
  for (Slot s = 1; s <= 4; ++s) candidates.push_back(PeerCandidate(s, 1.0));
  candidates[2].usable = false;
  Rng rng(7);
  std::map<Slot, int> hits;
  for (int i = 0; i < 4000; ++i) ++hits[policy->Choose(MakeRequest(chain), candidates, rng).slot];
  EXPECT_EQ(hits.count(2), 0u);
  ASSERT_EQ(hits.size(), 4u);
  for (const auto& [slot, n] : hits) EXPECT_NEAR(n, 1000, 150) << slot;
}

}  // namespace
}  // namespace hearsay::route
