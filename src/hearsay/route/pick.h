// Small allocation-free helpers shared by the policy implementations.
#pragma once

#include <cstddef>
#include <span>

#include "hearsay/env/rng.h"
#include "hearsay/route/policy.h"

namespace hearsay::route {

// A uniformly random index i of `items` with pred(items[i], i) true, or -1 if there is none.
// Two passes and a single draw, so it allocates nothing.
template <typename T, typename Pred>
int PickUniform(std::span<const T> items, Pred pred, Rng& rng) {
  size_t count = 0;
  for (size_t i = 0; i < items.size(); ++i) count += pred(items[i], i) ? 1 : 0;
  if (count == 0) return -1;
  size_t nth = static_cast<size_t>(rng.Below(count));
  for (size_t i = 0; i < items.size(); ++i) {
    if (pred(items[i], i) && nth-- == 0) return static_cast<int>(i);
  }
  return -1;  // unreachable: pred is pure
}

// A decision to send to candidate `c` for `reason`.
inline Decision DecideFor(const Candidate& c, Reason reason, double expected_ttft_ms = -1) {
  Decision d;
  d.slot = c.slot;
  d.reason = reason;
  d.expected_ttft_ms = expected_ttft_ms;
  d.estimated_cached_tokens = c.cached_tokens;
  return d;
}

}  // namespace hearsay::route
