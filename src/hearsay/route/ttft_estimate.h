// The expected time to first token at one member: the price `hearsay` and `oracle` minimize.
//
//   ttft(c) = delay(c) + queue_wait(c) + prefill(prompt - credit(c) new tokens on credit(c))
//
// delay: 0 for self; 2 × one-way delay plus a fixed forward overhead for a peer, because a
//   forward pays the delay twice before the client sees a token: the request travels there and
//   the first token travels back through the entry node.
// queue_wait: the member's own reported queue wait (LoadView::queue_wait) or, without one, the
//   cost model's wait behind its reported queue, drained for the time since the report and the
//   trip there (HearsayParams::reported_wait_drain); plus the remaining backlog of the requests
//   this node sent it that the report cannot show yet (SentLedger).
// prefill: the cost model's prefill of the uncached part (at least one token is always computed),
//   plus the decode batch it shares the iteration with.
// Queue wait and prefill are scaled by the member's Candidate::cost_scale (its hardware), the
// decode batch by its Candidate::decode_cost_scale when known.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "hearsay/route/cost_model.h"
#include "hearsay/route/policy.h"
#include "hearsay/route/sent_ledger.h"

namespace hearsay::route {

struct TtftEstimate {
  double delay_ms = 0;
  double wait_ms = 0;
  double prefill_ms = 0;
  double total_ms() const { return delay_ms + wait_ms + prefill_ms; }
};

// The member's cost scale, or 1 when the node passed nonsense (not finite, or <= 0), so that a
// price is always a finite number.
inline double CostScale(const Candidate& c) {
  return std::isfinite(c.cost_scale) && c.cost_scale > 0 ? c.cost_scale : 1.0;
}

// The network part of the price of sending to `c`, in ms.
inline double DelayMs(const Candidate& c, double forward_overhead_ms) {
  return c.is_self ? 0.0 : 2 * std::max(0.0, ToMillis(c.one_way_delay)) + forward_overhead_ms;
}

// The queue wait `c` reported (its own estimate, or the cost model's over its reported queue),
// as of when it measured it, in ms.
inline double ReportedWaitMs(const PrefillCostModel& m, const Candidate& c) {
  const LoadView& l = c.load;
  return l.queue_wait.has_value()
             ? ToMillis(*l.queue_wait)
             : CostScale(c) * m.QueueWaitMs(l.queued, double(l.queued_prefill_tokens), l.running,
                                            double(l.running_context_tokens));
}

// The expected queue wait at `c`, in ms, when a request sent now would arrive: its reported
// wait (the member's own estimate, or the cost model's over its reported queue), drained by
// `drain` × (report age + one-way delay), then the remaining backlog of the `unsent` requests
// missing from its report.
inline double WaitMs(const PrefillCostModel& m, const Candidate& c,
                     const SentLedger::Pending& unsent, double drain) {
  const double elapsed = std::max(0.0, ToMillis(c.load.age + c.one_way_delay));
  return std::max(0.0, ReportedWaitMs(m, c) - drain * elapsed) + unsent.backlog_ms;
}

// The prefill part at `c`, in ms, for a prompt of `prompt_tokens` with `credit` tokens cached.
inline double PrefillPartMs(const PrefillCostModel& m, const Candidate& c, double prompt_tokens,
                            double credit) {
  credit = std::clamp(credit, 0.0, std::max(0.0, prompt_tokens - 1));
  const double fresh = std::max(1.0, prompt_tokens - credit);
  const double decode = m.DecodeMs(c.load.running, double(c.load.running_context_tokens));
  // Without a decode scale, exactly the one-scale price (no rounding difference).
  if (!(std::isfinite(c.decode_cost_scale) && c.decode_cost_scale > 0)) {
    return CostScale(c) * (m.PrefillMs(fresh, credit) + decode);
  }
  return CostScale(c) * m.PrefillMs(fresh, credit) + c.decode_cost_scale * decode;
}

}  // namespace hearsay::route
