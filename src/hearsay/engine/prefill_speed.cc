#include "hearsay/engine/prefill_speed.h"

#include <algorithm>
#include <cmath>

namespace hearsay::engine {
namespace {

// The median of `v` (reordered); v must not be empty.
double MedianOf(std::vector<double>& v) {
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) {
    m = (m + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
  }
  return m;
}

}  // namespace

PrefillSpeed::PrefillSpeed(Options options) : options_(options) {
  options_.window = std::max<size_t>(options_.window, 2);
  samples_.reserve(options_.window);
}

void PrefillSpeed::Add(double tokens, double ms) {
  if (!(std::isfinite(tokens) && tokens > 0 && std::isfinite(ms) && ms > 0)) return;
  if (samples_.size() < options_.window) {
    samples_.push_back({tokens, ms});
  } else {
    samples_[next_] = {tokens, ms};
    next_ = (next_ + 1) % options_.window;
  }
  stale_ = true;
}

double PrefillSpeed::per_token_ms() const {
  if (stale_) Fit();
  return per_token_ms_;
}

double PrefillSpeed::overhead_ms() const {
  if (stale_) Fit();
  return overhead_ms_;
}

void PrefillSpeed::Fit() const {
  stale_ = false;
  per_token_ms_ = 0;
  overhead_ms_ = 0;
  if (samples_.empty()) return;
  scratch_.clear();
  for (size_t i = 0; i < samples_.size(); ++i) {
    for (size_t j = i + 1; j < samples_.size(); ++j) {
      const Sample& a = samples_[i];
      const Sample& b = samples_[j];
      const double spread = b.tokens - a.tokens;
      if (std::abs(spread) >= options_.min_spread) scratch_.push_back((b.ms - a.ms) / spread);
    }
  }
  const double slope = scratch_.size() >= options_.min_pairs ? MedianOf(scratch_) : 0;
  if (slope > 0) {
    per_token_ms_ = slope;
    scratch_.clear();
    for (const Sample& s : samples_) scratch_.push_back(s.ms - slope * s.tokens);
    overhead_ms_ = std::max(0.0, MedianOf(scratch_));
    return;
  }
  // Too few sizes to tell the overhead from the work (or noise gave no positive slope): the
  // median time per token, overhead included.
  scratch_.clear();
  for (const Sample& s : samples_) scratch_.push_back(s.ms / s.tokens);
  per_token_ms_ = MedianOf(scratch_);
}

}  // namespace hearsay::engine
