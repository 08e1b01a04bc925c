#include "hearsay/engine/shared_host.h"

#include <algorithm>

namespace hearsay::engine {

double SharedHost::Rate(const Job& job) const {
  const double k = static_cast<double>(jobs_.size());
  const double shared = std::min(1.0, cores_ / k);
  if (!job.prefill || contention_ == 0) return shared;
  const auto prefills = static_cast<double>(
      std::count_if(jobs_.begin(), jobs_.end(), [](const Job& j) { return j.prefill; }));
  return shared / (1.0 + contention_ * std::max(0.0, std::min(prefills, cores_) - 1.0));
}

void SharedHost::Advance(TimePoint now) {
  const double elapsed = ToMillis(now - updated_);
  if (elapsed > 0) {
    for (Job& j : jobs_) j.left_ms = std::max(0.0, j.left_ms - elapsed * Rate(j));
  }
  updated_ = now;
}

void SharedHost::RescheduleAll() {
  for (const Job& j : jobs_) j.member->Reschedule(FromMillis(j.left_ms / Rate(j)));
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
