// Summary statistics for simulator figures: the mean and the coefficient of variation
// (percentiles: common/percentile.h).
//
// Thread-safety: pure functions.
#pragma once

#include <span>
#include <vector>

namespace hearsay::sim {

// The arithmetic mean; 0 for an empty input.
double Mean(std::span<const double> values);

// Population standard deviation over the mean; 0 for an empty input or a zero mean.
double CoefficientOfVariation(std::span<const double> values);

}  // namespace hearsay::sim
