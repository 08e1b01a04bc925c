#include "hearsay/net/log_guard.h"

#include <gtest/gtest.h>

namespace hearsay::net {
namespace {

TEST(LogFieldTest, EscapesWhatCouldForgeALineOrAField) {
  EXPECT_EQ(LogField("node-1:7946"), "node-1:7946");
  EXPECT_EQ(LogField(""), "-");
  EXPECT_EQ(LogField("a\nevent=forged x"), "a\\x0aevent\\x3dforged\\x20x");
  EXPECT_EQ(LogField("q\"\\"), "q\\x22\\x5c");
  EXPECT_EQ(LogField("\xff\x01"), "\\xff\\x01");
}

TEST(LogFieldTest, CutsLongValues) {
  const std::string huge(15000, 'h');
  const std::string f = LogField(huge);
  EXPECT_EQ(f, std::string(kLogFieldBytes, 'h') + "...");
  // Escaping at most quadruples the quoted bytes.
  EXPECT_LE(LogField(std::string(15000, '\n')).size(), 4 * kLogFieldBytes + 3);
}

TEST(LogRateLimiterTest, AdmitsAFewPerSecondAndCountsTheRest) {
  LogRateLimiter limiter(3);
  const auto t0 = LogRateLimiter::Clock::time_point() + std::chrono::hours(1);
  int written = 0;
  for (int i = 0; i < 500; ++i) {
    if (limiter.Admit(t0 + std::chrono::microseconds(i))) ++written;
  }
  EXPECT_EQ(written, 3);
  // The next window's first line reports what was held back.
  const std::optional<uint64_t> next = limiter.Admit(t0 + std::chrono::seconds(1));
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(*next, 497u);
  EXPECT_EQ(limiter.Admit(t0 + std::chrono::seconds(1)), std::optional<uint64_t>(0));
}

}  // namespace
}  // namespace hearsay::net
