// Summary statistics for simulator figures: percentiles and the coefficient of variation.
//
// Thread-safety: pure functions.
#pragma once

#include <span>
#include <vector>

namespace hearsay::sim {

// The q-quantile (q in [0, 1]) of `values` by linear interpolation between closest ranks (the
// "R-7" definition, as numpy's default). Reorders `values`. 0 for an empty input.
double Percentile(std::vector<double>& values, double q);

// The arithmetic mean; 0 for an empty input.
double Mean(std::span<const double> values);

// Population standard deviation over the mean; 0 for an empty input or a zero mean.
double CoefficientOfVariation(std::span<const double> values);

}  // namespace hearsay::sim
