// Tests of the drift detector: it fires on a persistent mismatch, stays quiet on a match, and
// rate-limits its reminders.
#include "hearsay/upstream/drift_detector.h"

#include <gtest/gtest.h>

#include "hearsay/env/rng.h"

namespace hearsay::upstream {
namespace {

using std::chrono::seconds;
using Event = DriftDetector::Event;

DriftOptions Opts() {
  DriftOptions o;
  o.window = 16;
  o.min_samples = 8;
  o.threshold = 0.2;
  o.clear_fraction = 0.5;
  o.log_interval = seconds(10);
  return o;
}

TEST(DriftDetectorTest, QuietWhenEstimatesMatchEvidenceWithinABlock) {
  DriftDetector d(Opts());
  Rng rng(7);
  TimePoint t{};
  for (int i = 0; i < 500; ++i) {
    // Block-granular estimates trail the engine's token-exact count by less than a block (16),
    // and the engine recomputes the last token: the ordinary noise of a matching setup.
    const uint64_t prompt = 200 + rng.NextU64() % 300;
    const uint64_t reported = rng.NextU64() % prompt;
    const uint64_t estimated = reported - std::min<uint64_t>(reported, rng.NextU64() % 16);
    EXPECT_EQ(d.Add(estimated, reported, prompt, t), Event::kNone) << i;
    t += seconds(1);
  }
  EXPECT_FALSE(d.flagged());
  EXPECT_LT(d.ratio(), 0.1);
}

TEST(DriftDetectorTest, FiresOnPersistentOverestimateOnlyAfterEnoughSamples) {
  DriftDetector d(Opts());
  TimePoint t{};
  // The node believes 300 of 400 tokens are cached; the engine reports none.
  for (int i = 0; i < 7; ++i) EXPECT_EQ(d.Add(300, 0, 400, t), Event::kNone) << i;
  EXPECT_FALSE(d.flagged());
  EXPECT_EQ(d.Add(300, 0, 400, t), Event::kRaised);
  EXPECT_TRUE(d.flagged());
  EXPECT_DOUBLE_EQ(d.ratio(), 0.75);
  EXPECT_GT(d.over_tokens(), d.under_tokens());
  EXPECT_NE(d.LikelyCause().find("capacity_tokens"), std::string::npos);
}

TEST(DriftDetectorTest, FiresOnPersistentUnderestimateAndNamesTheTokenizer) {
  DriftDetector d(Opts());
  TimePoint t{};
  Event last = Event::kNone;
  for (int i = 0; i < 8; ++i) last = d.Add(0, 350, 400, t);
  EXPECT_EQ(last, Event::kRaised);
  EXPECT_NE(d.LikelyCause().find("tokenizer"), std::string::npos);
}

TEST(DriftDetectorTest, RemindsAtMostOncePerIntervalAndClearsWithHysteresis) {
  DriftDetector d(Opts());
  TimePoint t{};
  for (int i = 0; i < 8; ++i) d.Add(300, 0, 400, t);
  ASSERT_TRUE(d.flagged());
  int reminders = 0;
  for (int i = 0; i < 100; ++i) {
    t += seconds(1);
    if (d.Add(300, 0, 400, t) == Event::kReminder) ++reminders;
  }
  EXPECT_EQ(reminders, 10);  // 100 s at one reminder per 10 s
  // Matching evidence pushes the bad samples out; the ratio must fall below 0.1 to clear.
  int until_clear = 0;
  Event e = Event::kNone;
  while (e != Event::kCleared && until_clear < 100) {
    e = d.Add(100, 100, 400, t);
    ++until_clear;
  }
  EXPECT_EQ(e, Event::kCleared);
  EXPECT_FALSE(d.flagged());
  // With k overestimates left in the window of 16 the ratio is k * 300 / 6400: below 0.1 only
  // for k <= 2, so 14 matching samples are needed.
  EXPECT_LT(d.ratio(), 0.1);
  EXPECT_EQ(until_clear, 14);
}

TEST(DriftDetectorTest, ValidatesOptions) {
  EXPECT_TRUE(ValidateDriftOptions(Opts()).ok());
  DriftOptions o = Opts();
  o.min_samples = o.window + 1;
  EXPECT_FALSE(ValidateDriftOptions(o).ok());
  o = Opts();
  o.threshold = 0;
  EXPECT_FALSE(ValidateDriftOptions(o).ok());
}

}  // namespace
}  // namespace hearsay::upstream
