#include "hearsay/http/deadline.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <memory>

namespace hearsay::http {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

// Runs `io` until `done` or `limit` passes; returns the time it ran.
template <typename Done>
SteadyClock::duration RunUntil(boost::asio::io_context& io, Done done,
                               SteadyClock::duration limit) {
  auto start = SteadyClock::now();
  while (!done() && SteadyClock::now() - start < limit) io.run_for(5ms);
  return SteadyClock::now() - start;
}

struct Owner {
  explicit Owner(boost::asio::io_context& io, Duration max_wait)
      : deadline(io.get_executor(), max_wait) {}
  Deadline deadline;
  int fired = 0;
};

TEST(DeadlineTest, FiresOnceWhenItPasses) {
  boost::asio::io_context io;
  auto owner = std::make_shared<Owner>(io, 1s);
  const auto set_at = SteadyClock::now();
  owner->deadline.Set(50ms, [owner] { owner->fired++; });
  RunUntil(
      io, [&] { return owner->fired > 0; }, 2s);
  EXPECT_EQ(owner->fired, 1);
  EXPECT_GE(SteadyClock::now() - set_at, 50ms) << "a deadline never fires early";
  io.run_for(100ms);
  EXPECT_EQ(owner->fired, 1);
}

TEST(DeadlineTest, MovingItLaterDelaysTheFiring) {
  boost::asio::io_context io;
  auto owner = std::make_shared<Owner>(io, 50ms);
  auto fire = [owner] { owner->fired++; };
  owner->deadline.Set(50ms, fire);
  // Keep pushing it 500 ms ahead for 300 ms: it must not fire meanwhile (pushes come every
  // ~10 ms; 500 ms leaves room for a starved test thread).
  const auto start = SteadyClock::now();
  auto last_set = start;
  while (SteadyClock::now() - start < 300ms) {
    last_set = SteadyClock::now();
    owner->deadline.Set(500ms, fire);
    io.run_for(10ms);
  }
  EXPECT_EQ(owner->fired, 0);
  RunUntil(
      io, [&] { return owner->fired > 0; }, 2s);
  EXPECT_EQ(owner->fired, 1);
  EXPECT_GE(SteadyClock::now() - last_set, 500ms) << "it fired after the last push";
}

TEST(DeadlineTest, ANearerDeadlineIsNotLateBehindALongWait) {
  boost::asio::io_context io;
  auto owner = std::make_shared<Owner>(io, 10s);
  auto fire = [owner] { owner->fired++; };
  owner->deadline.Set(10s, fire);
  io.run_for(10ms);
  const auto set_at = SteadyClock::now();
  owner->deadline.Set(50ms, fire);
  RunUntil(
      io, [&] { return owner->fired > 0; }, 2s);
  EXPECT_EQ(owner->fired, 1) << "fired within the 2 s bound, not after the first 10 s wait";
  EXPECT_GE(SteadyClock::now() - set_at, 50ms) << "a deadline never fires early";
}

TEST(DeadlineTest, ClearedItDoesNotFire) {
  boost::asio::io_context io;
  auto owner = std::make_shared<Owner>(io, 20ms);
  owner->deadline.Set(30ms, [owner] { owner->fired++; });
  owner->deadline.Clear();
  io.run_for(150ms);
  EXPECT_EQ(owner->fired, 0);
}

TEST(DeadlineTest, CancelLetsGoOfTheOwnerAtOnce) {
  boost::asio::io_context io;
  auto owner = std::make_shared<Owner>(io, 10s);
  std::weak_ptr<Owner> weak = owner;
  owner->deadline.Set(10s, [owner] { owner->fired++; });
  owner->deadline.Cancel();
  owner.reset();
  io.run_for(50ms);  // the cancelled wait's handler runs and drops its copy
  EXPECT_TRUE(weak.expired());
}

}  // namespace
}  // namespace hearsay::http
