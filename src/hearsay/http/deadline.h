// A connection's deadline (read, write or response timeout) that moves on every request without
// touching Asio's timer queue.
//
// Re-arming a steady_timer cancels its pending wait, and Asio then posts the cancelled handler
// to run: one more trip through the scheduler (and an epoll_wait) per move. A keep-alive
// connection moves its deadlines four or five times per request. Here the timer's one pending
// wait checks the current deadline when it fires and waits again if that lies ahead; Set, Clear
// and moving a deadline later only store a time. A wait lasts at most `max_wait`, so a deadline
// set at least `max_wait` ahead is always noticed in time by the wait already pending; only a
// nearer one re-arms the timer.
//
// Not thread-safe: use from the owner's executor (its strand, or its single-threaded
// io_context).
#pragma once

#include <algorithm>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <utility>  // before Asio (std::exchange on g++ 12 with Boost 1.74)

#include "hearsay/env/time.h"

namespace hearsay::http {

class Deadline {
 public:
  using SteadyClock = std::chrono::steady_clock;

  // `max_wait`: the longest one wait of the timer lasts; pick the owner's shortest timeout, so
  // that re-arming is rare.
  Deadline(const boost::asio::any_io_executor& executor, Duration max_wait)
      : timer_(executor), max_wait_(std::chrono::duration_cast<SteadyClock::duration>(max_wait)) {}

  // The deadline is now `d` from now. `fire` runs on the timer's executor once it passes,
  // unless Set, Clear or Cancel comes first. `fire` must keep its owner alive (hold a shared_ptr
  // to it), and every Set of one deadline must pass the same action: the pending wait may carry
  // an earlier Set's `fire`.
  template <typename Fire>
  void Set(Duration d, Fire&& fire) {
    due_ = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(d);
    if (waiting_ && wait_until_ <= due_) return;  // the pending wait will see it
    Wait(std::forward<Fire>(fire));
  }

  // No deadline; the pending wait (if any) will find nothing due.
  void Clear() { due_ = SteadyClock::time_point::max(); }

  // No deadline, and the pending wait lets go of its owner now (at close).
  void Cancel() {
    Clear();
    if (waiting_) timer_.cancel();
  }

 private:
  template <typename Fire>
  void Wait(Fire fire) {
    wait_until_ = std::min(due_, SteadyClock::now() + max_wait_);
    waiting_ = true;
    uint64_t generation = ++generation_;
    // Cancels a pending wait, whose handler then sees a stale generation.
    timer_.expires_at(wait_until_);
    // `this` outlives the handler: `fire` holds the owner, which holds this Deadline.
    timer_.async_wait(
        [this, generation, fire = std::move(fire)](const boost::system::error_code& ec) mutable {
          if (generation != generation_) return;
          waiting_ = false;
          if (ec || due_ == SteadyClock::time_point::max()) return;
          if (SteadyClock::now() < due_) return Wait(std::move(fire));
          Clear();
          fire();
        });
  }

  boost::asio::steady_timer timer_;
  SteadyClock::duration max_wait_;
  SteadyClock::time_point due_ = SteadyClock::time_point::max();
  SteadyClock::time_point wait_until_{};
  bool waiting_ = false;
  uint64_t generation_ = 0;
};

}  // namespace hearsay::http
