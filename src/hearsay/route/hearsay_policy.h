// `hearsay`: this project's policy. Sends each request where its expected time to first token,
// plus the price of the work it adds under load, is lowest (ttft_estimate.h):
//
//   cost(c) = delay(c) + queue_wait(c) + prefill(prompt - credit(c)) + work(c) + interference(c)
//
// - delay: 0 for self, 2 × one-way delay + forward overhead for a peer (request out, first token
//   back), so when the network is slow it serves locally rather than forward to a cache.
// - queue_wait: from the member's last load report, drained for the report's age and the trip
//   (reported_wait_drain) and, as it ages, blended into the member's long-run mean reported wait
//   (queue_memory: a queue forgets its state within a few service times), plus the backlog of what
//   this node sent it since (SentLedger), so a stale view neither shuns a member that was briefly
//   busy nor sends every request to the same "idle" one; queue wait is what breaks affinity
//   hotspots. A long queue is remembered longer (queue_memory_per_wait): it takes about its own
//   wait to turn over.
// - credit(c): the tokens c is believed to hold, trusted by
//     exact (self's own radix tree, confidence 1), or, for a gossiped view that proves
//     cached_tokens and allows up to cached_tokens_max (landmark gaps), the point fill[c] of the
//     way between them (learned per member from each answer's actual cached tokens),
//     confidence[c] (EWMA of actual/estimated cached tokens from OnOutcome)
//       × 1 / (1 + cache_age / stale_half_life)  (gossip staleness),
//   raised to lease_confidence × the leased depth when this node recently sent a prompt with a
//   shared prefix to c (LeaseTable, lease_ttl; no lease for a prompt larger than c's whole
//   cache, which c refuses), and cut by busy_wait_ms / queue_wait when the
//   holder's queue wait exceeds busy_wait_ms (a busy LRU cache is likely to evict the prefix).
//
// - work(c): under load, the price of the extra work a miss adds, which later requests queue
//   behind: work_weight × pressure × (prefill(c) − the least prefill any candidate offers), where
//   pressure is the share of candidates with prefill backlog. A calm cluster absorbs extra work
//   and the term fades; when the engines are the bottleneck a cache hit is not traded for a
//   slightly shorter queue. (On llama.cpp with this term off, hearsay's hit rate fell to 0.6-0.9
//   of the paper policy's; docs/benchmarks.md.) Members whose engines share a host's processors
//   (Candidate::host_group, with another member among the candidates) slow each other whether or
//   not anything queues: the miss's prefill takes the cores every host-mate's next prefill needs,
//   so for them the weight is at least shared_host_work_weight, whatever the host-mates are
//   doing when the request is priced.
//
// - interference(c): a prefill shares the engine's iterations with the requests running there,
//   each of which waits for it before its next token: interference_weight × running(c) ×
//   prefill(c). A long prefill then goes where it holds up the fewest decoders. (On the Mooncake
//   trace, whose answers run to hundreds of tokens, it took hearsay's mean TTFT from 3.7% above
//   the oracle's to 6.6% below, and its end-to-end latency below the oracle's; docs/benchmarks.md.)
//
// - trust: a member whose answers have not matched its claims (node/peer_trust.h) has its credit
//   scaled by Candidate::cache_trust and its prefill divided by Candidate::time_trust, so a member
//   that lies about its cache or its speed is discounted in proportion to how much it overclaims.
//   A mild discount (time_trust >= 0.5, which a few late answers of an honest member give)
//   divides its claimed queue wait too. Below it, dividing is not enough: a claimed wait of 0
//   stays 0 under any discount, and a member that claims an idle engine would keep drawing every
//   short prompt. Its claimed wait and running batch then count for time_trust, and for the rest
//   the larger of the claim and the typical believed member's (the median over self and the
//   members with time_trust 1) or Candidate::hidden_wait_ms (the wait the entry node's own
//   forwards there show), which is also a floor on its wait. Self is never discounted (its view
//   is exact). Every peer's wait is floored by Candidate::shared_wait_ms, the work the entry
//   nodes together report outstanding there where the member's own reports leave it out: the
//   queue a member that claims an idle engine hides.
//
// Members that advertise overload are skipped unless every usable member does. Costs within
// max(near_tie_fraction × best, near_tie_ms) of the best are a tie, and a tie goes to the prompt's
// home among the tied: the first of a rendezvous ranking of the members' names by one of the
// prompt's block keys (home_key_depth), which every entry node computes alike. A central router
// sends a prefix to one worker because it sees every request; entry nodes that share a view they
// cannot tell members apart by (when traffic starts, every report says idle and no cache is
// gossiped yet) agree on the home instead of each choosing its own, and a bounce walks the same
// ranking. (Without a home, a tie the entry node is part of is served there, else drawn
// uniformly among the tied peers.) The decision also carries the best other cost
// (Decision::fallback_ttft_ms), which the node hands a peer it forwards to so that the peer can
// bounce the request back when its exact queue makes it slower (node::NodeOptions). OnSent()
// records the dispatch (ledger and lease); OnAbandoned() takes a dispatch the member refused or
// failed out of the ledger (it adds no work there: on the Mooncake trace, prompts larger than
// every cache are refused and retried elsewhere, and each refusal used to count as seconds of
// phantom queue at the member for up to sent_horizon); OnOutcome() updates the member's
// confidence.
//
// Cost: Choose() is O(candidates + log(chain)) and allocates only when the candidate count grows
// past its previous maximum; OnSent() does O(log chain) lease writes (~57 for 512 blocks).
//
// Thread-safety: none; owned by one node's core.
#pragma once

#include <memory>
#include <vector>

#include "hearsay/route/lease_table.h"
#include "hearsay/route/policy.h"
#include "hearsay/route/policy_options.h"
#include "hearsay/route/sent_ledger.h"

namespace hearsay::route {

class HearsayPolicy final : public Policy {
 public:
  // `options` must be valid (PolicyOptions::Validate); MakePolicy() checks it.
  explicit HearsayPolicy(const PolicyOptions& options);

  std::string_view name() const override { return "hearsay"; }

  void OnSent(Slot slot, const RouteRequest& request) override;
  void OnOutcome(const Outcome& outcome) override;
  void OnAbandoned(Slot slot, uint64_t request_id) override;
  void OnMemberReset(Slot slot) override;
  std::span<const Price> LastPrices() const override { return prices_; }

  // The learned confidence in `slot`'s cache estimates, in [min_confidence, 1] (1 if unknown).
  double confidence(Slot slot) const;
  // The learned fill of `slot`'s landmark gaps, in [0, 1] (initial_fill if unknown).
  double fill(Slot slot) const;

 protected:
  Decision DoChoose(const RouteRequest& request, std::span<const Candidate> candidates, int self,
                    Rng& rng) override;

 private:
  PrefillCostModel cost_;
  HearsayParams params_;
  Duration horizon_;
  SentLedger ledger_;
  LeaseTable leases_;
  // Invariants: every value is in [params_.min_confidence, 1]; slots past the end have 1.
  std::vector<double> confidence_;
  // Per member, where its cache ends between Candidate::cached_tokens (0) and
  // cached_tokens_max (1): an EWMA of outcomes. Invariants: values in [0, 1]; slots past the end
  // have params_.initial_fill.
  std::vector<double> fill_;
  // The landmark gap of recent forwards, so OnOutcome() can place the actual cached tokens in it.
  // Direct-mapped by request id; a collision only loses one lesson.
  struct Gap {
    uint64_t request_id = 0;
    Slot slot = kNoSlot;
    uint32_t lower = 0;
    uint32_t upper = 0;
  };
  static constexpr size_t kGaps = 1024;
  std::vector<Gap> gaps_;
  // Per member, the long-run mean of its reported queue waits and the age of the report last
  // seen (a smaller age means a new report).
  struct WaitMemory {
    bool seen = false;
    Duration age{0};
    double mean_ms = 0;
  };
  std::vector<WaitMemory> waits_;

  // The index of the prompt's home among the candidates with pred(c, i) true: the first in a
  // rendezvous ranking of their names by the prompt's key at HearsayParams::home_key_depth, the
  // same on every entry node. -1 when there is none (depth 0, no key, no named candidate).
  template <typename Pred>
  int HomeAmong(const RouteRequest& request, std::span<const Candidate> candidates,
                Pred pred) const;
  // The expected queue wait at peer `c` from a report that `drained_ms` prices as of now:
  // blended into the member's mean wait as the report ages (HearsayParams::queue_memory).
  double StaleWaitMs(const Candidate& c, double drained_ms);
  // Applies time_trust to the queue wait and running batch in prices_ of each member whose load
  // claims are not believed in full (see the trust paragraph above).
  void ApplyTimeTrust(std::span<const Candidate> candidates);
  std::vector<double> typical_;
  // Per-candidate prices of the current Choose() (cost NaN when skipped), reused across calls,
  // and the cached tokens believed held before discounts.
  std::vector<Price> prices_;
  std::vector<double> estimates_;
  // Per candidate, its queue wait and credited tokens before the trust discounts.
  struct Believed {
    double wait_ms = 0;
    double credit_tokens = 0;
  };
  std::vector<Believed> believed_;
  // Per host group among the priced candidates, how many members it has: one entry per grouped
  // candidate as they are priced, then sorted and merged by group.
  struct HostMembers {
    uint64_t group = 0;
    uint32_t members = 0;
  };
  std::vector<HostMembers> hosts_;
  void MergeHosts();
  // Whether `group` (not 0) has another priced member besides the one asking.
  bool SharesHost(uint64_t group) const;
  // The last decision, so OnSent() can record the tokens expected to be computed there.
  uint64_t last_id_ = 0;
  Slot last_slot_ = kNoSlot;
  uint32_t last_new_tokens_ = 0;
  // False when the chosen member's cache cannot hold the prompt: it will refuse it, so no lease.
  bool last_fits_ = true;
  double last_service_ms_ = 0;
};

}  // namespace hearsay::route
