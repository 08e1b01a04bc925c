#include "hearsay/route/least_loaded_policy.h"

#include <gtest/gtest.h>

#include <set>

#include "hearsay/route/route_test_util.h"

namespace hearsay::route {
namespace {

using testing::At;
using testing::MakeChain;
using testing::MakeRequest;
using testing::PeerCandidate;
using testing::SelfCandidate;

TEST(LeastLoadedPolicy, PicksFewestOutstandingIgnoringCaches) {
  auto policy = NewLeastLoadedPolicy(PolicyOptions{});
  EXPECT_EQ(policy->name(), "least-loaded");
  const auto chain = MakeChain(1, 0, 32, 32);
  Candidate self = SelfCandidate(0, 512);
  self.load.queued = 3;
  Candidate busy = PeerCandidate(1, 0.1, 512);
  busy.load.running = 2;
  Candidate idle = PeerCandidate(2, 0.1, 0);
  idle.load.running = 1;
  Rng rng(1);
  const Decision d = policy->Choose(MakeRequest(chain), std::vector{self, busy, idle}, rng);
  EXPECT_EQ(d.slot, 2u);
  EXPECT_EQ(d.reason, Reason::kLoadBalance);
}

TEST(LeastLoadedPolicy, CountsWhatItSentSinceTheLastReport) {
  auto policy = NewLeastLoadedPolicy(PolicyOptions{});
  const auto chain = MakeChain(1, 0, 32, 32);
  std::vector<Candidate> candidates;
  for (Slot s = 0; s < 4; ++s) {
    candidates.push_back(s == 0 ? SelfCandidate(0) : PeerCandidate(s, 0.5));
    candidates.back().load.age = FromMillis(200);  // every report is stale
  }
  Rng rng(5);
  std::set<Slot> used;
  // Four requests in a burst, before any report: each member gets exactly one.
  for (uint64_t id = 1; id <= 4; ++id) {
    RouteRequest request = MakeRequest(chain, id, At(double(id)));
    const Decision d = policy->Choose(request, candidates, rng);
    policy->OnSent(d.slot, request);
    used.insert(d.slot);
  }
  EXPECT_EQ(used.size(), 4u);
}

}  // namespace
}  // namespace hearsay::route
