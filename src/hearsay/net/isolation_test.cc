#include "hearsay/net/isolation.h"

#include <gtest/gtest.h>

namespace hearsay::net {
namespace {

using gossip::DropCounters;
using gossip::DropReason;

DropCounters Drops(uint64_t unauthenticated, uint64_t mismatch = 0) {
  DropCounters d;
  d.by_reason[static_cast<size_t>(DropReason::kUnauthenticated)] = unauthenticated;
  d.by_reason[static_cast<size_t>(DropReason::kSecurityMismatch)] = mismatch;
  return d;
}

IsolationOptions WithSeeds() {
  IsolationOptions o;
  o.has_seeds = true;
  return o;
}

TimePoint At(int64_t ms) { return TimePoint{} + FromMillis(ms); }

TEST(IsolationMonitorTest, UnopenableGossipWithoutMembersIsDegradedUntilItStops) {
  IsolationMonitor m(WithSeeds(), At(0));
  m.Update(At(500), Drops(0), 0);
  EXPECT_FALSE(m.report().degraded);
  m.Update(At(1000), Drops(3), 0);
  ASSERT_TRUE(m.report().degraded);
  ASSERT_EQ(m.report().issues.size(), 1u);
  EXPECT_EQ(m.report().issues[0].code, "cannot_open_gossip");
  EXPECT_NE(m.report().issues[0].message.find("3 gossip messages"), std::string::npos);
  // No new drops for longer than `recent`, and members now: healthy again.
  m.Update(At(12'000), Drops(3), 2);
  EXPECT_FALSE(m.report().degraded);
  EXPECT_TRUE(m.report().issues.empty());
}

TEST(IsolationMonitorTest, UnopenableGossipBesideLiveMembersIsOnlyAWarning) {
  IsolationMonitor m(WithSeeds(), At(0));
  m.Update(At(1000), Drops(0, 5), 2);
  EXPECT_FALSE(m.report().degraded);
  ASSERT_EQ(m.report().issues.size(), 1u);
  EXPECT_EQ(m.report().issues[0].code, "unopenable_gossip");
}

TEST(IsolationMonitorTest, AloneWithSeedsForTooLongIsDegraded) {
  IsolationMonitor m(WithSeeds(), At(0));
  m.Update(At(9'000), Drops(0), 0);
  EXPECT_FALSE(m.report().degraded);
  m.Update(At(10'000), Drops(0), 0);
  ASSERT_TRUE(m.report().degraded);
  EXPECT_EQ(m.report().issues[0].code, "alone");
  m.Update(At(10'500), Drops(0), 1);
  EXPECT_FALSE(m.report().degraded);
  // Without seeds, alone is how a first node starts: never degraded.
  IsolationMonitor first(IsolationOptions{}, At(0));
  first.Update(At(60'000), Drops(0), 0);
  EXPECT_FALSE(first.report().degraded);
}

TEST(IsolationMonitorTest, LogsOnChangeAndThenAtABoundedRate) {
  IsolationMonitor m(IsolationOptions{}, At(0));
  m.Update(At(100), Drops(0), 1);
  EXPECT_FALSE(m.ShouldLog(At(100)));
  int logged = 0;
  for (int64_t t = 1000; t < 31'000; t += 100) {
    m.Update(At(t), Drops(static_cast<uint64_t>(t)), 0);  // a flood of drops
    logged += m.ShouldLog(At(t)) ? 1 : 0;
  }
  EXPECT_EQ(logged, 3);  // at 1 s (new), 11 s and 21 s
  m.Update(At(45'000), Drops(31'000), 1);
  EXPECT_TRUE(m.ShouldLog(At(45'000)));  // recovered: said once
  EXPECT_FALSE(m.ShouldLog(At(46'000)));
}

}  // namespace
}  // namespace hearsay::net
