#include "hearsay/node/speed_pooling.h"

#include <gtest/gtest.h>

#include <vector>

namespace hearsay::node {
namespace {

TEST(SpeedPoolingTest, IdenticalEnginesMeasuredApartArePricedAlike) {
  std::vector<double> scales = {14, 25, 18, 20};  // 1.8x apart: noise on one kind of engine
  PoolSimilarSpeeds(scales, 1.5);
  for (double s : scales) EXPECT_EQ(s, 19.0);
}

TEST(SpeedPoolingTest, AClassEndsOnlyAtAGap) {
  // Alike engines spread 2.6x end to end, but never 2x from one to the next: one price.
  std::vector<double> scales = {10, 14, 19, 26};
  PoolSimilarSpeeds(scales, 1.5);
  for (double s : scales) EXPECT_EQ(s, 16.5);
}

TEST(SpeedPoolingTest, OtherHardwareKeepsItsOwnScale) {
  // Three consumer cards and an engine ten times faster.
  std::vector<double> scales = {8, 9, 10, 0.9};
  PoolSimilarSpeeds(scales, 1.5);
  EXPECT_EQ(scales[0], 9);
  EXPECT_EQ(scales[1], 9);
  EXPECT_EQ(scales[2], 9);
  EXPECT_EQ(scales[3], 0.9);
}

TEST(SpeedPoolingTest, ThreeKindsOfHardwareKeepThreePrices) {
  // Two H100s, two A100s (~2.7x slower), four consumer cards (~8x): the median of all of them
  // would price the A100s and the consumer cards alike.
  std::vector<double> scales = {1.0, 1.1, 2.7, 2.8, 8, 8.5, 8.2, 8.3};
  PoolSimilarSpeeds(scales, 1.5);
  EXPECT_DOUBLE_EQ(scales[0], 1.05);
  EXPECT_DOUBLE_EQ(scales[1], 1.05);
  EXPECT_EQ(scales[2], 2.75);
  EXPECT_EQ(scales[3], 2.75);
  for (size_t i = 4; i < 8; ++i) EXPECT_EQ(scales[i], 8.25);
}

TEST(SpeedPoolingTest, MembersNotMeasuredYetTakeNoPart) {
  std::vector<double> scales = {10, 0, 12};
  PoolSimilarSpeeds(scales, 1.5);
  EXPECT_EQ(scales[0], 11);
  EXPECT_EQ(scales[1], 0);
  EXPECT_EQ(scales[2], 11);
  std::vector<double> alone = {10, 0};
  PoolSimilarSpeeds(alone, 1.5);
  EXPECT_EQ(alone[0], 10);
}

TEST(SpeedPoolingTest, AMemberNotMeasuredYetIsPricedAsTheTypicalMeasuredOne) {
  EXPECT_EQ(TypicalScale(std::vector<double>{0, 20, 18, 22}), 20);
  EXPECT_EQ(TypicalScale(std::vector<double>{0, 20, 18}), 19);
  EXPECT_EQ(TypicalScale(std::vector<double>{0, 0}), 0);  // nothing measured: no guess
  EXPECT_EQ(TypicalScale(std::vector<double>{}), 0);
}

}  // namespace
}  // namespace hearsay::node
