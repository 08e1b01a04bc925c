// Rules every registered policy obeys, checked through the registry.
#include "hearsay/route/policy.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "hearsay/route/registry.h"
#include "hearsay/route/route_test_util.h"

namespace hearsay::route {
namespace {

using testing::At;
using testing::MakeChain;
using testing::MakeRequest;
using testing::PeerCandidate;
using testing::SelfCandidate;

std::unique_ptr<Policy> Make(std::string_view name) {
  auto policy = MakePolicy(name, PolicyOptions{});
  HEARSAY_CHECK(policy.ok());
  return std::move(policy).value();
}

// A candidate set where every policy would like to forward: self is loaded and holds nothing,
// peer 1 is idle, near, and holds the whole prompt.
std::vector<Candidate> ForwardBait(uint32_t prompt_tokens) {
  Candidate self = SelfCandidate(0);
  self.load.queued = 6;
  self.load.queued_prefill_tokens = 6 * 2048;
  self.load.running = 8;
  Candidate peer = PeerCandidate(1, 0.05, prompt_tokens);
  return {self, peer};
}

class EveryPolicy : public ::testing::TestWithParam<std::string_view> {};

TEST_P(EveryPolicy, ForwardedRequestIsServedLocally) {
  auto policy = Make(GetParam());
  const auto chain = MakeChain(1, 0, 64, 64);
  RouteRequest request = MakeRequest(chain);
  request.forwarded = true;
  const auto candidates = ForwardBait(request.prompt_tokens);
  Rng rng(1);
  for (int i = 0; i < 50; ++i) {
    const Decision d = policy->Choose(request, candidates, rng);
    EXPECT_EQ(d.slot, 0u);
    EXPECT_EQ(d.reason, Reason::kHopForced);
  }
}

TEST_P(EveryPolicy, NoUsableCandidateMeansSelf) {
  auto policy = Make(GetParam());
  const auto chain = MakeChain(1, 0, 64, 64);
  RouteRequest request = MakeRequest(chain);
  request.entry_slot = 7;
  Rng rng(1);
  EXPECT_EQ(policy->Choose(request, {}, rng).slot, 7u);
  std::vector<Candidate> dead = {PeerCandidate(1, 0.1, 1024), PeerCandidate(2, 0.1, 1024)};
  for (Candidate& c : dead) c.usable = false;
  const Decision d = policy->Choose(request, dead, rng);
  EXPECT_EQ(d.slot, 7u);
  EXPECT_EQ(d.reason, Reason::kNoCandidate);
}

TEST_P(EveryPolicy, NeverChoosesAnUnusableMember) {
  auto policy = Make(GetParam());
  const auto chain = MakeChain(1, 0, 64, 64);
  std::vector<Candidate> candidates = {SelfCandidate(0)};
  for (Slot s = 1; s <= 6; ++s) {
    candidates.push_back(PeerCandidate(s, 0.1 * s, s % 2 ? 1024 : 0));
    candidates.back().usable = s % 2 == 0;  // the odd ones hold the prefix but are dead
  }
  Rng rng(3);
  for (uint64_t id = 1; id <= 200; ++id) {
    RouteRequest request = MakeRequest(chain, id, At(double(id)));
    const Decision d = policy->Choose(request, candidates, rng);
    EXPECT_TRUE(d.slot == 0 || d.slot % 2 == 0) << d.slot;
    policy->OnSent(d.slot, request);
  }
}

TEST_P(EveryPolicy, DeterministicUnderASeed) {
  const auto run = [&](uint64_t seed) {
    auto policy = Make(GetParam());
    Rng rng(seed);
    std::vector<Slot> slots;
    std::vector<Candidate> candidates = {SelfCandidate(0)};
    for (Slot s = 1; s <= 8; ++s) candidates.push_back(PeerCandidate(s, 0.2, 256 * (s % 3)));
    for (uint64_t id = 1; id <= 100; ++id) {
      const auto chain = MakeChain(id % 5, id, 16, 32);
      RouteRequest request = MakeRequest(chain, id, At(5.0 * double(id)));
      const Decision d = policy->Choose(request, candidates, rng);
      policy->OnSent(d.slot, request);
      slots.push_back(d.slot);
    }
    return slots;
  };
  EXPECT_EQ(run(42), run(42));
}

TEST_P(EveryPolicy, SurvivesNonsenseInTheSnapshot) {
  auto policy = Make(GetParam());
  Rng rng(4);
  const auto chain = MakeChain(1, 0, 8, 8);
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    Rng gen(seed);
    std::vector<Candidate> candidates;
    for (Slot s = 0; s < 1 + gen.Below(6); ++s) {
      Candidate c = s == 0 && gen.Bernoulli(0.7) ? SelfCandidate(s) : PeerCandidate(s, 0);
      const double weird[] = {0, -1, 1e300, std::numeric_limits<double>::quiet_NaN(),
                              std::numeric_limits<double>::infinity()};
      c.cost_scale = weird[gen.Below(5)];
      c.one_way_delay = FromMillis(gen.Uniform(-100, 100));
      c.cached_tokens = static_cast<uint32_t>(gen.NextU64());
      c.cache_age = FromMillis(gen.Uniform(-1000, 1e9));
      c.load.queued = static_cast<uint32_t>(gen.NextU64());
      c.load.queued_prefill_tokens = gen.NextU64();
      c.load.running = static_cast<uint32_t>(gen.NextU64());
      c.load.running_context_tokens = gen.NextU64();
      c.load.age = FromMillis(gen.Uniform(-1000, 1e9));
      if (gen.Bernoulli(0.3)) c.load.queue_wait = FromMillis(gen.Uniform(-1e6, 1e12));
      c.load.overloaded = gen.Bernoulli(0.5);
      c.usable = gen.Bernoulli(0.7);
      c.slot = gen.Bernoulli(0.1) ? kNoSlot - 1 : s;
      candidates.push_back(c);
    }
    RouteRequest request = MakeRequest(chain, seed, At(double(seed)));
    request.prompt_tokens = static_cast<uint32_t>(gen.Below(3)) * 1000;  // 0 too
    request.block_tokens = static_cast<uint32_t>(gen.Below(100));
    if (gen.Bernoulli(0.2)) request.key_chain = {};
    const Decision d = policy->Choose(request, candidates, rng);
    bool known = d.slot == request.entry_slot;
    for (const Candidate& c : candidates) known |= c.slot == d.slot && IsUsable(c);
    ASSERT_TRUE(known) << "seed " << seed << " slot " << d.slot;
    policy->OnSent(d.slot, request);
    policy->OnOutcome({.slot = d.slot,
                       .estimated_cached_tokens = d.estimated_cached_tokens,
                       .actual_cached_tokens = static_cast<uint32_t>(gen.NextU64())});
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryPolicy,
                         ::testing::Values("local", "random", "round-robin", "least-loaded", "p2c",
                                           "paper", "oracle", "hearsay"),
                         [](const auto& info) {
                           std::string name(info.param);
                           for (char& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name;
                         });

TEST(ReasonName, NamesEveryReason) {
  EXPECT_EQ(ReasonName(Reason::kHopForced), "hop-forced");
  EXPECT_EQ(ReasonName(Reason::kNearTie), "near-tie");
  EXPECT_EQ(ReasonName(Reason::kLowestCost), "lowest-cost");
}

}  // namespace
}  // namespace hearsay::route
