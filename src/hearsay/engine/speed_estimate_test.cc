#include "hearsay/engine/speed_estimate.h"

#include <gtest/gtest.h>

#include <cmath>

namespace hearsay::engine {
namespace {

TEST(SpeedEstimateTest, ZeroUntilTheFirstUsableSample) {
  SpeedEstimate s(8);
  EXPECT_EQ(s.value(), 0);
  s.Add(0);
  s.Add(-1);
  s.Add(std::nan(""));
  EXPECT_EQ(s.samples(), 0u);
  s.Add(2.5);
  EXPECT_EQ(s.value(), 2.5);
}

TEST(SpeedEstimateTest, IsTheMedianSoOutliersDoNotMoveIt) {
  SpeedEstimate s(9);
  for (int i = 0; i < 7; ++i) s.Add(1.0);
  s.Add(500.0);  // a stall
  s.Add(0.001);  // a timer hiccup
  EXPECT_EQ(s.value(), 1.0);
  SpeedEstimate even(4);
  for (double v : {1.0, 2.0, 3.0, 100.0}) even.Add(v);
  EXPECT_EQ(even.value(), 2.5);
}

TEST(SpeedEstimateTest, FollowsAnEngineThatSlowsDownWithinOneWindow) {
  SpeedEstimate s(16);
  for (int i = 0; i < 100; ++i) s.Add(1.0);
  int answers = 0;
  while (s.value() < 3.0) {
    s.Add(3.0);  // three times slower from now on
    ++answers;
  }
  EXPECT_LE(answers, 9);  // past half the window
  EXPECT_EQ(s.value(), 3.0);
}

}  // namespace
}  // namespace hearsay::engine
