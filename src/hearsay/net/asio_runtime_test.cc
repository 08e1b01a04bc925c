#include "hearsay/net/asio_runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <thread>
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
  // Deadlines are taken at RunAfter's call, on a real clock: the checks below hold however slow
  // the machine is between the calls (only relative orders that the contract fixes are checked).
  boost::asio::io_context io;
  AsioScheduler s(io);
  std::vector<int> order;
  bool done = false;
  auto record = [&](int v) {
    order.push_back(v);
    done = order.size() == 54;
  };
  s.RunAfter(300ms, [&] { record(3); });
  s.RunAfter(10ms, [&] { record(1); });
  for (int i = 0; i < 50; ++i) s.RunAfter(0ms, [&, i] { record(100 + i); });
  s.RunAfter(20ms, [&] { record(2); });
  s.RunAfter(-5ms, [&] { record(200); });  // negative counts as zero
  RunUntil(io, done);
  ASSERT_TRUE(done);
  auto pos = [&](int v) { return std::find(order.begin(), order.end(), v) - order.begin(); };
  // Same-or-later deadlines scheduled later run later: the zero-delay tasks in their order.
  for (int i = 1; i < 50; ++i) EXPECT_LT(pos(100 + i - 1), pos(100 + i));
  EXPECT_LT(pos(149), pos(200));
  EXPECT_LT(pos(1), pos(2));
  EXPECT_LT(pos(2), pos(3));
  EXPECT_EQ(order.back(), 3);
  EXPECT_EQ(s.pending_timers(), 0u);
}

TEST(AsioSchedulerTest, EarlierTimerRearms) {
  boost::asio::io_context io;
  AsioScheduler s(io);
  std::vector<int> order;
  bool done = false;
  s.RunAfter(1000ms, [&] {
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
  EXPECT_LT(first_at - start, 900ms);
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

TEST(AsioSchedulerTest, OffloadRunsWorkOnTheOffloadContextAndThenOnTheCore) {
  boost::asio::io_context core;
  boost::asio::io_context offload;
  auto guard = boost::asio::make_work_guard(offload);
  std::thread io_thread([&] { offload.run(); });
  AsioScheduler s(core, &offload);
  std::thread::id work_thread;
  std::thread::id then_thread;
  int result = 0;
  int seen = 0;
  s.Offload(
      [&] {
        work_thread = std::this_thread::get_id();
        result = 42;
      },
      [&] {
        then_thread = std::this_thread::get_id();
        seen = result;
        core.stop();
      });
  // The core runs until the continuation stops it (run() returns only then: nothing else is
  // queued on it, and the work guard of the offload context is not the core's).
  auto core_guard = boost::asio::make_work_guard(core);
  core.run();
  const std::thread::id io_id = io_thread.get_id();
  guard.reset();
  io_thread.join();
  EXPECT_EQ(then_thread, std::this_thread::get_id());
  EXPECT_EQ(work_thread, io_id);
  EXPECT_EQ(seen, 42);
}

TEST(AsioSchedulerTest, OffloadWithoutAContextRunsInline) {
  boost::asio::io_context core;
  AsioScheduler s(core);
  std::vector<int> order;
  s.Offload([&] { order.push_back(1); }, [&] { order.push_back(2); });
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(AsioSchedulerTest, OffloadContinuationAfterTheSchedulerIsGoneDoesNothing) {
  boost::asio::io_context core;
  boost::asio::io_context offload;
  bool worked = false;
  bool continued = false;
  {
    AsioScheduler s(core, &offload);
    s.Offload([&] { worked = true; }, [&] { continued = true; });
  }
  // The work runs after the scheduler is destroyed and posts its continuation to the core.
  offload.run();
  EXPECT_TRUE(worked);
  EXPECT_EQ(core.poll(), 1u);  // the continuation's handler ran, and did nothing
  EXPECT_FALSE(continued);
}

TEST(OsRandomSeedTest, Varies) {
  // Two 64-bit draws from the OS are equal with probability 2^-64.
  EXPECT_NE(OsRandomSeed(), OsRandomSeed());
}

}  // namespace
}  // namespace hearsay::net
