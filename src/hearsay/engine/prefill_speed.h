// PrefillSpeed: an engine's prefill speed, learned from its own answers, as a line
//
//   prefill time = overhead + per_token × computed tokens
//
// fitted to the last `window` answers. A single figure of time per computed token (the
// answer's prefill time over its computed tokens) mixes the two: an answer that computed few
// tokens, a cache hit, costs mostly the engine's fixed work per request, so its time per token is
// high. The member that holds a prefix serves most of its hits and so looked slow: in the
// records of `hearsay demo --engine llama`, a holder measured 2.1 × the time per token of its
// identical peers and lost requests its cache would have served in 88 ms instead of 501
// (docs/engines.md, "Routing on the engine's real speed").
//
// per_token is the Theil-Sen slope: the median of the slopes between pairs of answers whose
// computed tokens differ by at least `min_spread`, robust to a stalled answer or a timer hiccup
// as a median is. Until `min_pairs` such pairs exist (answers all of one size), it is the median
// time per token, as before. overhead is the median of (time - per_token × tokens), at least 0.
// Both follow an engine that slows down or speeds up within the window.
//
// Cost: Add() is O(1); the first read after an Add() is O(window²) (496 slopes for 32 answers),
// later reads O(1).
// Thread-safety: none (reads fill a cache): one owner, as the engine that keeps it.
#pragma once

#include <cstddef>
#include <vector>

namespace hearsay::engine {

class PrefillSpeed {
 public:
  struct Options {
    size_t window = 32;        // answers kept (>= 2)
    double min_spread = 32;    // tokens between a pair's sizes for its slope to count
    size_t min_pairs = 8;      // spread pairs needed before the slope replaces the ratio
  };
  PrefillSpeed() : PrefillSpeed(Options{}) {}
  explicit PrefillSpeed(Options options);

  // One answer: it computed `tokens` (> 0) in `ms` (> 0); anything else is ignored.
  void Add(double tokens, double ms);
  // Time per computed token, in ms; 0 before the first answer.
  double per_token_ms() const;
  // Fixed time per prefill, in ms (0 until the slope is fitted).
  double overhead_ms() const;
  // The expected prefill time of `tokens` computed tokens: overhead + per_token × tokens.
  double PrefillMs(double tokens) const { return overhead_ms() + per_token_ms() * tokens; }
  size_t samples() const { return samples_.size(); }

 private:
  struct Sample {
    double tokens = 0;
    double ms = 0;
  };
  void Fit() const;

  Options options_;
  // The last window answers, oldest at next_ once full.
  std::vector<Sample> samples_;
  size_t next_ = 0;
  mutable bool stale_ = false;
  mutable double per_token_ms_ = 0;
  mutable double overhead_ms_ = 0;
  mutable std::vector<double> scratch_;
};

}  // namespace hearsay::engine
