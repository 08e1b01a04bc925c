#include "hearsay/common/percentile.h"

#include <algorithm>
#include <cmath>

namespace hearsay {

double Percentile(std::span<const double> sorted, double q) {
  if (sorted.empty()) return 0;
  if (!(q > 0)) return sorted.front();  // also catches NaN
  if (q >= 1) return sorted.back();
  const double rank = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

}  // namespace hearsay
