#include "hearsay/sim/sim_metrics.h"

#include <algorithm>
#include <cmath>

namespace hearsay::sim {

double Percentile(std::vector<double>& values, double q) {
  if (values.empty()) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const double pos = q * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  std::nth_element(values.begin(), values.begin() + static_cast<ptrdiff_t>(lo), values.end());
  const double a = values[lo];
  if (lo + 1 >= values.size()) return a;
  // The next order statistic is the minimum of the upper part.
  const double b = *std::min_element(values.begin() + static_cast<ptrdiff_t>(lo) + 1, values.end());
  return a + (b - a) * (pos - static_cast<double>(lo));
}

double Mean(std::span<const double> values) {
  if (values.empty()) return 0;
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

double CoefficientOfVariation(std::span<const double> values) {
  const double mean = Mean(values);
  if (values.empty() || mean == 0) return 0;
  double ss = 0;
  for (double v : values) ss += (v - mean) * (v - mean);
  return std::sqrt(ss / static_cast<double>(values.size())) / mean;
}

}  // namespace hearsay::sim
