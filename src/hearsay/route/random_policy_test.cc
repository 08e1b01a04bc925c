#include "hearsay/route/random_policy.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <vector>

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

TEST(RandomPolicy, OwnSeedMakesChoicesIndependentOfThePassedRng) {
  const auto chain = MakeChain(1, 0, 32, 32);
  std::vector<Candidate> candidates = {SelfCandidate(0)};
  for (Slot s = 1; s <= 4; ++s) candidates.push_back(PeerCandidate(s, 1.0));
  auto choices = [&](std::optional<uint64_t> own_seed, uint64_t passed_seed) {
    auto policy = NewRandomPolicy(own_seed);
    Rng rng(passed_seed);
    std::vector<Slot> out;
    for (int i = 0; i < 64; ++i)
      out.push_back(policy->Choose(MakeRequest(chain), candidates, rng).slot);
    return out;
  };
  // Same own seed: the same choices, whatever else the passed Rng serves.
  EXPECT_EQ(choices(42, 1), choices(42, 999));
  // Another own seed: other choices (64 draws over 5 members all equal by chance: ~5^-64).
  EXPECT_NE(choices(42, 1), choices(43, 1));
  // Without one, the passed Rng decides.
  EXPECT_NE(choices(std::nullopt, 1), choices(std::nullopt, 999));
  EXPECT_EQ(choices(std::nullopt, 5), choices(std::nullopt, 5));
}

}  // namespace
}  // namespace hearsay::route
