#include "hearsay/node/speed_pooling.h"

#include <gtest/gtest.h>

#include <vector>

namespace hearsay::node {
namespace {

TEST(SpeedPoolingTest, IdenticalEnginesMeasuredApartArePricedAlike) {
  std::vector<double> scales = {14, 25, 18, 20};  // 1.8x apart: noise on one kind of engine
  PoolSimilarSpeeds(scales, 2.0);
  for (double s : scales) EXPECT_EQ(s, 19.0);
}

TEST(SpeedPoolingTest, OtherHardwareKeepsItsOwnScale) {
  // Three consumer cards and an engine ten times faster.
  std::vector<double> scales = {8, 9, 10, 0.9};
  PoolSimilarSpeeds(scales, 2.0);
  EXPECT_EQ(scales[0], 8.5);
  EXPECT_EQ(scales[1], 8.5);
  EXPECT_EQ(scales[2], 8.5);
  EXPECT_EQ(scales[3], 0.9);
}

TEST(SpeedPoolingTest, MembersNotMeasuredYetTakeNoPart) {
  std::vector<double> scales = {10, 0, 12};
  PoolSimilarSpeeds(scales, 2.0);
  EXPECT_EQ(scales[0], 11);
  EXPECT_EQ(scales[1], 0);
  EXPECT_EQ(scales[2], 11);
  std::vector<double> alone = {10, 0};
  PoolSimilarSpeeds(alone, 2.0);
  EXPECT_EQ(alone[0], 10);
}

}  // namespace
}  // namespace hearsay::node
