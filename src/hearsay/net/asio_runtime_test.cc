#include "hearsay/net/asio_runtime.h"

#include <gtest/gtest.h>

#include <vector>

namespace hearsay::net {
namespace {

using namespace std::chrono_literals;

// Runs `io` on this thread until `done` or a bound of 5 s.
void RunUntil(boost::asio::io_context& io, const bool& done) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    io.run_for(5ms);
    io.restart();
  }
}

TEST(AsioClockTest, Monotonic) {
  AsioClock clock;
  TimePoint a = clock.Now();
  TimePoint b = clock.Now();
  EXPECT_LE(a, b);
}

TEST(AsioSchedulerTest, RunsTimersInDeadlineThenSchedulingOrder) {
  boost::asio::io_context io;
  AsioScheduler s(io);
  std::vector<int> order;
  bool done = false;
  s.RunAfter(30ms, [&] {
    order.push_back(3);
    done = true;
  });
  s.RunAfter(10ms, [&] { order.push_back(1); });
  for (int i = 0; i < 50; ++i) s.RunAfter(0ms, [&, i] { order.push_back(100 + i); });
  s.RunAfter(20ms, [&] { order.push_back(2); });
  s.RunAfter(-5ms, [&] { order.push_back(200); });  // negative counts as zero
  RunUntil(io, done);
  ASSERT_TRUE(done);
  std::vector<int> want;
  for (int i = 0; i < 50; ++i) want.push_back(100 + i);
  want.push_back(200);
  want.insert(want.end(), {1, 2, 3});
  EXPECT_EQ(order, want);
  EXPECT_EQ(s.pending_timers(), 0u);
}

TEST(AsioSchedulerTest, EarlierTimerRearms) {
  boost::asio::io_context io;
  AsioScheduler s(io);
  std::vector<int> order;
  bool done = false;
  s.RunAfter(200ms, [&] {
    order.push_back(2);
    done = true;
  });
  s.RunAfter(1ms, [&] { order.push_back(1); });
  const TimePoint start = s.clock().Now();
  TimePoint first_at{};
  s.RunAfter(2ms, [&] { first_at = s.clock().Now(); });
  RunUntil(io, done);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  // The 2 ms timer did not wait for the 200 ms one.
  EXPECT_LT(first_at - start, 150ms);
}

TEST(AsioSchedulerTest, CancelStopsTimer) {
  boost::asio::io_context io;
  AsioScheduler s(io);
  bool cancelled_ran = false;
  bool done = false;
  TimerId id = s.RunAfter(5ms, [&] { cancelled_ran = true; });
  s.RunAfter(20ms, [&] { done = true; });
  EXPECT_TRUE(s.Cancel(id));
  EXPECT_FALSE(s.Cancel(id));
  EXPECT_FALSE(s.Cancel(kNoTimer));
  EXPECT_FALSE(s.Cancel(12345));
  RunUntil(io, done);
  EXPECT_TRUE(done);
  EXPECT_FALSE(cancelled_ran);
}

TEST(AsioSchedulerTest, CancelFromATaskOfTheSameBatch) {
  boost::asio::io_context io;
  AsioScheduler s(io);
  bool second_ran = false;
  bool done = false;
  TimerId second = kNoTimer;
  s.RunAfter(0ms, [&] { EXPECT_TRUE(s.Cancel(second)); });
  second = s.RunAfter(0ms, [&] { second_ran = true; });
  s.RunAfter(10ms, [&] { done = true; });
  RunUntil(io, done);
  EXPECT_FALSE(second_ran);
}

TEST(AsioSchedulerTest, PostRunsInOrderAndTasksMayReschedule) {
  boost::asio::io_context io;
  AsioScheduler s(io);
  std::vector<int> order;
  bool done = false;
  s.Post([&] { order.push_back(1); });
  s.Post([&] {
    order.push_back(2);
    s.Post([&] { order.push_back(4); });
    s.RunAfter(1ms, [&] {
      order.push_back(5);
      done = true;
    });
  });
  s.Post([&] { order.push_back(3); });
  RunUntil(io, done);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4, 5}));
}

TEST(OsRandomSeedTest, Varies) {
  // Two 64-bit draws from the OS are equal with probability 2^-64.
  EXPECT_NE(OsRandomSeed(), OsRandomSeed());
}

}  // namespace
}  // namespace hearsay::net
