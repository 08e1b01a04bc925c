#include "hearsay/engine/shared_host.h"

#include <algorithm>

namespace hearsay::engine {

SharedHost::Rates SharedHost::CurrentRates() const {
  const double shared = std::min(1.0, cores_ / static_cast<double>(jobs_.size()));
  if (contention_ == 0) return {shared, shared};
  const auto prefills = static_cast<double>(
      std::count_if(jobs_.begin(), jobs_.end(), [](const Job& j) { return j.prefill; }));
  return {shared, shared / (1.0 + contention_ * std::max(0.0, std::min(prefills, cores_) - 1.0))};
}

void SharedHost::Advance(TimePoint now) {
  const double elapsed = ToMillis(now - updated_);
  if (elapsed > 0 && !jobs_.empty()) {
    const Rates r = CurrentRates();
    for (Job& j : jobs_) j.left_ms = std::max(0.0, j.left_ms - elapsed * r.Of(j));
  }
  updated_ = now;
}

void SharedHost::RescheduleAll() {
  if (jobs_.empty()) return;
  const Rates r = CurrentRates();
  for (const Job& j : jobs_) j.member->Reschedule(FromMillis(j.left_ms / r.Of(j)));
}

void SharedHost::Begin(Member* member, double work_ms, TimePoint now, bool prefill) {
  Advance(now);
  End(member, now);
  jobs_.push_back({member, std::max(0.0, work_ms), prefill});
  RescheduleAll();
}

void SharedHost::End(Member* member, TimePoint now) {
  const auto it = std::find_if(jobs_.begin(), jobs_.end(),
                               [member](const Job& j) { return j.member == member; });
  if (it == jobs_.end()) return;
  Advance(now);
  jobs_.erase(it);
  RescheduleAll();
}

}  // namespace hearsay::engine
