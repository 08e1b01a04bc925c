#include "hearsay/route/hearsay_policy.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "hearsay/route/route_test_util.h"

namespace hearsay::route {
namespace {

using testing::At;
using testing::MakeChain;
using testing::MakeRequest;
using testing::PeerCandidate;
using testing::SelfCandidate;

// Prompts of 128 blocks × 16 tokens = 2048 tokens. With the default (h100) cost model a cold
// prefill costs ~70.6 ms and one on 1536 cached tokens ~22.7 ms: caching saves ~48 ms.
constexpr size_t kBlocks = 128;

class HearsayPolicyTest : public ::testing::Test {
 protected:
  Decision Choose(const std::vector<Candidate>& candidates, uint64_t id = 1, double at_ms = 0) {
    return policy_.Choose(MakeRequest(chain_, id, At(at_ms)), candidates, rng_);
  }
  // The slot a fresh policy with interference_weight `weight` chooses for request `id`.
  Slot SlotWithInterference(double weight, const std::vector<Candidate>& candidates, uint64_t id) {
    PolicyOptions options;
    options.hearsay.interference_weight = weight;
    HearsayPolicy policy(options);
    return policy.Choose(MakeRequest(chain_, id), candidates, rng_).slot;
  }

  PolicyOptions options_;
  HearsayPolicy policy_{options_};
  std::vector<prefix::BlockKey> chain_ = MakeChain(1, 0, kBlocks, kBlocks);
  Rng rng_{17};
};

TEST_F(HearsayPolicyTest, ServesLocallyWhenTheDelayOutweighsTheCacheGain) {
  EXPECT_EQ(policy_.name(), "hearsay");
  // A forward pays 2 × 30 ms, more than the ~48 ms it would save.
  Decision d = Choose({SelfCandidate(0), PeerCandidate(1, 30, 1536)});
  EXPECT_EQ(d.slot, 0u);
  EXPECT_NEAR(d.expected_ttft_ms, options_.cost.PrefillMs(2048, 0), 1e-9);
  // At 27 ms one way a policy pricing the delay once (27 < 48) would forward; 2 × 27 does not pay.
  d = Choose({SelfCandidate(0), PeerCandidate(1, 27, 1536)});
  EXPECT_EQ(d.slot, 0u);
}

TEST_F(HearsayPolicyTest, ForwardsWhenTheSavingExceedsTwiceTheDelay) {
  const Decision d = Choose({SelfCandidate(0), PeerCandidate(1, 10, 1536)});
  EXPECT_EQ(d.slot, 1u);
  EXPECT_EQ(d.reason, Reason::kLowestCost);
  EXPECT_EQ(d.estimated_cached_tokens, 1536u);
  EXPECT_NEAR(d.expected_ttft_ms,
              20 + options_.hearsay.forward_overhead_ms + options_.cost.PrefillMs(512, 1536), 1e-9);
}

TEST_F(HearsayPolicyTest, TheDecisionCarriesTheBestOtherCostAsItsFallback) {
  // Forwards to the holder; the best other choice is serving here cold (a far peer costs more).
  Decision d = Choose({SelfCandidate(0), PeerCandidate(1, 10, 1536), PeerCandidate(2, 10, 0)});
  EXPECT_EQ(d.slot, 1u);
  EXPECT_NEAR(d.fallback_ttft_ms, options_.cost.PrefillMs(2048, 0), 1e-9);
  EXPECT_GT(d.fallback_ttft_ms, d.expected_ttft_ms);
  // Alone, there is no other choice.
  d = Choose({SelfCandidate(0)});
  EXPECT_LT(d.fallback_ttft_ms, 0);
}

TEST_F(HearsayPolicyTest, AvoidsABusyHolderWhoseQueueCostsMoreThanTheSaving) {
  Candidate holder = PeerCandidate(1, 0.5, 1536);
  holder.load.queued = 2;
  holder.load.queued_prefill_tokens = 2 * 1024;  // ~70 ms of queue > ~48 ms saving
  Candidate idle = PeerCandidate(2, 0.5, 0);
  Decision d = Choose({SelfCandidate(0), holder, idle});
  EXPECT_NE(d.slot, 1u);  // self or the idle peer: a near tie
  // The same holder with a short queue is worth it.
  holder.load.queued = 1;
  holder.load.queued_prefill_tokens = 128;
  d = Choose({SelfCandidate(0), holder, idle});
  EXPECT_EQ(d.slot, 1u);
}

TEST_F(HearsayPolicyTest, APrefillGoesWhereItHoldsUpTheFewestRunningRequests) {
  // Two peers alike but for the requests running there: the prefill would hold up 30 decoders on
  // one and 2 on the other.
  Candidate crowded = PeerCandidate(1, 0.5, 0);
  crowded.load.running = 30;
  Candidate quiet = PeerCandidate(2, 0.5, 0);
  quiet.load.running = 2;
  Candidate self = SelfCandidate(0);
  self.load.running = 30;
  Decision d = Choose({self, crowded, quiet});
  EXPECT_EQ(d.slot, 2u);
  const std::span<const Price> prices = policy_.LastPrices();
  ASSERT_EQ(prices.size(), 3u);
  const double w = PolicyOptions{}.hearsay.interference_weight;
  EXPECT_NEAR(prices[1].interference_ms, w * 30 * prices[1].prefill_ms, 1e-9);
  EXPECT_NEAR(prices[2].interference_ms, w * 2 * prices[2].prefill_ms, 1e-9);
  // The expected time to first token leaves the interference out: it is what others pay.
  EXPECT_NEAR(d.expected_ttft_ms, prices[2].delay_ms + prices[2].wait_ms + prices[2].prefill_ms,
              1e-9);
  // Without the term the entry node serves it: no forward beats any peer's round trip.
  EXPECT_EQ(SlotWithInterference(0, {self, crowded, quiet}, 3), 0u);
}

TEST_F(HearsayPolicyTest, APrefillIsNotSentBehindALongQueueToSpareAFewDecoders) {
  // A cold prefill of ~70.6 ms: one peer has 63 ms of queue and nothing running, the other no
  // queue and 6 requests running. Holding up 6 decoders for the prefill (at weight 0.1: 0.6 ×
  // 70.6 = 42 ms) costs less than the queue; at 0.2 (85 ms) it cost more, and long prompts waited
  // behind queues of seconds on the Mooncake trace.
  Candidate queued = PeerCandidate(1, 0.5, 0);
  queued.load.queue_wait = FromMillis(63);
  Candidate running = PeerCandidate(2, 0.5, 0);
  running.load.running = 6;
  Candidate self = SelfCandidate(0);
  self.load.queue_wait = FromMillis(10000);
  EXPECT_EQ(Choose({self, queued, running}).slot, 2u);
  EXPECT_EQ(SlotWithInterference(0.2, {self, queued, running}, 1), 1u);
}

TEST_F(HearsayPolicyTest, UnderLoadAMissIsPricedWithTheWorkItAdds) {
  // The holder's queue (~65 ms) outweighs its saving (~48 ms) for this request's own TTFT.
  Candidate holder = PeerCandidate(1, 0.5, 1536);
  holder.load.queued = 1;
  holder.load.queued_prefill_tokens = 1800;
  Candidate other = PeerCandidate(2, 0.5, 0);
  Candidate self = SelfCandidate(0);
  // A calm cluster (only the holder is busy): the miss's extra work is a third as dear, and the
  // shorter wait wins.
  Decision d = Choose({self, holder, other});
  EXPECT_NE(d.slot, 1u);
  // Every member has prefill queued: the ~48 ms of extra prefill a miss adds is work the next
  // requests queue behind, so the holder is worth its wait.
  self.load.queued = 1;
  self.load.queued_prefill_tokens = 16;
  other.load.queued = 1;
  other.load.queued_prefill_tokens = 16;
  d = Choose({self, holder, other}, 2);
  EXPECT_EQ(d.slot, 1u);
  const std::span<const Price> prices = policy_.LastPrices();
  ASSERT_EQ(prices.size(), 3u);
  EXPECT_EQ(prices[1].work_ms, 0);  // the holder adds the least work
  EXPECT_NEAR(prices[0].work_ms, prices[0].prefill_ms - prices[1].prefill_ms, 1e-9);
  EXPECT_NEAR(d.expected_ttft_ms, prices[1].delay_ms + prices[1].wait_ms + prices[1].prefill_ms,
              1e-9);
  // Priced on this request's time to first token alone (work_weight 0), it is not.
  PolicyOptions ttft_only;
  ttft_only.hearsay.work_weight = 0;
  HearsayPolicy plain(ttft_only);
  const std::vector<Candidate> same = {self, holder, other};
  EXPECT_NE(plain.Choose(MakeRequest(chain_, 3), same, rng_).slot, 1u);
}

TEST_F(HearsayPolicyTest, OnASharedHostAMissIsPricedWithTheWorkItAddsToItsHostMates) {
  // The holder is prefilling (120 ms before a new request's turn, nothing queued); the others are
  // idle. For this request's own TTFT a miss here, ~48 ms of prefill dearer, is the faster one.
  Candidate holder = PeerCandidate(1, 0.5, 1536);
  holder.load.queue_wait = FromMillis(120);
  Candidate other = PeerCandidate(2, 0.5, 0);
  Candidate self = SelfCandidate(0);
  EXPECT_EQ(Choose({self, holder, other}).slot, 0u);
  // Alone in its group among the candidates, a member slows nobody else.
  holder.host_group = 7;
  EXPECT_EQ(Choose({self, holder, other}, 2).slot, 0u);
  // All on one host: the miss's extra prefill takes the cores every host-mate's next prefill
  // needs, whether or not one runs right now, so the holder is worth its wait.
  self.host_group = 7;
  other.host_group = 7;
  EXPECT_EQ(Choose({self, holder, other}, 3).slot, 1u);
  const std::span<const Price> prices = policy_.LastPrices();
  ASSERT_EQ(prices.size(), 3u);
  EXPECT_EQ(prices[1].work_ms, 0);  // the holder adds the least work
  EXPECT_NEAR(
      prices[0].work_ms,
      options_.hearsay.shared_host_work_weight * (prices[0].prefill_ms - prices[1].prefill_ms),
      1e-9);
  // With the weight at 0 the group changes nothing.
  PolicyOptions no_host;
  no_host.hearsay.shared_host_work_weight = 0;
  HearsayPolicy plain(no_host);
  const std::vector<Candidate> same = {self, holder, other};
  EXPECT_EQ(plain.Choose(MakeRequest(chain_, 4), same, rng_).slot, 0u);
}

TEST_F(HearsayPolicyTest, AReportedQueueDrainsAsTheReportAges) {
  Candidate holder = PeerCandidate(1, 0.5, 1536);
  holder.load.queue_wait = FromMillis(80);
  EXPECT_EQ(Choose({SelfCandidate(0), holder}).slot, 0u);
  holder.load.age = FromMillis(70);  // by now, at most ~10 ms of it is left
  EXPECT_EQ(Choose({SelfCandidate(0), holder}).slot, 1u);
  PolicyOptions steady;
  steady.hearsay.reported_wait_drain = 0;               // assume others keep it full
  steady.hearsay.queue_memory = std::chrono::hours(1);  // and that the report stays true
  HearsayPolicy policy(steady);
  EXPECT_EQ(policy.Choose(MakeRequest(chain_), std::vector{SelfCandidate(0), holder}, rng_).slot,
            0u);
}

TEST_F(HearsayPolicyTest, TrustsTheMembersOwnQueueWaitEstimate) {
  Candidate holder = PeerCandidate(1, 0.5, 1536);
  holder.load.queued = 1;  // the counts alone would say a short queue
  holder.load.queued_prefill_tokens = 64;
  holder.load.queue_wait = FromMillis(80);  // but the engine knows better (say, KV is full)
  EXPECT_EQ(Choose({SelfCandidate(0), holder}).slot, 0u);
  holder.load.queue_wait = FromMillis(5);
  EXPECT_EQ(Choose({SelfCandidate(0), holder}).slot, 1u);
}

TEST_F(HearsayPolicyTest, BusyHolderLosesCacheCredit) {
  // Queue wait priced alone would still favour the holder; the busy discount tips it.
  PolicyOptions options;
  options.hearsay.busy_wait_ms = 50;
  HearsayPolicy policy(options);
  const auto long_chain = MakeChain(2, 0, 1024, 1024);  // 16384 tokens
  Candidate holder = PeerCandidate(1, 0.5, 16000);
  holder.load.queued = 4;
  holder.load.queued_prefill_tokens = 11600;  // ~400 ms of queue; self's cold prefill ~700 ms
  const auto request = MakeRequest(long_chain);
  Rng rng(1);
  EXPECT_EQ(policy.Choose(request, std::vector{SelfCandidate(0), holder}, rng).slot, 0u);
  PolicyOptions no_discount;
  no_discount.hearsay.busy_wait_ms = 1e9;
  HearsayPolicy lenient(no_discount);
  EXPECT_EQ(lenient.Choose(request, std::vector{SelfCandidate(0), holder}, rng).slot, 1u);
}

// One CPU cluster described two ways: a cost model 10x the reference hardware's per token with
// members at its speed (the llama demo's nodes, priced with llama-tiny-cpu), or the reference
// model with members measured 10x slower. The same times, so the same decisions at every queue
// wait: the busy cut is on the reference hardware, not on whichever preset prices the node.
TEST_F(HearsayPolicyTest, BusyWaitIsOnTheReferenceHardware) {
  const auto chain = MakeChain(2, 0, 1024, 1024);  // 16,384 tokens
  const auto choose = [&](bool slow_model, double wait_ms) {
    PolicyOptions options;
    options.hearsay.busy_wait_ms = 50;
    double scale = 10;
    if (slow_model) {
      PrefillCostModel& m = options.cost;
      for (double* k : {&m.t0_ms, &m.a_ms_per_token, &m.b_ms_per_token2, &m.d1_ms_per_seq,
                        &m.d2_ms_per_token}) {
        *k *= 10;
      }
      scale = 1;
    }
    HearsayPolicy policy(options);
    Candidate self = SelfCandidate(0);
    self.cost_scale = scale;
    Candidate holder = PeerCandidate(1, 0.5, 16000);
    holder.cost_scale = scale;
    holder.load.queue_wait = FromMillis(wait_ms);
    Rng rng(1);
    return policy.Choose(MakeRequest(chain), std::vector{self, holder}, rng).slot;
  };
  std::set<Slot> chosen;
  for (const double wait_ms : {100.0, 300.0, 1000.0, 2000.0, 3000.0, 5000.0, 10000.0}) {
    EXPECT_EQ(choose(true, wait_ms), choose(false, wait_ms)) << wait_ms << " ms";
    chosen.insert(choose(false, wait_ms));
  }
  EXPECT_EQ(chosen.size(), 2u);  // the sweep crosses from the holder to serving here
}

TEST_F(HearsayPolicyTest, BusyWaitIsMeasuredAtTheMembersOwnSpeed) {
  // A CPU cluster 100x slower than the cost model: every time is 100x longer, and so is the
  // queue wait at which a holder starts to lose credit. The same decisions as on fast hardware.
  for (const double scale : {1.0, 100.0}) {
    Candidate self = SelfCandidate(0);
    self.cost_scale = scale;
    Candidate holder = PeerCandidate(1, 0.01, 1536);
    holder.cost_scale = scale;
    holder.load.queue_wait = FromMillis(12 * scale);  // a quarter of the ~48 (x scale) ms saving
    EXPECT_EQ(Choose({self, holder}).slot, 1u) << "scale " << scale;
    holder.load.queue_wait = FromMillis(60 * scale);  // more than the saving: serve here
    EXPECT_EQ(Choose({self, holder}).slot, 0u) << "scale " << scale;
  }
}

TEST_F(HearsayPolicyTest, SkipsOverloadedUnlessAllAre) {
  Candidate holder = PeerCandidate(1, 0.5, 2000);
  holder.load.overloaded = true;
  std::vector<Candidate> candidates = {SelfCandidate(0), holder};
  EXPECT_EQ(Choose(candidates).slot, 0u);
  candidates[0].load.overloaded = true;
  const Decision d = Choose(candidates);
  EXPECT_EQ(d.slot, 1u);
  EXPECT_EQ(d.reason, Reason::kAllOverloaded);
}

// The members of a sibling burst test: self and 8 near, idle peers, all reports 500 ms stale, so
// only the ledger and the leases know what this node just sent.
std::vector<Candidate> StaleCluster() {
  std::vector<Candidate> candidates = {SelfCandidate(0)};
  for (Slot s = 1; s <= 8; ++s) candidates.push_back(PeerCandidate(s, 0.1));
  for (Candidate& c : candidates) c.load.age = FromMillis(500);
  return candidates;
}

std::set<Slot> RunSiblingBurst(HearsayPolicy& policy, Rng& rng) {
  const auto candidates = StaleCluster();
  std::set<Slot> used;
  // Six siblings sharing 120 of 128 blocks, 40 ms apart: faster than a cold prefill (~70 ms),
  // slower than a warm one (~20 ms), so the holder's queue stays short.
  for (uint64_t v = 0; v < 6; ++v) {
    const auto chain = MakeChain(3, v, 120, kBlocks);
    const RouteRequest request = MakeRequest(chain, v + 1, At(40.0 * double(v)));
    const Decision d = policy.Choose(request, candidates, rng);
    policy.OnSent(d.slot, request);
    used.insert(d.slot);
  }
  return used;
}

TEST_F(HearsayPolicyTest, LeaseLandsASiblingBurstOnOneMember) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    HearsayPolicy policy(options_);
    Rng rng(seed);
    EXPECT_EQ(RunSiblingBurst(policy, rng).size(), 1u) << "seed " << seed;
  }
}

TEST_F(HearsayPolicyTest, WithoutLeasesASiblingBurstScatters) {
  PolicyOptions options;
  options.hearsay.lease_ttl = Duration::zero();
  HearsayPolicy policy(options);
  Rng rng(1);
  EXPECT_GT(RunSiblingBurst(policy, rng).size(), 2u);
}

TEST_F(HearsayPolicyTest, ARefusedForwardAddsNoQueueAtTheMember) {
  // Reports 500 ms stale: only the ledger knows what this node sent since. A forward of a long
  // prompt to peer 1 makes it look busy...
  std::vector<Candidate> candidates = StaleCluster();
  candidates.resize(3);
  const auto long_chain = MakeChain(5, 0, 4 * kBlocks, 4 * kBlocks);
  RouteRequest big = MakeRequest(long_chain, 7, At(0));
  policy_.OnSent(1, big);
  const Decision d = Choose(candidates, 8, 1);
  const double busy_wait = policy_.LastPrices()[1].wait_ms;
  EXPECT_GT(busy_wait, 100.0);
  EXPECT_NE(d.slot, 1u);
  // ... until the peer refuses it (its cache cannot hold the prompt): then it is idle again.
  policy_.OnAbandoned(1, 7);
  Choose(candidates, 9, 1);
  EXPECT_EQ(policy_.LastPrices()[1].wait_ms, policy_.LastPrices()[2].wait_ms);
  EXPECT_LT(policy_.LastPrices()[1].wait_ms, 1.0);
}

TEST_F(HearsayPolicyTest, NoLeaseToAMemberWhoseCacheCannotHoldThePrompt) {
  // Peer 1 alone is idle and near; its cache holds 1024 tokens, less than the 2048-token prompt.
  Candidate busy_self = SelfCandidate(0);
  busy_self.load.queued = 4;
  busy_self.load.queued_prefill_tokens = 4 * 2048;
  Candidate small = PeerCandidate(1, 0.1);
  small.load.kv_capacity_tokens = 1024;
  const std::vector<Candidate> candidates = {busy_self, small};
  const RouteRequest request = MakeRequest(chain_, 1, At(0));
  const Decision d = policy_.Choose(request, candidates, rng_);
  ASSERT_EQ(d.slot, 1u);
  policy_.OnSent(d.slot, request);
  // A sibling sees no leased prefix at peer 1 (it refuses the prompt, so it will not cache it).
  Choose(candidates, 2, 1);
  EXPECT_EQ(policy_.LastPrices()[1].credit_tokens, 0.0);
  // With room for the prompt, the same send leases it.
  HearsayPolicy roomy_policy(options_);
  std::vector<Candidate> roomy = candidates;
  roomy[1].load.kv_capacity_tokens = 4096;
  ASSERT_EQ(roomy_policy.Choose(request, roomy, rng_).slot, 1u);
  roomy_policy.OnSent(1, request);
  roomy_policy.Choose(MakeRequest(chain_, 2, At(1)), roomy, rng_);
  EXPECT_GT(roomy_policy.LastPrices()[1].credit_tokens, 1000.0);
}

TEST_F(HearsayPolicyTest, NearEqualPeersAreDrawnAtRandomAndATieWithSelfIsServedHere) {
  // Self busy, 8 idle peers 0.1 ms away: their costs are within 5% of each other. Many entry
  // nodes with this same view (no OnSent between them) must not all pick the same peer.
  Candidate busy_self = SelfCandidate(0);
  busy_self.load.queued = 4;
  busy_self.load.queued_prefill_tokens = 4 * 2048;
  std::vector<Candidate> candidates = {busy_self};
  for (Slot s = 1; s <= 8; ++s) candidates.push_back(PeerCandidate(s, 0.1));
  std::map<Slot, int> hits;
  for (uint64_t id = 1; id <= 800; ++id) {
    const Decision d = Choose(candidates, id);
    EXPECT_EQ(d.reason, Reason::kNearTie);
    ++hits[d.slot];
  }
  ASSERT_EQ(hits.size(), 8u);
  EXPECT_EQ(hits.count(0), 0u);
  for (const auto& [slot, n] : hits) EXPECT_NEAR(n, 100, 40) << slot;
  // An idle self ties with them: served here, no forward.
  candidates[0] = SelfCandidate(0);
  for (uint64_t id = 1000; id <= 1050; ++id) {
    const Decision d = Choose(candidates, id);
    EXPECT_EQ(d.slot, 0u);
    EXPECT_EQ(d.reason, Reason::kNearTie);
  }
}

TEST_F(HearsayPolicyTest, SpreadsABurstOfUnrelatedRequestsOverAStaleView) {
  const auto candidates = StaleCluster();
  std::map<Slot, int> hits;
  for (uint64_t id = 1; id <= 18; ++id) {
    const auto chain = MakeChain(100 + id, 0, 0, kBlocks);  // nothing shared
    const RouteRequest request = MakeRequest(chain, id, At(0.01 * double(id)));
    const Decision d = policy_.Choose(request, candidates, rng_);
    policy_.OnSent(d.slot, request);
    ++hits[d.slot];
  }
  ASSERT_EQ(hits.size(), 9u);
  for (const auto& [slot, n] : hits) EXPECT_EQ(n, 2) << slot;
}

TEST_F(HearsayPolicyTest, LearnsToDistrustAPeerWhoseEstimatesWereWrong) {
  const std::vector<Candidate> candidates = {SelfCandidate(0), PeerCandidate(1, 5, 1536),
                                             PeerCandidate(2, 5, 1536)};
  Decision d = Choose(candidates);
  EXPECT_NE(d.slot, 0u);  // both holders look ~38 ms better than self
  // Peer 1's engine keeps finding nothing cached; peer 2's finds what was promised.
  for (uint64_t id = 1; id <= 20; ++id) {
    policy_.OnOutcome(
        {.slot = 1, .request_id = id, .estimated_cached_tokens = 1536, .actual_cached_tokens = 0});
    policy_.OnOutcome({.slot = 2,
                       .request_id = id,
                       .estimated_cached_tokens = 1536,
                       .actual_cached_tokens = 1536});
  }
  EXPECT_LT(policy_.confidence(1), 0.2);
  EXPECT_GE(policy_.confidence(1), options_.hearsay.min_confidence);
  EXPECT_DOUBLE_EQ(policy_.confidence(2), 1.0);
  for (uint64_t id = 1; id <= 50; ++id) EXPECT_EQ(Choose(candidates, id).slot, 2u);
  // Without the truthful peer, the liar no longer beats computing locally.
  EXPECT_EQ(Choose({candidates[0], candidates[1]}).slot, 0u);
  // A restart wipes what was learned.
  policy_.OnMemberReset(1);
  EXPECT_DOUBLE_EQ(policy_.confidence(1), 1.0);
}

TEST_F(HearsayPolicyTest, AMemberWhoseClaimsAreNotTrustedIsDiscounted) {
  // Believed, the peer's claimed cache wins the request.
  Candidate peer = PeerCandidate(1, 10, 1536);
  EXPECT_EQ(Choose({SelfCandidate(0), peer}).slot, 1u);
  // Its answers delivered a fifth of its claimed cache: its credit shrinks and self wins.
  peer.cache_trust = 0.2;
  Decision d = Choose({SelfCandidate(0), peer}, 2);
  EXPECT_EQ(d.slot, 0u);
  // Its answers took four times longer than its claims promised: its prefill is priced four
  // times higher (and its claimed queue blended with the typical member's), and self wins too.
  peer.cache_trust = 1;
  peer.time_trust = 0.25;
  d = Choose({SelfCandidate(0), peer}, 3);
  EXPECT_EQ(d.slot, 0u);
  // The claimed time of a chosen peer is what its claims alone promise, without the discount.
  peer.time_trust = 0.9;
  d = Choose({SelfCandidate(0), peer}, 4);
  ASSERT_EQ(d.slot, 1u);
  EXPECT_NEAR(d.claimed_ttft_ms,
              20 + options_.hearsay.forward_overhead_ms + options_.cost.PrefillMs(512, 1536), 1e-9);
  EXPECT_GT(d.expected_ttft_ms, d.claimed_ttft_ms);
}

TEST_F(HearsayPolicyTest, AnIdleClaimThatIsNotBelievedIsPricedAsTheTypicalMember) {
  // Self and one peer report a queue and a running batch; a third peer claims an idle engine.
  Candidate self = SelfCandidate(0);
  self.load.queued = 1;
  self.load.queue_wait = FromMillis(80);
  self.load.running = 4;
  Candidate busy = PeerCandidate(1, 0.5);
  busy.load.queued = 1;
  busy.load.queue_wait = FromMillis(80);
  busy.load.running = 4;
  Candidate idle = PeerCandidate(2, 0.5);
  // Believed, the idle claim wins.
  EXPECT_EQ(Choose({self, busy, idle}).slot, 2u);
  // Not believed (its answers took twenty times longer than claimed): a claimed wait of 0 divided
  // by any discount is still 0, so its claims count for time_trust and the typical believed
  // member's wait and batch for the rest. It no longer wins.
  idle.time_trust = 0.05;
  const Decision d = Choose({self, busy, idle}, 2);
  EXPECT_NE(d.slot, 2u);
  const std::span<const Price> prices = policy_.LastPrices();
  ASSERT_EQ(prices.size(), 3u);
  const double typical = std::max(prices[0].wait_ms, prices[1].wait_ms);
  EXPECT_GT(typical, 0);
  EXPECT_NEAR(prices[2].wait_ms, 0.95 * typical, 1e-6);
  EXPECT_NEAR(prices[2].interference_ms,
              PolicyOptions{}.hearsay.interference_weight * 0.95 * 4 * prices[2].prefill_ms, 1e-6);
}

TEST_F(HearsayPolicyTest, TheEntryNodesOwnRecordOfADiscountedMembersQueueIsAFloorOnItsWait) {
  // A peer holding the prefix, with an idle engine: worth the forward.
  Candidate idle = PeerCandidate(1, 0.5, 1536);
  EXPECT_EQ(Choose({SelfCandidate(0), idle}).slot, 1u);
  // Believed in full, its claims stand whatever this node's record shows.
  idle.hidden_wait_ms = 500;
  EXPECT_EQ(Choose({SelfCandidate(0), idle}, 2).slot, 1u);
  // Discounted (its answers ran late), the wait this node's own forwards show is a floor: they are
  // 500 ms overdue.
  idle.time_trust = 0.1;
  EXPECT_EQ(Choose({SelfCandidate(0), idle}, 3).slot, 0u);
  EXPECT_NEAR(policy_.LastPrices()[1].wait_ms, 500, 1e-9);
  // A mild discount scales its claimed wait (0 here) as a slow answer now and then would.
  idle.time_trust = 0.8;
  Choose({SelfCandidate(0), idle}, 4);
  EXPECT_EQ(policy_.LastPrices()[1].wait_ms, 0);
}

TEST_F(HearsayPolicyTest, TheQueueEntryNodesReportAtAMemberIsAFloorOnItsWaitWhatEverItClaims) {
  // A peer holding the prefix, with an idle engine, believed in full: worth the forward.
  Candidate idle = PeerCandidate(1, 0.5, 1536);
  EXPECT_EQ(Choose({SelfCandidate(0), idle}).slot, 1u);
  // The entry nodes report 500 ms of their work there that its reports leave out.
  idle.shared_wait_ms = 500;
  EXPECT_EQ(Choose({SelfCandidate(0), idle}, 2).slot, 0u);
  EXPECT_NEAR(policy_.LastPrices()[1].wait_ms, 500, 1e-9);
  // A longer queue of its own stands.
  idle.load.queue_wait = FromMillis(800);
  idle.load.queued = 3;
  Choose({SelfCandidate(0), idle}, 3);
  EXPECT_GT(policy_.LastPrices()[1].wait_ms, 500);
  // Self's view is exact.
  Candidate self = SelfCandidate(0);
  self.shared_wait_ms = 500;
  Choose({self, PeerCandidate(1, 0.5, 1536)}, 4);
  EXPECT_EQ(policy_.LastPrices()[0].wait_ms, 0);
}

TEST_F(HearsayPolicyTest, StaleCacheViewEarnsLessCredit) {
  Candidate fresh = PeerCandidate(1, 1, 1536);
  Candidate stale = PeerCandidate(2, 1, 1536);
  stale.cache_age = std::chrono::seconds(5);  // one half-life: half the credit
  for (uint64_t id = 1; id <= 20; ++id) {
    EXPECT_EQ(Choose({SelfCandidate(0), fresh, stale}, id).slot, 1u);
  }
}

TEST_F(HearsayPolicyTest, PricesSlowHardware) {
  Candidate slow = PeerCandidate(1, 1, 1536);
  slow.cost_scale = 4;  // consumer GPU: its cache saves less than self's compute
  EXPECT_EQ(Choose({SelfCandidate(0), slow}).slot, 0u);
  slow.cost_scale = 1;
  EXPECT_EQ(Choose({SelfCandidate(0), slow}).slot, 1u);
}

TEST_F(HearsayPolicyTest, AnAgedQueueReportRevertsToTheMembersMeanWait) {
  Candidate holder = PeerCandidate(1, 0.5, 1536);
  // Many fresh reports of a 60 ms queue teach the policy that this member is usually busy.
  for (int i = 0; i < 40; ++i) {
    holder.load.queue_wait = FromMillis(60);
    holder.load.age = FromMillis(40 - i);  // each younger than the last: a new report
    Choose({SelfCandidate(0), holder}, 1 + i);
  }
  // A fresh report of an empty queue is believed: the holder's cache wins.
  holder.load.queue_wait = FromMillis(0);
  holder.load.age = FromMillis(0);
  EXPECT_EQ(Choose({SelfCandidate(0), holder}, 100).slot, 1u);
  // The same report a second later says little: the member's usual ~60 ms wait is expected,
  // more than the ~48 ms its cache saves, where draining alone would still price it at zero.
  holder.load.age = FromMillis(1000);
  EXPECT_EQ(Choose({SelfCandidate(0), holder}, 101).slot, 0u);
  PolicyOptions drain_only;
  drain_only.hearsay.queue_memory = std::chrono::hours(1);
  HearsayPolicy forgetful(drain_only);
  EXPECT_EQ(
      forgetful.Choose(MakeRequest(chain_, 102, At(0)), std::vector{SelfCandidate(0), holder}, rng_)
          .slot,
      1u);
}

TEST_F(HearsayPolicyTest, LearnsWhereAPeersCacheEndsBetweenLandmarks) {
  // The landmarks prove 512 tokens and allow up to 2047: halfway is assumed at first.
  Candidate peer = PeerCandidate(1, 1, 512);
  peer.cached_tokens_max = 2047;
  EXPECT_DOUBLE_EQ(policy_.fill(1), options_.hearsay.initial_fill);
  Decision d = Choose({SelfCandidate(0), peer}, 1);
  ASSERT_EQ(d.slot, 1u);
  EXPECT_EQ(d.estimated_cached_tokens, 512u + uint32_t(0.5 * (2047 - 512)));
  // Its engine keeps finding the whole gap cached: the estimate climbs to the upper bound.
  for (uint64_t id = 1; id <= 30; ++id) {
    d = Choose({SelfCandidate(0), peer}, id);
    ASSERT_EQ(d.slot, 1u);
    policy_.OnOutcome({.slot = 1,
                       .request_id = id,
                       .estimated_cached_tokens = d.estimated_cached_tokens,
                       .actual_cached_tokens = 2047});
  }
  EXPECT_GT(policy_.fill(1), 0.99);
  EXPECT_GE(Choose({SelfCandidate(0), peer}, 99).estimated_cached_tokens, 2030u);
  // A lesson with a request id it did not send there teaches nothing.
  policy_.OnOutcome({.slot = 1, .request_id = 500, .actual_cached_tokens = 0});
  EXPECT_GT(policy_.fill(1), 0.99);
  // Another peer that keeps proving only its landmarks is priced at them.
  Candidate low = PeerCandidate(2, 1, 512);
  low.cached_tokens_max = 2047;
  for (uint64_t id = 200; id < 230; ++id) {
    d = Choose({SelfCandidate(0), low}, id);
    policy_.OnOutcome({.slot = 2,
                       .request_id = id,
                       .estimated_cached_tokens = d.estimated_cached_tokens,
                       .actual_cached_tokens = 512});
  }
  EXPECT_LT(policy_.fill(2), 0.01);
  policy_.OnMemberReset(2);
  EXPECT_DOUBLE_EQ(policy_.fill(2), options_.hearsay.initial_fill);
}

// Entry nodes that cannot tell members apart (every view idle and empty, as when traffic starts)
// agree on one member per prompt, whatever their own slot numbering and whichever of them asks:
// the prompt's home. Other prompts have other homes.
TEST_F(HearsayPolicyTest, NearTiesGoToThePromptsHomeOnEveryEntryNode) {
  const std::vector<std::string> names = {"n0", "n1", "n2", "n3"};
  // Entry node e sees itself in slot 0 and the others in slots 1..3, in its own order.
  auto view = [&](size_t entry) {
    std::vector<Candidate> v;
    for (size_t k = 0; k < names.size(); ++k) {
      const size_t member = (entry + k) % names.size();
      Candidate c = k == 0 ? SelfCandidate(0) : PeerCandidate(Slot(k), 0.1);
      c.node_id = names[member];
      v.push_back(c);
    }
    return v;
  };
  std::set<std::string> homes;
  for (uint64_t family = 1; family <= 16; ++family) {
    const std::vector<prefix::BlockKey> chain = MakeChain(family, 0, 8, 8);
    std::set<std::string> chosen;
    for (size_t entry = 0; entry < names.size(); ++entry) {
      HearsayPolicy policy(options_);
      const std::vector<Candidate> candidates = view(entry);
      const Decision d = policy.Choose(MakeRequest(chain, family), candidates, rng_);
      ASSERT_NE(d.slot, kNoSlot);
      EXPECT_EQ(d.reason, Reason::kNearTie);
      chosen.insert(std::string(candidates[d.slot].node_id));
    }
    EXPECT_EQ(chosen.size(), 1u) << "family " << family;
    homes.insert(*chosen.begin());
  }
  EXPECT_GE(homes.size(), 3u);
  // Without homes (or names), the entry node serves a tie it is part of.
  PolicyOptions no_home;
  no_home.hearsay.home_key_depth = 0;
  HearsayPolicy local(no_home);
  EXPECT_EQ(local.Choose(MakeRequest(MakeChain(1, 0, 8, 8)), view(2), rng_).slot, 0u);
}

// A report of a long queue stays informative for about that queue's own wait: a 400 ms queue
// reported 200 ms ago is priced near what is left of it, not near the member's long-run mean.
TEST_F(HearsayPolicyTest, ALongReportedQueueIsRememberedForItsOwnWait) {
  Candidate busy = PeerCandidate(1, 1);
  busy.node_id = "n1";
  busy.load.queue_wait = FromMillis(400);
  busy.load.age = FromMillis(200);
  auto wait_ms = [&](const PolicyOptions& o) {
    HearsayPolicy policy(o);
    policy.Choose(MakeRequest(chain_), std::vector{SelfCandidate(0), busy}, rng_);
    return policy.LastPrices()[1].wait_ms;
  };
  // Drained: 400 - 201 = 199 ms; long-run mean after one report: 40 ms.
  EXPECT_GT(wait_ms(options_), 130);
  PolicyOptions short_memory;
  short_memory.hearsay.queue_memory_per_wait = 0;
  EXPECT_LT(wait_ms(short_memory), 45);
}

}  // namespace
}  // namespace hearsay::route
