#include "hearsay/net/asio_runtime.h"

#include <sys/random.h>

#include <boost/asio/post.hpp>
#include <chrono>
#include <random>

namespace hearsay::net {

TimePoint AsioClock::Now() const {
  return TimePoint(
      std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now().time_since_epoch()));
}

AsioScheduler::AsioScheduler(boost::asio::io_context& io, boost::asio::io_context* offload)
    : io_(io), offload_(offload), timer_(io) {}

AsioScheduler::~AsioScheduler() { *alive_ = false; }

TimerId AsioScheduler::RunAfter(Duration delay, Task task) {
  if (delay < Duration::zero()) delay = Duration::zero();
  const TimePoint deadline = clock_.Now() + delay;
  const TimerId id = next_id_++;
  queue_.emplace(Key{deadline, id}, std::move(task));
  deadlines_.emplace(id, deadline);
  if (deadline < armed_) Arm();
  return id;
}

bool AsioScheduler::Cancel(TimerId id) {
  auto it = deadlines_.find(id);
  if (it == deadlines_.end()) return false;
  queue_.erase(Key{it->second, id});
  deadlines_.erase(it);
  // The asio timer may stay armed for a deadline that is gone: it then fires and finds nothing.
  return true;
}

void AsioScheduler::Post(Task task) { boost::asio::post(io_, std::move(task)); }

void AsioScheduler::Offload(Task work, Task then) {
  if (offload_ == nullptr) {
    work();
    then();
    return;
  }
  // The work touches only what it captured; `core` outlives the scheduler, `alive` is read on the
  // core thread only.
  boost::asio::post(*offload_, [&core = io_, alive = alive_, work = std::move(work),
                                then = std::move(then)]() mutable {
    work();
    boost::asio::post(core, [alive = std::move(alive), then = std::move(then)] {
      if (*alive) then();
    });
  });
}

void AsioScheduler::Arm() {
  if (queue_.empty()) {
    armed_ = TimePoint::max();
    ++arm_generation_;
    timer_.cancel();
    return;
  }
  armed_ = queue_.begin()->first.first;
  const uint64_t generation = ++arm_generation_;
  timer_.expires_at(std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(armed_.time_since_epoch())));
  timer_.async_wait([this, alive = alive_, generation](const boost::system::error_code& ec) {
    if (ec || !*alive || generation != arm_generation_) return;
    OnTimer();
  });
}

void AsioScheduler::OnTimer() {
  armed_ = TimePoint::max();
  const TimePoint now = clock_.Now();
  // Run what is due now; tasks they schedule for later (or for "now" after this instant) wait for
  // the next wake-up, so posted work interleaves and a task rescheduling itself cannot spin.
  const TimerId last_id = next_id_ - 1;
  while (!queue_.empty()) {
    auto it = queue_.begin();
    if (it->first.first > now || it->first.second > last_id) break;
    Task task = std::move(it->second);
    deadlines_.erase(it->first.second);
    queue_.erase(it);
    task();
  }
  Arm();
}

uint64_t OsRandomSeed() {
  uint64_t seed = 0;
  if (getrandom(&seed, sizeof(seed), 0) == static_cast<ssize_t>(sizeof(seed))) return seed;
  std::random_device rd;
  return (uint64_t{rd()} << 32) ^ rd();
}

}  // namespace hearsay::net
