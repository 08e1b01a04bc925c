// CacheTracker in evidence-only mode (set when drift is flagged): predictions are not held, and
// evidence holds only the reported prefix.
#include <gtest/gtest.h>

#include <numeric>

#include "hearsay/upstream/cache_tracker.h"

namespace hearsay::upstream::cache_tracker_evidence_only_test {
namespace {

using prefix::TokenId;

prefix::BlockKeyer Keyer() {
  return prefix::BlockKeyer::Create("upstream-test-secret-0123456789", "m", "t",
                                    {.tokens_per_block = 4, .bytes_per_block = 64})
      .value();
}

std::vector<TokenId> Prompt(size_t n) {
  std::vector<TokenId> p(n);
  std::iota(p.begin(), p.end(), 1);
  return p;
}

TEST(CacheTrackerEvidenceOnlyTest, TurningOnForgetsTheEstimatesAndStopsPredictions) {
  CacheTracker t(Keyer(), {});
  const TimePoint now{};
  t.Predict(1, Prompt(16), "", now);
  EXPECT_EQ(t.CachedPrefixTokens(Prompt(16)), 16u);  // the prediction counts at once
  t.SetEvidenceOnly(true);
  EXPECT_EQ(t.CachedPrefixTokens(Prompt(16)), 0u);
  EXPECT_EQ(t.used_tokens(), 0u);
  std::vector<prefix::BlockEvent> ev;
  t.DrainEvents(ev);
  EXPECT_EQ(ev.back().kind, prefix::BlockEvent::Kind::kRemoved);  // gossip learns it too
  // A new send is not held until evidence comes back.
  EXPECT_EQ(t.Predict(2, Prompt(16), "", now), 0u);
  EXPECT_EQ(t.CachedPrefixTokens(Prompt(16)), 0u);
  EXPECT_EQ(t.entries(), 0u);
  // The engine reports 8 of 16 cached: only those 8 (two blocks) are held, not the whole prompt.
  t.ApplyEvidence(2, 8, 0);
  EXPECT_EQ(t.CachedPrefixTokens(Prompt(16)), 8u);
  // A reported miss holds nothing.
  t.Predict(3, Prompt(32), "", now);
  t.ApplyEvidence(3, 0, 0);
  EXPECT_EQ(t.CachedPrefixTokens(Prompt(32)), 0u);
}

TEST(CacheTrackerEvidenceOnlyTest, TurningOffResumesPredictions) {
  CacheTracker t(Keyer(), {});
  t.SetEvidenceOnly(true);
  t.SetEvidenceOnly(false);
  EXPECT_FALSE(t.evidence_only());
  t.Predict(1, Prompt(12), "", TimePoint{});
  EXPECT_EQ(t.CachedPrefixTokens(Prompt(12)), 12u);
  t.ApplyEvidence(1, 0, 0);
  EXPECT_EQ(t.CachedPrefixTokens(Prompt(12)), 12u);  // computed now: the whole prompt is cached
}

}  // namespace
}  // namespace hearsay::upstream::cache_tracker_evidence_only_test
