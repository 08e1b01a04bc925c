#include "hearsay/loadgen/robust_fit.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace hearsay::loadgen {

double Median(std::span<const double> values) {
  if (values.empty()) return 0;
  std::vector<double> v(values.begin(), values.end());
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  if (v.size() % 2 == 1) return v[mid];
  const double upper = v[mid];
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

Result<Line> TheilSenFit(std::span<const double> x, std::span<const double> y) {
  if (x.size() != y.size()) return InvalidArgumentError("x and y differ in length");
  for (size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(y[i])) {
      return InvalidArgumentError("a point is not finite");
    }
  }
  std::vector<double> slopes;
  for (size_t i = 0; i < x.size(); ++i) {
    for (size_t j = i + 1; j < x.size(); ++j) {
      if (x[i] != x[j]) slopes.push_back((y[j] - y[i]) / (x[j] - x[i]));
    }
  }
  if (slopes.empty()) return InvalidArgumentError("fewer than two distinct x");
  Line line;
  line.slope = Median(slopes);
  std::vector<double> residual(x.size());
  for (size_t i = 0; i < x.size(); ++i) residual[i] = y[i] - line.slope * x[i];
  line.intercept = Median(residual);
  return line;
}

}  // namespace hearsay::loadgen
