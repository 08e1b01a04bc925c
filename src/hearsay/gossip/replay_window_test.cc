#include "hearsay/gossip/replay_window.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "hearsay/env/rng.h"

namespace hearsay::gossip {
namespace {

// Accepts if Check says fresh, and returns the verdict.
ReplayVerdict Offer(CounterWindow& w, uint64_t c) {
  const ReplayVerdict v = w.Check(c);
  if (v == ReplayVerdict::kFresh) w.Accept(c);
  return v;
}

TEST(CounterWindowTest, AcceptsEachCounterOnce) {
  CounterWindow w;
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(Offer(w, 5), ReplayVerdict::kFresh);
  EXPECT_FALSE(w.empty());
  EXPECT_EQ(w.highest(), 5u);
  EXPECT_EQ(Offer(w, 5), ReplayVerdict::kDuplicate);
  // Reordered: lower counters within the window are fresh once.
  EXPECT_EQ(Offer(w, 3), ReplayVerdict::kFresh);
  EXPECT_EQ(Offer(w, 0), ReplayVerdict::kFresh);
  EXPECT_EQ(Offer(w, 3), ReplayVerdict::kDuplicate);
  EXPECT_EQ(Offer(w, 4), ReplayVerdict::kFresh);
  EXPECT_EQ(w.highest(), 5u);
}

TEST(CounterWindowTest, WindowEdgeIsExact) {
  CounterWindow w;
  ASSERT_EQ(Offer(w, 5000), ReplayVerdict::kFresh);
  EXPECT_EQ(w.Check(5000 - kReplayWindowSize), ReplayVerdict::kTooOld);
  EXPECT_EQ(Offer(w, 5000 - kReplayWindowSize + 1), ReplayVerdict::kFresh);
  EXPECT_EQ(Offer(w, 5000 - kReplayWindowSize + 1), ReplayVerdict::kDuplicate);
  // Sliding by one pushes that counter out.
  ASSERT_EQ(Offer(w, 5001), ReplayVerdict::kFresh);
  EXPECT_EQ(w.Check(5000 - kReplayWindowSize + 1), ReplayVerdict::kTooOld);
}

TEST(CounterWindowTest, LargeJumpForgetsEverything) {
  CounterWindow w;
  for (uint64_t c = 0; c < 2000; ++c) ASSERT_EQ(Offer(w, c), ReplayVerdict::kFresh);
  const uint64_t far = 1'000'000;
  ASSERT_EQ(Offer(w, far), ReplayVerdict::kFresh);
  // Every counter in the new window except `far` itself is unseen.
  for (uint64_t c = far - kReplayWindowSize + 1; c < far; ++c) {
    ASSERT_EQ(w.Check(c), ReplayVerdict::kFresh) << c;
  }
  EXPECT_EQ(w.Check(1999), ReplayVerdict::kTooOld);
}

TEST(CounterWindowTest, HighestCounterValues) {
  CounterWindow w;
  const uint64_t top = (uint64_t{1} << 63) - 1;
  ASSERT_EQ(Offer(w, top - 1), ReplayVerdict::kFresh);
  ASSERT_EQ(Offer(w, top), ReplayVerdict::kFresh);
  EXPECT_EQ(Offer(w, top), ReplayVerdict::kDuplicate);
  EXPECT_EQ(Offer(w, top - 2), ReplayVerdict::kFresh);
}

// The naive model: remember every accepted counter and the highest one.
struct NaiveWindow {
  std::set<uint64_t> seen;
  ReplayVerdict Offer(uint64_t c) {
    if (!seen.empty()) {
      const uint64_t top = *seen.rbegin();
      if (c <= top && top - c >= kReplayWindowSize) return ReplayVerdict::kTooOld;
      if (seen.count(c)) return ReplayVerdict::kDuplicate;
    }
    seen.insert(c);
    return ReplayVerdict::kFresh;
  }
};

TEST(CounterWindowTest, MatchesNaiveModelOverManySeeds) {
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    Rng rng(seed);
    CounterWindow w;
    NaiveWindow model;
    uint64_t top = rng.Below(3) == 0 ? 0 : rng.Below(1 << 20);
    for (int step = 0; step < 600; ++step) {
      uint64_t c;
      const uint64_t kind = rng.Below(10);
      if (kind < 5) {
        c = top + rng.Below(80);  // mostly forward, some reordering
      } else if (kind < 8) {
        const uint64_t back = rng.Below(kReplayWindowSize + 200);
        c = top > back ? top - back : 0;  // around and beyond the window's edge
      } else if (kind < 9) {
        c = top + rng.Below(5 * kReplayWindowSize);  // jumps of up to several ring lengths
      } else {
        c = top + 64 * rng.Below(40);  // word-aligned strides
      }
      const ReplayVerdict expected = model.Offer(c);
      ASSERT_EQ(Offer(w, c), expected) << "seed " << seed << " step " << step << " counter " << c;
      if (!model.seen.empty()) top = *model.seen.rbegin();
    }
  }
}

TEST(ReplayGuardTest, NewGenerationResetsAndOldGenerationIsRejected) {
  ReplayGuard g(16);
  g.Accept("a", 10, Channel::kDatagram, 100);
  EXPECT_EQ(g.Check("a", 10, Channel::kDatagram, 100), ReplayVerdict::kDuplicate);
  EXPECT_EQ(g.Check("a", 9, Channel::kDatagram, 1000), ReplayVerdict::kOldGeneration);
  // The restarted sender starts its counters again at zero.
  EXPECT_EQ(g.Check("a", 11, Channel::kDatagram, 0), ReplayVerdict::kFresh);
  g.Accept("a", 11, Channel::kDatagram, 0);
  EXPECT_EQ(g.Check("a", 10, Channel::kDatagram, 101), ReplayVerdict::kOldGeneration);
  EXPECT_EQ(g.Check("a", 11, Channel::kDatagram, 0), ReplayVerdict::kDuplicate);
  EXPECT_EQ(g.Check("a", 11, Channel::kDatagram, 100), ReplayVerdict::kFresh);
  EXPECT_EQ(g.size(), 1u);
}

TEST(ReplayGuardTest, ChannelsAndSendersAreIndependent) {
  ReplayGuard g(16);
  g.Accept("a", 1, Channel::kDatagram, 7);
  EXPECT_EQ(g.Check("a", 1, Channel::kStream, 7), ReplayVerdict::kFresh);
  EXPECT_EQ(g.Check("b", 1, Channel::kDatagram, 7), ReplayVerdict::kFresh);
  g.Accept("a", 1, Channel::kStream, 7);
  EXPECT_EQ(g.Check("a", 1, Channel::kStream, 7), ReplayVerdict::kDuplicate);
  // A new generation resets both channels.
  g.Accept("a", 2, Channel::kStream, 0);
  EXPECT_EQ(g.Check("a", 2, Channel::kDatagram, 7), ReplayVerdict::kFresh);
}

TEST(ReplayGuardTest, EvictsTheLeastRecentlyAcceptedSender) {
  ReplayGuard g(3);
  g.Accept("a", 1, Channel::kDatagram, 0);
  g.Accept("b", 1, Channel::kDatagram, 0);
  g.Accept("c", 1, Channel::kDatagram, 0);
  g.Accept("a", 1, Channel::kDatagram, 1);  // a is now the most recent
  g.Accept("d", 1, Channel::kDatagram, 0);  // evicts b
  EXPECT_EQ(g.size(), 3u);
  EXPECT_EQ(g.evictions(), 1u);
  EXPECT_EQ(g.Check("a", 1, Channel::kDatagram, 0), ReplayVerdict::kDuplicate);
  EXPECT_EQ(g.Check("c", 1, Channel::kDatagram, 0), ReplayVerdict::kDuplicate);
  EXPECT_EQ(g.Check("d", 1, Channel::kDatagram, 0), ReplayVerdict::kDuplicate);
  // The documented trade-off: an evicted sender's old message is fresh again (once).
  EXPECT_EQ(g.Check("b", 1, Channel::kDatagram, 0), ReplayVerdict::kFresh);
}

TEST(ReplayGuardTest, SurvivesMoves) {
  ReplayGuard g(4);
  g.Accept("a", 1, Channel::kDatagram, 0);
  ReplayGuard moved(std::move(g));
  EXPECT_EQ(moved.Check("a", 1, Channel::kDatagram, 0), ReplayVerdict::kDuplicate);
  moved.Accept("b", 1, Channel::kDatagram, 0);
  EXPECT_EQ(moved.size(), 2u);
}

// Naive model of the guard with no eviction: per sender the generation and, per channel, a
// NaiveWindow.
TEST(ReplayGuardTest, MatchesNaiveModelWhileUnderCapacity) {
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    Rng rng(seed);
    ReplayGuard g(64);
    struct Sender {
      Generation generation = 0;
      std::map<int, NaiveWindow> windows;
    };
    std::map<std::string, Sender> model;
    std::map<std::string, uint64_t> tops;
    for (int step = 0; step < 800; ++step) {
      const std::string sender = std::to_string(rng.Below(6)) + "n";
      const Channel ch = rng.Bernoulli(0.3) ? Channel::kStream : Channel::kDatagram;
      Generation gen = 5 + rng.Below(3);
      uint64_t& top = tops[sender];
      const uint64_t c = rng.Bernoulli(0.6) ? top + rng.Below(20) : rng.Below(top + 1);
      top = std::max(top, c);

      ReplayVerdict expected;
      auto it = model.find(sender);
      if (it != model.end() && gen < it->second.generation) {
        expected = ReplayVerdict::kOldGeneration;
      } else {
        Sender& s = model[sender];
        if (gen > s.generation) {
          // Check before reset, so a rejected offer never resets the model.
          NaiveWindow fresh;
          expected = fresh.Offer(c);
          s.generation = gen;
          s.windows.clear();
          s.windows[static_cast<int>(ch)] = fresh;
        } else {
          expected = s.windows[static_cast<int>(ch)].Offer(c);
        }
      }
      const ReplayVerdict got = g.Check(sender, gen, ch, c);
      ASSERT_EQ(got, expected) << "seed " << seed << " step " << step;
      if (got == ReplayVerdict::kFresh) g.Accept(sender, gen, ch, c);
    }
    EXPECT_EQ(g.evictions(), 0u);
  }
}

}  // namespace
}  // namespace hearsay::gossip
