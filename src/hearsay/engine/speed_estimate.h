// SpeedEstimate: an engine's speed (for example ms of prefill per uncached prompt token), learned
// from its own answers. The estimate is the median of the last `window` samples: the median
// ignores outliers (an answer that shared its iteration with a large batch, a stall, a timer
// hiccup), and the window forgets the old speed within `window` answers when the engine slows
// down (another tenant on the GPU, a thermal limit) or speeds up.
//
// Cost: Add() is O(1); the first value() after an Add() is O(window) (a copy and a selection),
// later ones O(1): an engine adds a sample per iteration and is asked far less often.
// Thread-safety: none (value() fills a cache): one owner, as the engines that keep it.
#pragma once

#include <cstddef>
#include <vector>

namespace hearsay::engine {

class SpeedEstimate {
 public:
  // `window` >= 1.
  explicit SpeedEstimate(size_t window = 32);

  // Adds one sample; ignored unless finite and > 0.
  void Add(double sample);
  // The median of the samples in the window; 0 before the first.
  double value() const;
  size_t samples() const { return ring_.size(); }

 private:
  size_t window_;
  // The last `window_` samples, oldest at next_ once full.
  std::vector<double> ring_;
  size_t next_ = 0;
  // The median, computed on demand.
  mutable bool stale_ = false;
  mutable double median_ = 0;
  mutable std::vector<double> scratch_;
};

}  // namespace hearsay::engine
