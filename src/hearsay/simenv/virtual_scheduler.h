// VirtualScheduler: the simulator's deterministic event loop and virtual clock, in one object.
//
// Every node of a simulation shares one VirtualScheduler. It is a Scheduler (env/scheduler.h) and
// a Clock (env/clock.h): time stands still while a task runs and jumps to the next event between
// tasks, so a simulated hour costs only the events in it. Events are ordered by (time, sequence
// number); the sequence number is taken when the event is scheduled, so events due at the same
// time run in scheduling order (FIFO), and Post() runs after everything already queued for now.
// Nothing depends on addresses, hashing of pointers or wall time, so the same program with the same
// seed runs the same events in the same order, and trace_hash() says so in 64 bits.
//
// Timer groups: a group tags the timers of one owner (in practice one node) so they can be
// cancelled together when that node crashes. ScopedScheduler (below) is the per-node Scheduler
// facade that does the tagging; a group costs nothing per event.
//
// Ownership: the scheduler owns queued tasks until they run or are cancelled; a task is destroyed
// right after it runs (or when it is cancelled, or when the scheduler is destroyed).
// Thread-safety: none. One thread drives the loop and every task runs on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hearsay/env/clock.h"
#include "hearsay/env/scheduler.h"
#include "hearsay/env/time.h"

namespace hearsay::simenv {

// Identifies a timer group; kNoGroup is the default group of plain RunAfter/Post.
using TimerGroup = uint32_t;
inline constexpr TimerGroup kNoGroup = 0;

class VirtualScheduler final : public Scheduler, public Clock {
 public:
  // Starts at `start` (the simulator's epoch is zero) with an empty queue.
  explicit VirtualScheduler(TimePoint start = TimePoint{});
  ~VirtualScheduler() override;

  VirtualScheduler(const VirtualScheduler&) = delete;
  VirtualScheduler& operator=(const VirtualScheduler&) = delete;

  // Clock: the virtual time; it only moves forward, and only between tasks.
  TimePoint Now() const override { return TimePoint(Duration(now_)); }

  // Scheduler.
  const Clock& clock() const override { return *this; }
  TimerId RunAfter(Duration delay, Task task) override;
  bool Cancel(TimerId id) override;
  void Post(Task task) override;

  // RunAfter, tagging the timer with `group` so CancelGroup() can drop it.
  TimerId RunAfterInGroup(TimerGroup group, Duration delay, Task task);
  // A fresh group id (never kNoGroup, never reused).
  TimerGroup NewGroup();
  // Cancels every pending timer of `group` (not kNoGroup); returns how many. O(timer slots).
  size_t CancelGroup(TimerGroup group);
  // Cancels `id` only if it is pending and tagged `group`; otherwise returns false.
  bool CancelInGroup(TimerGroup group, TimerId id);
  // Pending timers of `group`.
  size_t pending_in_group(TimerGroup group) const;

  // Runs the next pending event, advancing the clock to its time. False if nothing is pending.
  bool Step();
  // Runs every event due at or before `deadline` (including ones those events schedule for that
  // window), then sets the clock to `deadline` if it is later. Returns the number of events run.
  // Stops early, without advancing the clock past the last event, if a task calls Stop().
  uint64_t RunUntil(TimePoint deadline);
  // RunUntil(Now() + d).
  uint64_t RunFor(Duration d);
  // Runs events until none is pending or `max_events` have run (or Stop() is called). Returns the
  // number run; pending() == 0 afterwards means the simulation went idle.
  uint64_t RunUntilIdle(uint64_t max_events = UINT64_MAX);
  // Asks the running RunUntil/RunFor/RunUntilIdle to return after the current task.
  void Stop() { stop_requested_ = true; }

  // Events run so far (cancelled timers are not counted).
  uint64_t events_run() const { return events_run_; }
  // Timers scheduled but neither run nor cancelled.
  size_t pending() const { return live_; }
  // Heap entries including cancelled ones not yet discarded; bounded by about 2 * pending() + 1024.
  size_t queued_entries() const { return heap_.size(); }
  // The time of the earliest pending event, or TimePoint::max() when idle.
  TimePoint NextEventTime();

  // A running 64-bit digest of the run: every executed event folds its (time, sequence number),
  // and hosts fold their own observations with FoldTrace. Equal runs give equal hashes.
  uint64_t trace_hash() const { return trace_; }
  // Folds `value` into the trace hash (order-sensitive).
  void FoldTrace(uint64_t value);
  // Folds a hash of `bytes` (and their length) into the trace hash.
  void FoldTrace(std::span<const uint8_t> bytes);

 private:
  // One heap entry. `seq` doubles as the entry's identity: a slot whose seq differs from the
  // entry's was cancelled (and maybe reused), so the entry is a tombstone.
  struct Entry {
    int64_t time;  // nanoseconds since the epoch
    uint64_t seq;
    uint32_t slot;
  };
  // A queued task. Free slots are chained through `next_free`.
  struct Slot {
    Task task;
    uint64_t seq = 0;         // 0 when the slot is free
    uint32_t generation = 1;  // bumped on every release; part of TimerId
    uint32_t next_free = 0;
    TimerGroup group = kNoGroup;
  };

  // Heap order: earliest time first, then lowest seq.
  static bool Before(const Entry& a, const Entry& b) {
    return a.time != b.time ? a.time < b.time : a.seq < b.seq;
  }

  // A 4-ary min-heap: half the depth of a binary heap, and a node's children share a cache line
  // or two, which matters once tens of thousands of timers are pending.
  void HeapPush(const Entry& e);
  void HeapPopTop();
  void SiftDown(size_t i);

  TimerId Schedule(TimerGroup group, Duration delay, Task task);
  void ReleaseSlot(uint32_t slot);
  // Drops tombstones at the top of the heap; true if a live entry is on top.
  bool SkipTombstones();
  // Rebuilds the heap without tombstones once they outnumber live entries.
  void MaybeCompact();
  // Pops and runs the top entry, which must be live.
  void RunTop();

  // Invariants:
  //  - now_ never decreases; every live entry's time is >= now_ while no task runs.
  //  - live_ == number of slots with seq != 0 == number of heap entries whose slot holds their seq;
  //    heap_.size() - live_ tombstones, and MaybeCompact keeps them <= max(live_, 1024) + 1.
  //  - TimerId = (generation << 32) | slot, for the slot's generation while it holds the timer.
  //  - group_live_[g] == number of live slots tagged g.
  int64_t now_;
  uint64_t next_seq_ = 1;
  std::vector<Entry> heap_;
  std::vector<Slot> slots_;
  uint32_t free_head_ = UINT32_MAX;
  size_t live_ = 0;
  std::vector<uint32_t> group_live_{0};
  uint64_t events_run_ = 0;
  uint64_t trace_;
  bool stop_requested_ = false;
};

// A node's view of the shared VirtualScheduler: forwards everything, tagging its timers with its
// own group, so CancelAll() (a crash) drops exactly that node's pending timers and posted tasks.
// Destroying it also cancels them, so a task never outlives the node that scheduled it.
// Thread-safety: as VirtualScheduler.
class ScopedScheduler final : public Scheduler {
 public:
  // `base` must outlive this object.
  explicit ScopedScheduler(VirtualScheduler& base) : base_(base), group_(base.NewGroup()) {}
  ~ScopedScheduler() override { CancelAll(); }

  ScopedScheduler(const ScopedScheduler&) = delete;
  ScopedScheduler& operator=(const ScopedScheduler&) = delete;

  const Clock& clock() const override { return base_; }
  TimerId RunAfter(Duration delay, Task task) override {
    return base_.RunAfterInGroup(group_, delay, std::move(task));
  }
  // Cancels only this facade's own timers; another group's id returns false.
  bool Cancel(TimerId id) override { return base_.CancelInGroup(group_, id); }
  void Post(Task task) override {
    base_.RunAfterInGroup(group_, Duration::zero(), std::move(task));
  }

  // Cancels every pending timer and posted task scheduled through this facade; returns how many.
  size_t CancelAll() { return base_.CancelGroup(group_); }
  // Pending timers scheduled through this facade.
  size_t pending() const { return base_.pending_in_group(group_); }
  VirtualScheduler& base() const { return base_; }
  TimerGroup group() const { return group_; }

 private:
  VirtualScheduler& base_;
  TimerGroup group_;
};

}  // namespace hearsay::simenv
