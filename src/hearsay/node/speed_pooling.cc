#include "hearsay/node/speed_pooling.h"

#include <algorithm>
#include <vector>

namespace hearsay::node {
namespace {

// The median of sorted[lo, hi]; lo <= hi.
double MedianOfSorted(const std::vector<double>& sorted, size_t lo, size_t hi) {
  const size_t n = hi - lo + 1, mid = lo + n / 2;
  return n % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

// The measured scales (entries > 0), sorted.
std::vector<double> SortedMeasured(std::span<const double> scales) {
  std::vector<double> measured;
  for (double s : scales) {
    if (s > 0) measured.push_back(s);
  }
  std::sort(measured.begin(), measured.end());
  return measured;
}

}  // namespace

void PoolSimilarSpeeds(std::span<double> scales, double band) {
  const std::vector<double> measured = SortedMeasured(scales);
  if (measured.size() < 2) return;
  // Classes: runs of the sorted scales in which each is within `band` of the one before, so a
  // class ends only at a gap wider than `band` between two kinds of hardware.
  std::vector<std::pair<double, double>> classes;  // (upper bound, median)
  for (size_t lo = 0; lo < measured.size();) {
    size_t hi = lo;
    while (hi + 1 < measured.size() && measured[hi + 1] <= measured[hi] * band) ++hi;
    classes.emplace_back(measured[hi], MedianOfSorted(measured, lo, hi));
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
  const std::vector<double> measured = SortedMeasured(scales);
  if (measured.empty()) return 0;
  return MedianOfSorted(measured, 0, measured.size() - 1);
}

}  // namespace hearsay::node
