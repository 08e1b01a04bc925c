#include "hearsay/engine/prefill_speed.h"

#include <gtest/gtest.h>

#include <cmath>

namespace hearsay::engine {
namespace {

// An engine that spends 40 ms per prefill plus 0.5 ms per computed token.
double Engine(double tokens) { return 40 + 0.5 * tokens; }

TEST(PrefillSpeedTest, ZeroUntilTheFirstUsableAnswer) {
  PrefillSpeed s;
  EXPECT_EQ(s.per_token_ms(), 0);
  s.Add(0, 10);
  s.Add(10, 0);
  s.Add(-1, 10);
  s.Add(std::nan(""), 10);
  s.Add(10, INFINITY);
  EXPECT_EQ(s.samples(), 0u);
  s.Add(16, 8);
  EXPECT_EQ(s.per_token_ms(), 0.5);
  EXPECT_EQ(s.overhead_ms(), 0);
}

TEST(PrefillSpeedTest, SeparatesTheOverheadFromTheWorkPerToken) {
  PrefillSpeed s;
  for (double tokens : {100.0, 800.0, 250.0, 13.0, 600.0, 40.0, 1200.0, 400.0}) {
    s.Add(tokens, Engine(tokens));
  }
  EXPECT_NEAR(s.per_token_ms(), 0.5, 1e-9);
  EXPECT_NEAR(s.overhead_ms(), 40, 1e-9);
  EXPECT_NEAR(s.PrefillMs(1000), 540, 1e-9);
}

// The member that holds a prefix computes a few tokens per request: their time per token is
// mostly overhead (46.5 / 13 = 3.6 ms), seven times the engine's real cost of a token.
TEST(PrefillSpeedTest, ACacheHoldersShortPrefillsDoNotMakeItLookSlow) {
  PrefillSpeed s;
  for (int i = 0; i < 24; ++i) s.Add(13, Engine(13));
  for (double tokens : {400.0, 520.0, 610.0, 700.0, 780.0, 850.0, 900.0, 990.0}) {
    s.Add(tokens, Engine(tokens));
  }
  EXPECT_NEAR(s.per_token_ms(), 0.5, 1e-9);
  EXPECT_NEAR(s.overhead_ms(), 40, 1e-9);
}

TEST(PrefillSpeedTest, OutliersDoNotMoveIt) {
  PrefillSpeed s;
  for (double tokens : {100.0, 300.0, 500.0, 700.0, 900.0, 200.0, 400.0, 600.0, 800.0, 1000.0}) {
    s.Add(tokens, Engine(tokens));
  }
  s.Add(50, 5000);  // a stall
  s.Add(950, 1);    // a timer hiccup
  EXPECT_NEAR(s.per_token_ms(), 0.5, 0.05);
  EXPECT_NEAR(s.overhead_ms(), 40, 10);
}

TEST(PrefillSpeedTest, AnswersOfOneSizeGiveTheTimePerToken) {
  PrefillSpeed s;
  for (int i = 0; i < 10; ++i) s.Add(100, Engine(100));
  EXPECT_NEAR(s.per_token_ms(), 0.9, 1e-9);
  EXPECT_EQ(s.overhead_ms(), 0);
}

TEST(PrefillSpeedTest, FollowsAnEngineThatSlowsDownWithinOneWindow) {
  PrefillSpeed s(PrefillSpeed::Options{.window = 16});
  double tokens = 100;
  const auto next = [&tokens] { return tokens = tokens >= 1000 ? 100 : tokens + 150; };
  for (int i = 0; i < 100; ++i) s.Add(next(), Engine(tokens));
  ASSERT_NEAR(s.per_token_ms(), 0.5, 1e-9);
  int answers = 0;
  while (s.per_token_ms() < 1.5 - 1e-9) {
    s.Add(next(), 3 * Engine(tokens));  // three times slower from now on
    ++answers;
  }
  EXPECT_LE(answers, 12);
  EXPECT_GE(answers, 4);
}

}  // namespace
}  // namespace hearsay::engine
