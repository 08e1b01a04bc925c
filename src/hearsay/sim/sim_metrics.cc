#include "hearsay/sim/sim_metrics.h"

#include <algorithm>
#include <cmath>

namespace hearsay::sim {

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
