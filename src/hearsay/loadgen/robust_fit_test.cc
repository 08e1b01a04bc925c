#include "hearsay/loadgen/robust_fit.h"

#include <gtest/gtest.h>

#include <vector>

namespace hearsay::loadgen {
namespace {

TEST(RobustFitTest, MedianOfOddEvenAndEmpty) {
  EXPECT_EQ(Median(std::vector<double>{3, 1, 2}), 2);
  EXPECT_EQ(Median(std::vector<double>{4, 1, 3, 2}), 2.5);
  EXPECT_EQ(Median(std::vector<double>{}), 0);
}

TEST(RobustFitTest, TheilSenRecoversALineDespiteOutliers) {
  std::vector<double> x, y;
  for (int i = 0; i < 20; ++i) {
    x.push_back(64.0 * (1 + i % 4));
    y.push_back(5 + 0.25 * x.back() + ((i * 7) % 5 - 2) * 0.1);  // a little noise
  }
  // Three stalls of a second each.
  y[1] += 1000;
  y[6] += 1000;
  y[11] += 1000;
  Result<Line> line = TheilSenFit(x, y);
  ASSERT_TRUE(line.ok());
  EXPECT_NEAR(line->slope, 0.25, 0.01);
  EXPECT_NEAR(line->intercept, 5, 1);
}

TEST(RobustFitTest, TheilSenRefusesDegenerateInput) {
  EXPECT_FALSE(TheilSenFit(std::vector<double>{1, 1}, std::vector<double>{2, 3}).ok());
  EXPECT_FALSE(TheilSenFit(std::vector<double>{1}, std::vector<double>{2, 3}).ok());
  EXPECT_FALSE(TheilSenFit(std::vector<double>{1, 2}, std::vector<double>{2, 1.0 / 0.0}).ok());
}

}  // namespace
}  // namespace hearsay::loadgen
