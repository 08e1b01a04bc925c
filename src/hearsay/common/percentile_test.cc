#include "hearsay/common/percentile.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace hearsay {
namespace {

TEST(PercentileTest, InterpolatesBetweenClosestRanks) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_DOUBLE_EQ(Percentile(v, 0.5), 50.5);
  EXPECT_DOUBLE_EQ(Percentile(v, 0.99), 99.01);
  EXPECT_DOUBLE_EQ(Percentile(v, 0.9), 90.1);
  EXPECT_DOUBLE_EQ(Percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(Percentile(v, 1), 100);
}

TEST(PercentileTest, OddCountHitsTheOrderStatistics) {
  const std::vector<double> v = {1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(Percentile(v, 0.5), 3);
  EXPECT_DOUBLE_EQ(Percentile(v, 0.25), 2);
  EXPECT_DOUBLE_EQ(Percentile(v, 0.1), 1.4);
}

TEST(PercentileTest, EdgeCases) {
  EXPECT_EQ(Percentile({}, 0.5), 0);
  const std::vector<double> one{7};
  EXPECT_EQ(Percentile(one, 0.99), 7);
  const std::vector<double> two{1, 2};
  EXPECT_DOUBLE_EQ(Percentile(two, 0.5), 1.5);
  EXPECT_EQ(Percentile(two, -3), 1);  // clamped
  EXPECT_EQ(Percentile(two, 42), 2);  // clamped
  EXPECT_EQ(Percentile(two, std::numeric_limits<double>::quiet_NaN()), 1);
}

}  // namespace
}  // namespace hearsay
