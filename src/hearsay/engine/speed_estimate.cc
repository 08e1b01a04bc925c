#include "hearsay/engine/speed_estimate.h"

#include <algorithm>
#include <cmath>

namespace hearsay::engine {

SpeedEstimate::SpeedEstimate(size_t window) : window_(std::max<size_t>(window, 1)) {
  ring_.reserve(window_);
}

void SpeedEstimate::Add(double sample) {
  if (!std::isfinite(sample) || sample <= 0) return;
  if (ring_.size() < window_) {
    ring_.push_back(sample);
  } else {
    ring_[next_] = sample;
    next_ = (next_ + 1) % window_;
  }
  stale_ = true;
}

double SpeedEstimate::value() const {
  if (stale_) {
    stale_ = false;
    scratch_.assign(ring_.begin(), ring_.end());
    const size_t mid = scratch_.size() / 2;
    std::nth_element(scratch_.begin(), scratch_.begin() + mid, scratch_.end());
    median_ = scratch_[mid];
    if (scratch_.size() % 2 == 0) {
      median_ = (median_ + *std::max_element(scratch_.begin(), scratch_.begin() + mid)) / 2;
    }
  }
  return median_;
}

}  // namespace hearsay::engine
