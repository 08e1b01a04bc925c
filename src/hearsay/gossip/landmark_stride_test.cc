#include "hearsay/gossip/landmark_stride.h"

#include <gtest/gtest.h>

namespace hearsay::gossip {
namespace {

TEST(LandmarkStrideRuleTest, BaseUpToTheBudgetThenDoublesWithTheCluster) {
  const LandmarkStrideRule r{16, 128, 4096};
  EXPECT_EQ(r.Target(1), 16u);
  EXPECT_EQ(r.Target(100), 16u);
  EXPECT_EQ(r.Target(128), 16u);
  EXPECT_EQ(r.Target(129), 32u);
  EXPECT_EQ(r.Target(256), 32u);
  EXPECT_EQ(r.Target(257), 64u);
  EXPECT_EQ(r.Target(512), 64u);
  EXPECT_EQ(r.Target(1024), 128u);
  EXPECT_EQ(r.Target(1025), 256u);
  // Members per stride unit stay within the budget's: N / stride <= 128 / 16.
  for (size_t n = 1; n <= 20000; n += 37) {
    const uint32_t s = r.Target(n);
    EXPECT_LE(n * 16, size_t{128} * s) << n;
    EXPECT_EQ(s & (s - 1), 0u) << n;  // a power of two (base is one)
  }
}

TEST(LandmarkStrideRuleTest, CappedAndDegenerateInputs) {
  EXPECT_EQ((LandmarkStrideRule{16, 128, 64}).Target(100000), 64u);
  EXPECT_EQ((LandmarkStrideRule{16, 128, 8}).Target(100000), 16u);  // never below base
  EXPECT_EQ((LandmarkStrideRule{0, 0, 4}).Target(0), 1u);
  EXPECT_EQ((LandmarkStrideRule{0, 0, 4}).Target(3), 4u);
  EXPECT_EQ((LandmarkStrideRule{3, 10, 4096}).Target(11), 6u);  // multiples of a non-2^k base
}

TEST(LandmarkStrideRuleTest, GrowsAtOnceShrinksOnlyWellBelowTheThreshold) {
  const LandmarkStrideRule r{16, 128, 4096};
  EXPECT_EQ(r.Next(129, 16), 32u);
  EXPECT_EQ(r.Next(1024, 16), 128u);
  // 32 was needed above 128 members: kept down to 97, dropped at 96 (96 + 32 = 128).
  EXPECT_EQ(r.Next(128, 32), 32u);
  EXPECT_EQ(r.Next(97, 32), 32u);
  EXPECT_EQ(r.Next(96, 32), 16u);
  // A cluster hovering around a threshold never flaps.
  uint32_t s = 16;
  int changes = 0;
  for (int i = 0; i < 200; ++i) {
    const size_t n = i % 2 == 0 ? 126 : 131;
    const uint32_t next = r.Next(n, s);
    changes += next != s ? 1 : 0;
    s = next;
  }
  EXPECT_EQ(changes, 1);
  EXPECT_EQ(s, 32u);
  // A big shrink drops several steps at once.
  EXPECT_EQ(r.Next(10, 128), 16u);
}

}  // namespace
}  // namespace hearsay::gossip
