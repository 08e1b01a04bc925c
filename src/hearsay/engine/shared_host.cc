#include "hearsay/engine/shared_host.h"

#include <algorithm>

namespace hearsay::engine {

double SharedHost::Rate() const {
  return jobs_.empty() ? 1.0 : std::min(1.0, cores_ / static_cast<double>(jobs_.size()));
}

void SharedHost::Advance(TimePoint now) {
  const double elapsed = ToMillis(now - updated_);
  if (elapsed > 0) {
    const double done = elapsed * Rate();
    for (Job& j : jobs_) j.left_ms = std::max(0.0, j.left_ms - done);
  }
  updated_ = now;
}

void SharedHost::RescheduleAll() {
  const double rate = Rate();
  for (const Job& j : jobs_) j.member->Reschedule(FromMillis(j.left_ms / rate));
}

void SharedHost::Begin(Member* member, double work_ms, TimePoint now) {
  Advance(now);
  End(member, now);
  jobs_.push_back({member, std::max(0.0, work_ms)});
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
