#include "hearsay/route/sent_ledger.h"

#include <algorithm>

namespace hearsay::route {

void SentLedger::Record(Slot slot, TimePoint at, uint32_t prefill_tokens, double service_ms,
                        uint64_t request_id) {
  if (slot >= kMaxTrackedSlots) return;
  if (slot >= rings_.size()) rings_.resize(slot + 1);
  Ring& r = rings_[slot];
  // Keep the ring ordered even if a caller's clock readings arrive out of order.
  if (r.size > 0) at = std::max(at, r.entries[(r.head + kPerSlot - 1) % kPerSlot].at);
  r.entries[r.head] = {at, prefill_tokens, static_cast<float>(std::clamp(service_ms, 0.0, 1e30)),
                       request_id, false};
  r.head = (r.head + 1) % kPerSlot;
  r.size = std::min(r.size + 1, kPerSlot);
}

SentLedger::Pending SentLedger::Unreported(Slot slot, TimePoint now, Duration report_age,
                                           Duration one_way_delay, Duration horizon) const {
  Pending p;
  if (slot >= rings_.size()) return p;
  const Ring& r = rings_[slot];
  const TimePoint cutoff = std::max(now - report_age - one_way_delay, now - horizon);
  size_t n = 0;
  while (n < r.size && r.entries[(r.head + kPerSlot - 1 - n) % kPerSlot].at > cutoff) ++n;
  // Oldest first, so the backlog drains in arrival order.
  TimePoint clock{};
  for (size_t i = n; i-- > 0;) {
    const Entry& e = r.entries[(r.head + kPerSlot - 1 - i) % kPerSlot];
    if (e.forgotten) continue;
    const TimePoint arrival = e.at + one_way_delay;
    if (p.requests > 0) p.backlog_ms = std::max(0.0, p.backlog_ms - ToMillis(arrival - clock));
    p.backlog_ms += e.service_ms;
    clock = arrival;
    ++p.requests;
    p.tokens += e.tokens;
  }
  if (p.requests > 0) {
    p.backlog_ms = std::max(0.0, p.backlog_ms - ToMillis(now + one_way_delay - clock));
  }
  return p;
}

void SentLedger::Forget(Slot slot, uint64_t request_id) {
  if (request_id == 0 || slot >= rings_.size()) return;
  Ring& r = rings_[slot];
  for (size_t n = 0; n < r.size; ++n) {
    Entry& e = r.entries[(r.head + kPerSlot - 1 - n) % kPerSlot];
    if (e.request_id == request_id) {
      e.forgotten = true;
      return;
    }
  }
}

void SentLedger::Reset(Slot slot) {
  if (slot < rings_.size()) rings_[slot] = Ring{};
}

}  // namespace hearsay::route
