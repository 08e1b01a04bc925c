// Robust statistics for `hearsay calibrate` (calibration.h): medians and the Theil-Sen line, which
// ignore a minority of outliers (an answer that waited behind another client's batch, a stall).
//
// Thread-safety: pure functions.
#pragma once

#include <span>

#include "hearsay/common/status.h"

namespace hearsay::loadgen {

// The median of `values` (the mean of the middle two for an even count); 0 when empty.
double Median(std::span<const double> values);

// y = intercept + slope * x.
struct Line {
  double intercept = 0;
  double slope = 0;
};

// The Theil-Sen line through (x[i], y[i]): the slope is the median of the slopes of every pair with
// distinct x, the intercept the median of y - slope * x. Breaks down only past ~29% outliers.
// INVALID_ARGUMENT when the spans differ in length, a value is not finite, or fewer than two
// distinct x are given. O(n^2) in time and memory: meant for the tens of points of a calibration.
Result<Line> TheilSenFit(std::span<const double> x, std::span<const double> y);

}  // namespace hearsay::loadgen
