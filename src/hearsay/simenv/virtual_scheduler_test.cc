#include "hearsay/simenv/virtual_scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hearsay/env/rng.h"

namespace hearsay::simenv {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TimePoint At(Duration d) { return TimePoint(d); }

TEST(VirtualSchedulerTest, StartsAtEpochAndIdle) {
  VirtualScheduler s;
  EXPECT_EQ(s.Now(), TimePoint{});
  EXPECT_EQ(s.pending(), 0u);
  EXPECT_FALSE(s.Step());
  EXPECT_EQ(s.NextEventTime(), TimePoint::max());
  EXPECT_EQ(&s.clock(), static_cast<const Clock*>(&s));
}

TEST(VirtualSchedulerTest, RunsByTimeThenFifo) {
  VirtualScheduler s;
  std::vector<std::string> order;
  s.RunAfter(milliseconds(5), [&] { order.push_back("5a"); });
  s.RunAfter(milliseconds(1), [&] { order.push_back("1a"); });
  s.RunAfter(milliseconds(5), [&] { order.push_back("5b"); });
  s.RunAfter(milliseconds(1), [&] { order.push_back("1b"); });
  s.RunAfter(milliseconds(3), [&] { order.push_back("3"); });
  s.RunAfter(milliseconds(5), [&] { order.push_back("5c"); });
  EXPECT_EQ(s.pending(), 6u);
  EXPECT_EQ(s.RunUntilIdle(), 6u);
  EXPECT_EQ(order, (std::vector<std::string>{"1a", "1b", "3", "5a", "5b", "5c"}));
  EXPECT_EQ(s.Now(), At(milliseconds(5)));
  EXPECT_EQ(s.events_run(), 6u);
  EXPECT_EQ(s.pending(), 0u);
}

TEST(VirtualSchedulerTest, ClockShowsEventTimeInsideTask) {
  VirtualScheduler s;
  std::vector<TimePoint> seen;
  for (int ms : {7, 2, 9}) {
    s.RunAfter(milliseconds(ms), [&] { seen.push_back(s.Now()); });
  }
  s.RunUntilIdle();
  EXPECT_EQ(seen, (std::vector<TimePoint>{At(milliseconds(2)), At(milliseconds(7)),
                                          At(milliseconds(9))}));
}

TEST(VirtualSchedulerTest, NegativeDelayCountsAsZero) {
  VirtualScheduler s;
  s.RunFor(seconds(1));
  bool ran = false;
  s.RunAfter(milliseconds(-50), [&] {
    ran = true;
    EXPECT_EQ(s.Now(), At(seconds(1)));
  });
  EXPECT_TRUE(s.Step());
  EXPECT_TRUE(ran);
}

TEST(VirtualSchedulerTest, PostRunsAfterTasksAlreadyQueuedForNow) {
  VirtualScheduler s;
  std::vector<int> order;
  s.RunAfter(milliseconds(1), [&] {
    order.push_back(1);
    s.Post([&] { order.push_back(4); });
    s.Post([&] { order.push_back(5); });
  });
  s.RunAfter(milliseconds(1), [&] { order.push_back(2); });
  s.RunAfter(milliseconds(1), [&] { order.push_back(3); });
  s.RunAfter(milliseconds(2), [&] { order.push_back(6); });
  s.RunUntilIdle();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4, 5, 6}));
}

TEST(VirtualSchedulerTest, PostFromOutsideRunsAtCurrentTimeInOrder) {
  VirtualScheduler s;
  s.RunFor(milliseconds(10));
  std::vector<int> order;
  for (int i = 0; i < 5; ++i) s.Post([&, i] { order.push_back(i); });
  s.RunUntil(s.Now());
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(s.Now(), At(milliseconds(10)));
}

TEST(VirtualSchedulerTest, CancelBeforeRun) {
  VirtualScheduler s;
  bool ran = false;
  TimerId id = s.RunAfter(milliseconds(1), [&] { ran = true; });
  EXPECT_NE(id, kNoTimer);
  EXPECT_EQ(s.pending(), 1u);
  EXPECT_TRUE(s.Cancel(id));
  EXPECT_EQ(s.pending(), 0u);
  EXPECT_FALSE(s.Cancel(id));
  EXPECT_EQ(s.RunUntilIdle(), 0u);
  EXPECT_FALSE(ran);
  EXPECT_EQ(s.events_run(), 0u);
}

TEST(VirtualSchedulerTest, CancelAfterRunAndUnknownIdsAreHarmless) {
  VirtualScheduler s;
  int runs = 0;
  TimerId id = s.RunAfter(milliseconds(1), [&] { ++runs; });
  s.RunUntilIdle();
  EXPECT_EQ(runs, 1);
  EXPECT_FALSE(s.Cancel(id));
  EXPECT_FALSE(s.Cancel(kNoTimer));
  EXPECT_FALSE(s.Cancel(0xdeadbeef12345678ULL));
  // The slot is reused by a new timer; the stale id must not cancel it.
  TimerId id2 = s.RunAfter(milliseconds(1), [&] { ++runs; });
  EXPECT_NE(id, id2);
  EXPECT_FALSE(s.Cancel(id));
  s.RunUntilIdle();
  EXPECT_EQ(runs, 2);
}

TEST(VirtualSchedulerTest, CancelFromInsideATask) {
  VirtualScheduler s;
  std::vector<int> order;
  TimerId later = kNoTimer;
  TimerId self = kNoTimer;
  self = s.RunAfter(milliseconds(1), [&] {
    order.push_back(1);
    EXPECT_TRUE(s.Cancel(later));
    EXPECT_FALSE(s.Cancel(self));  // Already running: not pending any more.
  });
  later = s.RunAfter(milliseconds(1), [&] { order.push_back(2); });
  s.RunAfter(milliseconds(2), [&] { order.push_back(3); });
  s.RunUntilIdle();
  EXPECT_EQ(order, (std::vector<int>{1, 3}));
}

TEST(VirtualSchedulerTest, NestedSchedulingChainsAndFansOut) {
  VirtualScheduler s;
  int leaves = 0;
  std::function<void(int)> spawn = [&](int depth) {
    if (depth == 0) {
      ++leaves;
      return;
    }
    for (int i = 0; i < 3; ++i) s.RunAfter(milliseconds(1), [&, depth] { spawn(depth - 1); });
  };
  s.Post([&] { spawn(5); });
  s.RunUntilIdle();
  EXPECT_EQ(leaves, 243);
  EXPECT_EQ(s.Now(), At(milliseconds(5)));
  EXPECT_EQ(s.events_run(), 1u + 3 + 9 + 27 + 81 + 243);
}

TEST(VirtualSchedulerTest, TaskIsDestroyedAfterRunningOrCancel) {
  VirtualScheduler s;
  auto token = std::make_shared<int>(0);
  std::weak_ptr<int> weak = token;
  TimerId id = s.RunAfter(milliseconds(1), [token] {});
  s.RunAfter(milliseconds(2), [t = std::move(token)] {});
  EXPECT_FALSE(weak.expired());
  EXPECT_TRUE(s.Cancel(id));
  EXPECT_FALSE(weak.expired());
  s.RunUntilIdle();
  EXPECT_TRUE(weak.expired());
}

TEST(VirtualSchedulerTest, RunUntilBoundaryIsInclusiveAndAdvancesClock) {
  VirtualScheduler s;
  std::vector<int> ran;
  s.RunAfter(milliseconds(10), [&] {
    ran.push_back(10);
    s.Post([&] { ran.push_back(100); });  // Same time as the deadline: runs too.
    s.RunAfter(nanoseconds(1), [&] { ran.push_back(101); });
  });
  s.RunAfter(milliseconds(10) + nanoseconds(1), [&] { ran.push_back(11); });
  EXPECT_EQ(s.RunUntil(At(milliseconds(5))), 0u);
  EXPECT_EQ(s.Now(), At(milliseconds(5)));
  EXPECT_EQ(s.RunUntil(At(milliseconds(10))), 2u);
  EXPECT_EQ(ran, (std::vector<int>{10, 100}));
  EXPECT_EQ(s.Now(), At(milliseconds(10)));
  EXPECT_EQ(s.pending(), 2u);
  // A deadline in the past neither runs anything nor moves the clock back.
  EXPECT_EQ(s.RunUntil(At(milliseconds(1))), 0u);
  EXPECT_EQ(s.Now(), At(milliseconds(10)));
  EXPECT_EQ(s.RunFor(nanoseconds(1)), 2u);
  EXPECT_EQ(ran, (std::vector<int>{10, 100, 11, 101}));
  EXPECT_EQ(s.NextEventTime(), TimePoint::max());
}

TEST(VirtualSchedulerTest, RunForIsRelativeAndTimersAreRelativeToNow) {
  VirtualScheduler s;
  s.RunFor(seconds(3));
  EXPECT_EQ(s.Now(), At(seconds(3)));
  TimePoint fired{};
  s.RunAfter(seconds(2), [&] { fired = s.Now(); });
  EXPECT_EQ(s.NextEventTime(), At(seconds(5)));
  s.RunFor(seconds(1));
  EXPECT_EQ(fired, TimePoint{});
  s.RunFor(seconds(1));
  EXPECT_EQ(fired, At(seconds(5)));
}

TEST(VirtualSchedulerTest, RunUntilIdleHonoursMaxEvents) {
  VirtualScheduler s;
  int n = 0;
  std::function<void()> tick = [&] {
    ++n;
    s.RunAfter(milliseconds(1), tick);
  };
  s.Post(tick);
  EXPECT_EQ(s.RunUntilIdle(100), 100u);
  EXPECT_EQ(n, 100);
  EXPECT_EQ(s.pending(), 1u);
}

TEST(VirtualSchedulerTest, StopEndsTheRunAfterTheCurrentTask) {
  VirtualScheduler s;
  int n = 0;
  for (int i = 1; i <= 5; ++i) {
    s.RunAfter(milliseconds(i), [&] {
      if (++n == 2) s.Stop();
    });
  }
  EXPECT_EQ(s.RunUntil(At(seconds(1))), 2u);
  EXPECT_EQ(s.Now(), At(milliseconds(2)));  // Not advanced to the deadline.
  EXPECT_EQ(s.RunUntil(At(seconds(1))), 3u);
  EXPECT_EQ(s.Now(), At(seconds(1)));
}

TEST(VirtualSchedulerTest, ClockIsMonotonicUnderRandomLoad) {
  VirtualScheduler s;
  Rng rng(42);
  TimePoint last = s.Now();
  int violations = 0;
  int remaining = 20000;
  std::function<void()> task = [&] {
    if (s.Now() < last) ++violations;
    last = s.Now();
    const int children = static_cast<int>(rng.Below(3));
    for (int i = 0; i < children && remaining > 0; ++i, --remaining) {
      s.RunAfter(nanoseconds(rng.UniformInt(-5, 1000)), task);
    }
  };
  for (int i = 0; i < 100; ++i) s.RunAfter(nanoseconds(rng.Below(1000)), task);
  s.RunUntilIdle();
  EXPECT_EQ(violations, 0);
  EXPECT_GT(s.events_run(), 1000u);
}

// Property test: against a naive model (a list sorted on demand) under random schedule/cancel/
// step sequences, the scheduler runs exactly the same events in the same order.
TEST(VirtualSchedulerTest, MatchesNaiveModelOverManySeeds) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE(seed);
    Rng rng(seed);
    VirtualScheduler s;
    struct ModelEvent {
      int64_t time;
      uint64_t order;
      int label;
    };
    std::vector<ModelEvent> model;
    std::map<int, TimerId> ids;  // label -> id, for labels not yet run or cancelled
    std::vector<int> ran;
    std::vector<int> model_ran;
    uint64_t order = 0;
    int next_label = 0;
    int64_t model_now = 0;
    for (int op = 0; op < 600; ++op) {
      const uint64_t kind = rng.Below(10);
      if (kind < 5) {
        const int label = next_label++;
        const int64_t delay = rng.UniformInt(0, 50);
        ids[label] = s.RunAfter(nanoseconds(delay), [&ran, label] { ran.push_back(label); });
        model.push_back({model_now + delay, order++, label});
      } else if (kind < 7 && !ids.empty()) {
        auto it = ids.begin();
        std::advance(it, rng.Below(ids.size()));
        const bool model_pending =
            std::any_of(model.begin(), model.end(), [&](auto& e) { return e.label == it->first; });
        EXPECT_EQ(s.Cancel(it->second), model_pending);
        std::erase_if(model, [&](auto& e) { return e.label == it->first; });
        ids.erase(it);
      } else {
        const bool had = !model.empty();
        EXPECT_EQ(s.Step(), had);
        if (had) {
          auto first = std::min_element(model.begin(), model.end(), [](auto& a, auto& b) {
            return a.time != b.time ? a.time < b.time : a.order < b.order;
          });
          model_now = first->time;
          model_ran.push_back(first->label);
          ids.erase(first->label);
          model.erase(first);
        }
      }
      ASSERT_EQ(s.pending(), model.size());
      ASSERT_EQ(s.Now().time_since_epoch().count(), model_now);
    }
    EXPECT_EQ(ran, model_ran);
  }
}

TEST(VirtualSchedulerTest, ManyCancelledTimersDoNotAccumulate) {
  VirtualScheduler s;
  int ran = 0;
  // A long-lived timer that is re-armed (cancel + schedule) a million times, as a lease would be.
  TimerId id = s.RunAfter(seconds(3600), [&] { ++ran; });
  for (int i = 0; i < 200000; ++i) {
    ASSERT_TRUE(s.Cancel(id));
    id = s.RunAfter(seconds(3600), [&] { ++ran; });
    ASSERT_LE(s.queued_entries(), 2 * s.pending() + 1025);
  }
  EXPECT_EQ(s.pending(), 1u);
  s.RunUntilIdle();
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(s.events_run(), 1u);
}

TEST(VirtualSchedulerTest, TraceHashIsDeterministicAndSensitive) {
  auto run = [](uint64_t seed, bool extra_fold) {
    VirtualScheduler s;
    Rng rng(seed);
    for (int i = 0; i < 1000; ++i) s.RunAfter(nanoseconds(rng.Below(10000)), [] {});
    if (extra_fold) s.FoldTrace(uint64_t{7});
    s.RunUntilIdle();
    return s.trace_hash();
  };
  EXPECT_EQ(run(1, false), run(1, false));
  EXPECT_NE(run(1, false), run(2, false));
  EXPECT_NE(run(1, false), run(1, true));

  VirtualScheduler a;
  VirtualScheduler b;
  EXPECT_EQ(a.trace_hash(), b.trace_hash());
  const std::vector<uint8_t> x{1, 2, 3};
  const std::vector<uint8_t> y{1, 2, 4};
  a.FoldTrace(x);
  b.FoldTrace(y);
  EXPECT_NE(a.trace_hash(), b.trace_hash());
  // Order matters.
  VirtualScheduler c;
  VirtualScheduler d;
  c.FoldTrace(uint64_t{1});
  c.FoldTrace(uint64_t{2});
  d.FoldTrace(uint64_t{2});
  d.FoldTrace(uint64_t{1});
  EXPECT_NE(c.trace_hash(), d.trace_hash());
}

TEST(ScopedSchedulerTest, CancelAllDropsOnlyItsOwnTimers) {
  VirtualScheduler s;
  ScopedScheduler a(s);
  ScopedScheduler b(s);
  EXPECT_NE(a.group(), b.group());
  EXPECT_EQ(&a.clock(), static_cast<const Clock*>(&s));
  std::vector<std::string> ran;
  a.RunAfter(milliseconds(1), [&] { ran.push_back("a1"); });
  a.Post([&] { ran.push_back("a-post"); });
  b.RunAfter(milliseconds(1), [&] { ran.push_back("b1"); });
  s.RunAfter(milliseconds(1), [&] { ran.push_back("s1"); });
  a.RunAfter(milliseconds(2), [&] {
    ran.push_back("a2");
    a.RunAfter(milliseconds(1), [&] { ran.push_back("a3"); });
  });
  EXPECT_EQ(a.pending(), 3u);
  EXPECT_EQ(b.pending(), 1u);
  s.RunUntil(TimePoint(milliseconds(2)));
  EXPECT_EQ(ran, (std::vector<std::string>{"a-post", "a1", "b1", "s1", "a2"}));
  EXPECT_EQ(a.pending(), 1u);
  EXPECT_EQ(a.CancelAll(), 1u);  // a3: scheduled from inside a's own task.
  EXPECT_EQ(a.pending(), 0u);
  b.RunAfter(milliseconds(5), [&] { ran.push_back("b2"); });
  s.RunUntilIdle();
  EXPECT_EQ(ran.back(), "b2");
  EXPECT_EQ(std::count(ran.begin(), ran.end(), "a3"), 0);
}

TEST(ScopedSchedulerTest, CancelIsScopedToTheFacade) {
  VirtualScheduler s;
  ScopedScheduler a(s);
  ScopedScheduler b(s);
  TimerId ida = a.RunAfter(milliseconds(1), [] {});
  TimerId idb = b.RunAfter(milliseconds(1), [] {});
  EXPECT_FALSE(a.Cancel(idb));
  EXPECT_FALSE(b.Cancel(ida));
  EXPECT_TRUE(a.Cancel(ida));
  EXPECT_EQ(s.pending(), 1u);
  EXPECT_TRUE(s.Cancel(idb));  // The base scheduler may cancel anything.
}

TEST(ScopedSchedulerTest, DestructionCancelsPendingTasks) {
  VirtualScheduler s;
  bool ran = false;
  {
    ScopedScheduler a(s);
    a.RunAfter(milliseconds(1), [&] { ran = true; });
    a.Post([&] { ran = true; });
  }
  EXPECT_EQ(s.pending(), 0u);
  s.RunUntilIdle();
  EXPECT_FALSE(ran);
}

TEST(ScopedSchedulerTest, CancelAllFromInsideOwnTask) {
  VirtualScheduler s;
  ScopedScheduler a(s);
  int ran = 0;
  a.RunAfter(milliseconds(1), [&] {
    ++ran;
    EXPECT_EQ(a.CancelAll(), 2u);
  });
  a.RunAfter(milliseconds(1), [&] { ++ran; });
  a.RunAfter(milliseconds(3), [&] { ++ran; });
  s.RunUntilIdle();
  EXPECT_EQ(ran, 1);
}

}  // namespace
}  // namespace hearsay::simenv
