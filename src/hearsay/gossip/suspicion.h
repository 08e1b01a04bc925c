// Lifeguard's dynamic suspicion timeout.
//
// A suspicion starts with a long timeout and shrinks it, logarithmically, as independent
// confirmations (other members suspecting the same incarnation) arrive, down to a minimum once
// `expected` confirmations are in. A suspect that answers in time refutes with a higher
// incarnation; a lone node with a bad link cannot kill a healthy peer quickly.
#pragma once

#include <algorithm>
#include <cmath>

#include "hearsay/env/time.h"

namespace hearsay::gossip {

struct SuspicionBounds {
  Duration min;
  Duration max;
  int expected_confirmations;
};

// min = mult * max(1, log10(n)) * probe_interval; max = max_mult * min; expected = mult - 2,
// or 0 when fewer than that many other members could confirm (n - 2 < mult - 2).
inline SuspicionBounds ComputeSuspicionBounds(double mult, double max_mult, size_t n,
                                              Duration probe_interval) {
  const double scale = std::max(1.0, std::log10(static_cast<double>(std::max<size_t>(n, 1))));
  const Duration min = std::chrono::duration_cast<Duration>(probe_interval * (mult * scale));
  const Duration max = std::chrono::duration_cast<Duration>(min * max_mult);
  int expected = static_cast<int>(mult) - 2;
  if (static_cast<int>(n) - 2 < expected) expected = 0;
  return {min, max, std::max(expected, 0)};
}

// The timeout after `confirmations` independent confirmations (the first accuser not counted).
inline Duration SuspicionTimeout(const SuspicionBounds& b, int confirmations) {
  if (b.expected_confirmations < 1) return b.min;
  const double frac = std::log(static_cast<double>(confirmations) + 1.0) /
                      std::log(static_cast<double>(b.expected_confirmations) + 1.0);
  const double ns =
      static_cast<double>(b.max.count()) - frac * static_cast<double>((b.max - b.min).count());
  return std::max(b.min, Duration(static_cast<int64_t>(ns)));
}

}  // namespace hearsay::gossip
