#include "hearsay/route/local_policy.h"

#include <gtest/gtest.h>

#include "hearsay/route/route_test_util.h"

namespace hearsay::route {
namespace {

using testing::MakeChain;
using testing::MakeRequest;
using testing::PeerCandidate;
using testing::SelfCandidate;

TEST(LocalPolicy, AlwaysServesWhereTheRequestEnters) {
  auto policy = NewLocalPolicy();
  EXPECT_EQ(policy->name(), "local");
  const auto chain = MakeChain(1, 0, 32, 32);
  Candidate self = SelfCandidate(4);
  self.load.queued = 50;  // however loaded, and however good the peers
  const std::vector<Candidate> candidates = {PeerCandidate(1, 0.01, 512), self,
                                             PeerCandidate(2, 0.01, 512)};
  RouteRequest request = MakeRequest(chain);
  request.entry_slot = 4;
  Rng rng(1);
  for (int i = 0; i < 20; ++i) {
    const Decision d = policy->Choose(request, candidates, rng);
    EXPECT_EQ(d.slot, 4u);
    EXPECT_EQ(d.reason, Reason::kLocalPolicy);
  }
}

}  // namespace
}  // namespace hearsay::route
