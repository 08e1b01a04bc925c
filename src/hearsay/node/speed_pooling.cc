#include "hearsay/node/speed_pooling.h"

#include <algorithm>
#include <vector>

namespace hearsay::node {

void PoolSimilarSpeeds(std::span<double> scales, double band) {
  std::vector<double> measured;
  for (double s : scales) {
    if (s > 0) measured.push_back(s);
  }
  if (measured.size() < 2) return;
  std::sort(measured.begin(), measured.end());
  // Classes: runs of the sorted scales in which each is within `band` of the one before, so a
  // class ends only at a gap wider than `band` between two kinds of hardware.
  std::vector<std::pair<double, double>> classes;  // (upper bound, median)
  for (size_t lo = 0; lo < measured.size();) {
    size_t hi = lo;
    while (hi + 1 < measured.size() && measured[hi + 1] <= measured[hi] * band) ++hi;
    const size_t n = hi - lo + 1, mid = lo + n / 2;
    const double median = n % 2 == 1 ? measured[mid] : (measured[mid - 1] + measured[mid]) / 2;
    classes.emplace_back(measured[hi], median);
    lo = hi + 1;
  }
  for (double& s : scales) {
    if (s <= 0) continue;
    for (const auto& [upper, median] : classes) {
      if (s <= upper) {
        s = median;
        break;
      }
    }
  }
}

double TypicalScale(std::span<const double> scales) {
  std::vector<double> measured;
  for (double s : scales) {
    if (s > 0) measured.push_back(s);
  }
  if (measured.empty()) return 0;
  std::sort(measured.begin(), measured.end());
  const size_t mid = measured.size() / 2;
  return measured.size() % 2 == 1 ? measured[mid] : (measured[mid - 1] + measured[mid]) / 2;
}

}  // namespace hearsay::node
