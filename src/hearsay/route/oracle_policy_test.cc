#include "hearsay/route/oracle_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "hearsay/route/route_test_util.h"

namespace hearsay::route {
namespace {

using testing::At;
using testing::MakeChain;
using testing::MakeRequest;
using testing::PeerCandidate;
using testing::SelfCandidate;

// The expected TTFT written out longhand, independent of ttft_estimate.h.
double NaiveTtft(const PrefillCostModel& m, double overhead_ms, const Candidate& c, double prompt) {
  const double delay = c.is_self ? 0 : 2 * ToMillis(c.one_way_delay) + overhead_ms;
  const double q = c.load.queued, qt = double(c.load.queued_prefill_tokens);
  const double run = c.load.running, ctx = double(c.load.running_context_tokens);
  const double iter = m.t0_ms + m.d1_ms_per_seq * run + m.d2_ms_per_token * ctx;
  double wait = 0;
  if (q > 0 || run > 0) wait += iter / 2;
  if (q > 0) wait += q * iter + m.a_ms_per_token * qt + m.b_ms_per_token2 * qt * qt / (2 * q);
  const double cached = std::min<double>(c.cached_tokens, prompt - 1);
  const double fresh = prompt - cached;
  const double prefill =
      iter + m.a_ms_per_token * fresh + m.b_ms_per_token2 * fresh * (cached + fresh / 2);
  // The exact queue still drains while the request travels there.
  return delay + std::max(0.0, c.cost_scale * wait - ToMillis(c.one_way_delay)) +
         c.cost_scale * prefill;
}

TEST(OraclePolicy, PicksTheExactMinimumOfExpectedTtft) {
  PolicyOptions options;
  auto policy = NewOraclePolicy(options);
  EXPECT_EQ(policy->name(), "oracle");
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    Rng rng(seed);
    const auto chain = MakeChain(seed, 0, 64, 32 + rng.Below(200));
    const RouteRequest request = MakeRequest(chain, seed);
    std::vector<Candidate> candidates;
    const size_t n = 1 + rng.Below(20);
    for (Slot s = 0; s < n; ++s) {
      Candidate c = s == 0 ? SelfCandidate(0) : PeerCandidate(s, rng.Uniform(0, 20));
      c.cache_exact = true;
      c.cached_tokens = static_cast<uint32_t>(rng.Below(request.prompt_tokens + 1));
      c.load.queued = static_cast<uint32_t>(rng.Below(4));
      c.load.queued_prefill_tokens = c.load.queued * rng.Below(3000);
      c.load.running = static_cast<uint32_t>(rng.Below(16));
      c.load.running_context_tokens = c.load.running * rng.Below(2000);
      c.cost_scale = rng.Uniform(0.5, 3);
      c.usable = s == 0 || rng.Bernoulli(0.9);
      candidates.push_back(c);
    }
    double best = std::numeric_limits<double>::infinity();
    for (const Candidate& c : candidates) {
      if (IsUsable(c)) {
        best = std::min(best, NaiveTtft(options.cost, options.hearsay.forward_overhead_ms, c,
                                        request.prompt_tokens));
      }
    }
    const Decision d = policy->Choose(request, candidates, rng);
    const auto chosen = std::find_if(candidates.begin(), candidates.end(),
                                     [&](const Candidate& c) { return c.slot == d.slot; });
    ASSERT_NE(chosen, candidates.end());
    ASSERT_TRUE(IsUsable(*chosen));
    const double got = NaiveTtft(options.cost, options.hearsay.forward_overhead_ms, *chosen,
                                 request.prompt_tokens);
    ASSERT_NEAR(got, best, 1e-9 * best) << "seed " << seed;
    ASSERT_NEAR(d.expected_ttft_ms, best, 1e-9 * best) << "seed " << seed;
  }
}

TEST(OraclePolicy, CountsItsOwnRequestsStillInFlight) {
  auto policy = NewOraclePolicy(PolicyOptions{});
  // Two identical idle peers 5 ms away, self far busier: requests alternate between the peers,
  // because each one sees its predecessor on the wire to the other.
  Candidate self = SelfCandidate(0);
  self.load.queued = 10;
  self.load.queued_prefill_tokens = 10 * 4096;
  const std::vector<Candidate> candidates = {self, PeerCandidate(1, 5), PeerCandidate(2, 5)};
  Rng rng(2);
  const auto chain = MakeChain(1, 0, 0, 128);
  Slot previous = kNoSlot;
  for (uint64_t id = 1; id <= 6; ++id) {
    const RouteRequest request = MakeRequest(chain, id, At(0.1 * double(id)));
    const Decision d = policy->Choose(request, candidates, rng);
    EXPECT_NE(d.slot, 0u);
    EXPECT_NE(d.slot, previous);
    policy->OnSent(d.slot, request);
    previous = d.slot;
  }
}

}  // namespace
}  // namespace hearsay::route
