// SentLedger: what this node sent to each member that the member's last load report cannot show.
//
// A load report measured `age` ago at a member `delay` away includes a request this node sent at
// time t only if t + delay <= now - age. So the requests sent after now - age - delay are still
// missing from it, and a policy adds them to the reported queue: that is "the load view
// (gossiped, plus what this node sent since)". A fresher report (smaller age) absorbs older
// sends automatically, so nothing needs resetting; the same rule with age 0 counts requests
// still in flight, which is what the oracle needs.
//
// Those unreported sends also drain: each one is expected to keep the member busy for its own
// service time from when it arrives, so their remaining backlog at a given time follows the
// queue recursion backlog = max(0, backlog - idle gap) + service. A burst of siblings that
// arrives while the first is still prefilling therefore sees only the part left of it.
//
// Memory is bounded: each slot keeps its last kPerSlot sends (older ones are forgotten, which
// only matters for reports staler than kPerSlot sends). Slots >= kMaxTrackedSlots are ignored.
// Record() may allocate when a new slot first appears; Unreported() never allocates.
//
// Thread-safety: none; owned by one policy.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "hearsay/env/time.h"
#include "hearsay/route/policy.h"
#include "hearsay/route/policy_options.h"

namespace hearsay::route {

class SentLedger {
 public:
  static constexpr size_t kPerSlot = 64;

  struct Pending {
    uint32_t requests = 0;
    // Tokens those requests were expected to prefill at the member.
    uint64_t tokens = 0;
    // Their expected remaining work when a request sent now would arrive (now + one-way delay).
    double backlog_ms = 0;
  };

  // Records a request sent to `slot` at `at`, expected to prefill `prefill_tokens` there and to
  // keep the member busy for `service_ms` (0 if the caller does not model time).
  // `request_id` (0: none) lets Forget() find it.
  void Record(Slot slot, TimePoint at, uint32_t prefill_tokens, double service_ms = 0,
              uint64_t request_id = 0);
  // Forgets the send of `request_id` (not 0) to `slot`: the member never did its work (it
  // refused or bounced it). No-op if it is not among the slot's last kPerSlot sends.
  void Forget(Slot slot, uint64_t request_id);

  // The sends to `slot` after `now - report_age - one_way_delay` (not in its last report) and
  // after `now - horizon` (older sends are assumed served by now, however stale the report).
  Pending Unreported(Slot slot, TimePoint now, Duration report_age, Duration one_way_delay,
                     Duration horizon) const;

  // Forgets every send to `slot`.
  void Reset(Slot slot);

 private:
  struct Entry {
    TimePoint at;
    uint32_t tokens;
    float service_ms;
    uint64_t request_id;
    bool forgotten;  // by Forget(): keeps its place in the ring, counts for nothing
  };
  // Invariants: size <= kPerSlot; entries[(head + kPerSlot - 1 - i) % kPerSlot] for i < size are
  // the sends from newest to oldest, and their times never increase going back.
  struct Ring {
    std::array<Entry, kPerSlot> entries{};
    size_t head = 0;  // where the next send goes
    size_t size = 0;
  };

  std::vector<Ring> rings_;
};

// The requests `c` has queued or running by its last report, plus those this node sent it since:
// the load the load-balancing baselines compare.
inline uint64_t OutstandingRequests(const Candidate& c, const SentLedger& ledger, TimePoint now,
                                    Duration horizon) {
  return uint64_t{c.load.queued} + c.load.running +
         ledger.Unreported(c.slot, now, c.load.age, c.one_way_delay, horizon).requests;
}

// Base of the load balancers that count requests: records every dispatch in a SentLedger, so
// Outstanding() adds what this node sent a member since its last load report.
class SentCountingPolicy : public Policy {
 public:
  explicit SentCountingPolicy(const PolicyOptions& options) : horizon_(options.sent_horizon) {}

  void OnSent(Slot slot, const RouteRequest& request) override {
    ledger_.Record(slot, request.now, request.prompt_tokens);
  }
  void OnMemberReset(Slot slot) override { ledger_.Reset(slot); }

 protected:
  // OutstandingRequests() of `c` at `now`, with this node's own recent sends.
  uint64_t Outstanding(const Candidate& c, TimePoint now) const {
    return OutstandingRequests(c, ledger_, now, horizon_);
  }

 private:
  Duration horizon_;
  SentLedger ledger_;
};

}  // namespace hearsay::route
