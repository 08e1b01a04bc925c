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
  const size_t mid = measured.size() / 2;
  const double median =
      measured.size() % 2 == 1 ? measured[mid] : (measured[mid - 1] + measured[mid]) / 2;
  for (double& s : scales) {
    if (s > 0 && s <= median * band && s * band >= median) s = median;
  }
}

}  // namespace hearsay::node
