// PeerTrust: how far an entry node believes each member's claims, learned from what the member
// then delivers.
//
// A member holds the cluster key, so gossip cannot stop it from claiming any cache and any load.
// What it cannot fake is the answer: every request this node routes ends with the serving
// engine's own cached-token count and a first token whose time this node measures. So for each
// member (self included) the node keeps a window of samples, one per request it routed there:
// the cached tokens the policy believed the member held (its claim) against the cached tokens
// the answer reported, and the time to first token the policy expected from the member's claims
// against the time the first token took.
//
// Per member, over the samples of the last `window` (at most max_samples of them):
//   delivery    = Σ actual cached / Σ claimed cached (samples that claimed any), capped at 1;
//   ttft_ratio  = the median of actual / expected time to first token (robust to a few slow
//                 answers).
// A request still waiting for its first token longer than its claims promised is evidence too,
// and the earliest there is: a member that lies about its load builds a queue in the time its
// first answers take to come back. So every forward is also registered when sent (Sent), and at
// each Expire() an outstanding one whose wait already exceeds its expected time counts as a sample
// with ratio elapsed / expected (a lower bound of the truth).
// Honest members are not perfect either (a gossip view is a round old, caches evict, queues move),
// so each is judged against the cluster's typical member: the median, over every member with at
// least min_samples samples, of its delivery and of its ttft_ratio (the baseline; a minority of
// liars cannot move it, and it is bounded, so neither can a majority). Then
//   cache_trust = clamp(delivery / (cache_tolerance × baseline delivery), floor, 1)
//   time_trust  = clamp(ttft_tolerance × baseline ttft_ratio / ttft_ratio, floor, 1)
// each raised to min(1, samples / full_samples). So a member is discounted in
// proportion to how much it overclaims beyond the tolerance, and one that stops recovers as its
// honest samples replace the old ones, or when the old ones leave the window (a discounted member
// gets little traffic, so the window's end is what brings it back on probation).
//
// Samples are kept by member id, across restarts: a new generation does not wash a record.
// Time is injected (every call takes `now`); nothing reads a clock.
//
// Cost: Record() is O(max_samples + members); Of() is O(1); Expire() is O(members) plus the
// recomputation of members whose samples expired. Memory: max_members × max_samples samples.
// Thread-safety: none; owned by one node's core.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "hearsay/common/ids.h"
#include "hearsay/env/time.h"

namespace hearsay::node {

struct PeerTrustOptions {
  // false: every member keeps full trust (the record is still kept and shown), as a policy that
  // believes every claim would (the adversarial experiment's ablation).
  bool enabled = true;
  // Samples older than this are forgotten.
  Duration window = std::chrono::seconds(120);
  // Samples kept per member (the newest).
  size_t max_samples = 64;
  // Samples a member needs to count in the baseline, and to be judged in full: with n < full
  // samples its trust t counts as t^(n / full_samples), so one late answer costs part and
  // a run of them costs all (in a large cluster an entry node sends each member few requests,
  // and a liar's queue grows while the evidence comes in).
  size_t min_samples = 3;
  size_t full_samples = 2;
  // A member that delivers at least this fraction of the typical member's delivery of its claimed
  // cached tokens is not discounted for its cache claims.
  double cache_tolerance = 0.75;
  // A member whose answers take at most this many times the typical member's ratio of actual to
  // expected time to first token is not discounted for its load claims.
  double ttft_tolerance = 1.25;
  // Bounds of the baseline: however the members this node sent most to behave (when most of its
  // traffic went to liars, they are most of its judged members), the typical member is held to
  // deliver at least min_base_delivery of its claimed cache and to answer within max_base_ratio
  // times its expected time.
  double min_base_delivery = 0.5;
  double max_base_ratio = 2.0;
  // The least trust a member keeps: a discounted member is still priced, never excluded.
  double floor = 0.05;
  // Members tracked; past it, the one heard from longest ago is forgotten.
  size_t max_members = 1024;
  // Outstanding requests remembered per member.
  size_t max_outstanding = 256;
};

// One member's standing, as the node's metrics and /status show it.
struct PeerTrustView {
  NodeId member;
  // Samples in the window: answers, and outstanding requests overdue at the last Expire.
  size_t samples = 0;
  // Σ actual / Σ claimed cached tokens (1 when nothing was claimed).
  double delivery = 1;
  // Median actual / expected time to first token; < 0 when no sample had an expectation.
  double ttft_ratio = -1;
  double cache_trust = 1;
  double time_trust = 1;
  // The queue wait this node's own record shows at the member, whatever its claims say, in ms
  // (0: none, or judgement not enabled): the largest of its answers' mean excess over their
  // expected times, how overdue its most overdue outstanding request is, and the work of this
  // node's outstanding requests there not yet worked off (the sum of their expected times less
  // the time since the oldest was sent).
  double hidden_wait_ms = 0;
  double trust() const { return cache_trust * time_trust; }
};

class PeerTrust {
 public:
  explicit PeerTrust(PeerTrustOptions options = {});

  // One request routed to `member` reached its first token at `now`: the policy believed the
  // member held `claimed_cached` prompt tokens and the answer reported `actual_cached`; it expected
  // the first token after `expected_ttft_ms` (< 0: no expectation) and it took `actual_ttft_ms`.
  // `request` is the id passed to Sent, if it was (0: none); it is then no longer outstanding.
  void Record(const NodeId& member, TimePoint now, uint32_t claimed_cached, uint32_t actual_cached,
              double expected_ttft_ms, double actual_ttft_ms, uint64_t request = 0);

  // Request `request` (a non-zero id unique among this node's requests) was sent to `member` at
  // `now`, its claims promising a first token after `expected_ttft_ms` (< 1: nothing is learned
  // from it while it waits), its prefill putting `work_ms` of work on the member whatever the
  // member claims to hold (Unanswered). At most max_outstanding are remembered per member.
  void Sent(const NodeId& member, uint64_t request, TimePoint now, double expected_ttft_ms,
            double work_ms = 0);
  // Request `request` sent to `member` ended without a first token (failed, bounced, cancelled).
  void Abandon(const NodeId& member, uint64_t request);

  // Drops samples older than the window, counts outstanding requests that are overdue at `now`,
  // and re-judges every member.
  void Expire(TimePoint now);

  // `member`'s standing as of the last Record/Expire (full trust if unknown or not enabled).
  PeerTrustView Of(const NodeId& member) const;

  // This node's requests at `member` still waiting for a first token: how many, how many of them
  // were sent at or before `sent_by`, and the work they leave there as of the last Weigh (at a
  // Sent, Record or Expire): the sum of their work_ms less the time since the oldest was sent.
  struct OutstandingWork {
    size_t requests = 0;
    size_t sent_by = 0;
    double work_ms = 0;
  };
  OutstandingWork Unanswered(const NodeId& member, TimePoint sent_by) const;
  // Appends to `out` every member with requests of this node still waiting for a first token.
  void MembersWithUnanswered(std::vector<NodeId>& out) const;

  // Every tracked member's standing, sorted by member id.
  std::vector<PeerTrustView> All() const;

  const PeerTrustOptions& options() const { return options_; }

 private:
  struct Sample {
    TimePoint at{};
    uint32_t claimed = 0;
    uint32_t actual = 0;
    double ratio = -1;     // actual / expected time to first token; < 0 unknown
    double excess_ms = 0;  // actual - expected time to first token (0 unknown)
  };
  struct Outstanding {
    uint64_t request = 0;
    TimePoint at{};
    double expected_ms = 0;
    double work_ms = 0;
  };
  struct Ledger {
    std::deque<Sample> samples;
    std::deque<Outstanding> outstanding;  // in send order
    // Outstanding requests overdue at the last Expire: elapsed / expected each.
    std::vector<double> overdue;
    // The most overdue outstanding request (elapsed - expected) and the outstanding work not
    // yet worked off, in ms, as of the last Weigh; the mean excess of the samples (>= 0).
    double overdue_ms = 0;
    double backlog_ms = 0;
    double work_ms = 0;  // OutstandingWork::work_ms
    double mean_excess_ms = 0;
    TimePoint last{};
    // The member's own figures (Judge fills trust from them and the baseline).
    double delivery = 1;
    double ttft_ratio = -1;
    PeerTrustView view;
  };

  void DropOld(Ledger& ledger, TimePoint now) const;
  // Counts the outstanding requests overdue at `now` and the work they leave queued.
  void Weigh(Ledger& ledger, TimePoint now) const;
  static double HiddenWaitMs(const Ledger& ledger);
  void Summarize(Ledger& ledger) const;
  // Recomputes the baseline over every judged member, then every member's trust.
  void Judge();
  void EvictOldest();

  PeerTrustOptions options_;
  std::unordered_map<NodeId, Ledger> ledgers_;
  double base_delivery_ = 1;
  double base_ratio_ = -1;
  std::vector<double> scratch_;
};

}  // namespace hearsay::node
