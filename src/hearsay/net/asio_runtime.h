// The daemon's environment for the core: a steady Clock, a Scheduler on an asio::io_context, and
// an OS-seeded Rng.
//
// AsioScheduler keeps its own timer queue ordered by (deadline, sequence) behind one
// asio::steady_timer, so tasks due at the same time run in the order they were scheduled (the
// Scheduler contract; Asio's own timer heap does not promise that). Post() is asio::post, which
// an io_context run by one thread executes in posting order.
//
// Offload() posts the work to a second io_context, the daemon's I/O one, when one is given (else
// runs it inline, as the default does), and posts the continuation back to the core io_context;
// a continuation that arrives after the scheduler is destroyed does nothing.
//
// Ownership: the scheduler borrows the io_context (and the offload one), which must outlive it
// and every offloaded work. Destroy the scheduler
// only after the io_context has stopped running (or from a task on it); pending tasks are
// dropped without running.
// Thread-safety: AsioClock::Now() is safe from any thread. AsioScheduler::Post() is safe from any
// thread; RunAfter() and Cancel() only on the thread running the io_context (the core thread).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>

#include "hearsay/env/clock.h"
#include "hearsay/env/rng.h"
#include "hearsay/env/scheduler.h"

namespace hearsay::net {

// std::chrono::steady_clock, on the host timeline.
class AsioClock final : public Clock {
 public:
  TimePoint Now() const override;
};

class AsioScheduler final : public Scheduler {
 public:
  // `offload`: where Offload() runs work (the I/O io_context); null runs it inline.
  explicit AsioScheduler(boost::asio::io_context& io, boost::asio::io_context* offload = nullptr);
  ~AsioScheduler() override;
  AsioScheduler(const AsioScheduler&) = delete;
  AsioScheduler& operator=(const AsioScheduler&) = delete;

  const Clock& clock() const override { return clock_; }
  TimerId RunAfter(Duration delay, Task task) override;
  bool Cancel(TimerId id) override;
  void Post(Task task) override;
  void Offload(Task work, Task then) override;

  // Timers scheduled and not yet run or cancelled.
  size_t pending_timers() const { return queue_.size(); }

 private:
  using Key = std::pair<TimePoint, TimerId>;  // ids increase, so they double as the FIFO rank

  // Points the asio timer at the earliest deadline (or leaves it idle).
  void Arm();
  void OnTimer();

  boost::asio::io_context& io_;
  boost::asio::io_context* offload_;
  AsioClock clock_;
  boost::asio::steady_timer timer_;
  // Invariants: queue_ and deadlines_ hold the same ids; armed_ is the deadline the asio timer
  // waits for (TimePoint::max() when idle); arm_generation_ identifies the live wait.
  std::map<Key, Task> queue_;
  std::unordered_map<TimerId, TimePoint> deadlines_;
  TimerId next_id_ = 1;
  TimePoint armed_ = TimePoint::max();
  uint64_t arm_generation_ = 0;
  // Cleared by the destructor. A wait that completed just before destruction still has its
  // handler queued on the io_context (destroying the timer cannot cancel it); the handler checks
  // this before touching the scheduler, as does an offloaded work's continuation (both run on the
  // core thread, as the destructor does).
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// 64 bits from the OS (getrandom); falls back to std::random_device.
uint64_t OsRandomSeed();

}  // namespace hearsay::net
