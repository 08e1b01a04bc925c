#include "hearsay/simenv/virtual_scheduler.h"

#include <algorithm>
#include <utility>

#include "hearsay/common/check.h"
#include "hearsay/simenv/sim_hash.h"

namespace hearsay::simenv {
namespace {

constexpr size_t kMinTombstonesToCompact = 1024;
constexpr size_t kArity = 4;

}  // namespace

VirtualScheduler::VirtualScheduler(TimePoint start)
    : now_(start.time_since_epoch().count()), trace_(kTraceSeed) {}

VirtualScheduler::~VirtualScheduler() = default;

TimerId VirtualScheduler::RunAfter(Duration delay, Task task) {
  return Schedule(kNoGroup, delay, std::move(task));
}

void VirtualScheduler::Post(Task task) { Schedule(kNoGroup, Duration::zero(), std::move(task)); }

TimerId VirtualScheduler::RunAfterInGroup(TimerGroup group, Duration delay, Task task) {
  HEARSAY_CHECK_MSG(group < group_live_.size(), "unknown timer group");
  return Schedule(group, delay, std::move(task));
}

TimerId VirtualScheduler::Schedule(TimerGroup group, Duration delay, Task task) {
  HEARSAY_CHECK_MSG(task != nullptr, "scheduled an empty task");
  int64_t d = delay.count();
  if (d < 0) d = 0;
  // Saturate instead of overflowing: a timer "never" is still a valid timer.
  const int64_t time = d > INT64_MAX - now_ ? INT64_MAX : now_ + d;

  uint32_t slot;
  if (free_head_ != UINT32_MAX) {
    slot = free_head_;
    free_head_ = slots_[slot].next_free;
  } else {
    HEARSAY_CHECK(slots_.size() < UINT32_MAX);
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  const uint64_t seq = next_seq_++;
  s.task = std::move(task);
  s.seq = seq;
  s.group = group;
  ++live_;
  ++group_live_[group];
  HeapPush(Entry{time, seq, slot});
  return (static_cast<TimerId>(s.generation) << 32) | slot;
}

void VirtualScheduler::ReleaseSlot(uint32_t slot) {
  Slot& s = slots_[slot];
  s.seq = 0;
  // Generation 0 would let a TimerId of slot 0 equal kNoTimer.
  if (++s.generation == 0) s.generation = 1;
  --group_live_[s.group];
  s.group = kNoGroup;
  s.next_free = free_head_;
  free_head_ = slot;
  --live_;
}

bool VirtualScheduler::Cancel(TimerId id) {
  const uint32_t slot = static_cast<uint32_t>(id);
  const uint32_t generation = static_cast<uint32_t>(id >> 32);
  if (slot >= slots_.size()) return false;
  Slot& s = slots_[slot];
  if (s.seq == 0 || s.generation != generation) return false;
  // Move the task out first: its destructor may re-enter the scheduler.
  Task doomed = std::move(s.task);
  s.task = nullptr;
  ReleaseSlot(slot);
  MaybeCompact();
  return true;
}

bool VirtualScheduler::CancelInGroup(TimerGroup group, TimerId id) {
  const uint32_t slot = static_cast<uint32_t>(id);
  if (slot >= slots_.size() || slots_[slot].seq == 0 || slots_[slot].group != group) return false;
  return Cancel(id);
}

TimerGroup VirtualScheduler::NewGroup() {
  HEARSAY_CHECK(group_live_.size() < UINT32_MAX);
  group_live_.push_back(0);
  return static_cast<TimerGroup>(group_live_.size() - 1);
}

size_t VirtualScheduler::CancelGroup(TimerGroup group) {
  if (group == kNoGroup || group >= group_live_.size() || group_live_[group] == 0) return 0;
  std::vector<Task> doomed;
  doomed.reserve(group_live_[group]);
  for (uint32_t i = 0; i < slots_.size() && group_live_[group] > 0; ++i) {
    Slot& s = slots_[i];
    if (s.seq == 0 || s.group != group) continue;
    doomed.push_back(std::move(s.task));
    s.task = nullptr;
    ReleaseSlot(i);
  }
  MaybeCompact();
  return doomed.size();
}

size_t VirtualScheduler::pending_in_group(TimerGroup group) const {
  return group < group_live_.size() ? group_live_[group] : 0;
}

void VirtualScheduler::HeapPush(const Entry& e) {
  size_t i = heap_.size();
  heap_.push_back(e);
  while (i > 0) {
    const size_t parent = (i - 1) / kArity;
    if (!Before(e, heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = e;
}

void VirtualScheduler::HeapPopTop() {
  heap_.front() = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) SiftDown(0);
}

void VirtualScheduler::SiftDown(size_t i) {
  const size_t n = heap_.size();
  const Entry e = heap_[i];
  while (true) {
    const size_t first = kArity * i + 1;
    if (first >= n) break;
    const size_t last = std::min(first + kArity, n);
    size_t best = first;
    for (size_t c = first + 1; c < last; ++c) {
      if (Before(heap_[c], heap_[best])) best = c;
    }
    if (!Before(heap_[best], e)) break;
    heap_[i] = heap_[best];
    i = best;
  }
  heap_[i] = e;
}

bool VirtualScheduler::SkipTombstones() {
  while (!heap_.empty()) {
    const Entry& top = heap_.front();
    if (slots_[top.slot].seq == top.seq) return true;
    HeapPopTop();
  }
  return false;
}

void VirtualScheduler::MaybeCompact() {
  const size_t tombstones = heap_.size() - live_;
  if (tombstones <= std::max(live_, kMinTombstonesToCompact)) return;
  std::erase_if(heap_, [this](const Entry& e) { return slots_[e.slot].seq != e.seq; });
  for (size_t i = heap_.size() / kArity + 1; i-- > 0;) SiftDown(i);
}

void VirtualScheduler::RunTop() {
  const Entry e = heap_.front();
  HeapPopTop();
  HEARSAY_CHECK(e.time >= now_);
  now_ = e.time;
  // The task may schedule more (growing slots_), so it leaves its slot before it runs.
  Task task = std::move(slots_[e.slot].task);
  slots_[e.slot].task = nullptr;
  ReleaseSlot(e.slot);
  ++events_run_;
  trace_ = FoldHash(FoldHash(trace_, static_cast<uint64_t>(e.time)), e.seq);
  task();
}

bool VirtualScheduler::Step() {
  if (!SkipTombstones()) return false;
  RunTop();
  return true;
}

uint64_t VirtualScheduler::RunUntil(TimePoint deadline) {
  const int64_t limit = deadline.time_since_epoch().count();
  stop_requested_ = false;
  uint64_t ran = 0;
  while (!stop_requested_ && SkipTombstones() && heap_.front().time <= limit) {
    RunTop();
    ++ran;
  }
  if (!stop_requested_ && limit > now_) now_ = limit;
  stop_requested_ = false;
  return ran;
}

uint64_t VirtualScheduler::RunFor(Duration d) {
  const int64_t count = std::max<int64_t>(d.count(), 0);
  const int64_t limit = count > INT64_MAX - now_ ? INT64_MAX : now_ + count;
  return RunUntil(TimePoint(Duration(limit)));
}

uint64_t VirtualScheduler::RunUntilIdle(uint64_t max_events) {
  stop_requested_ = false;
  uint64_t ran = 0;
  while (ran < max_events && !stop_requested_ && SkipTombstones()) {
    RunTop();
    ++ran;
  }
  stop_requested_ = false;
  return ran;
}

TimePoint VirtualScheduler::NextEventTime() {
  if (!SkipTombstones()) return TimePoint::max();
  return TimePoint(Duration(heap_.front().time));
}

void VirtualScheduler::FoldTrace(uint64_t value) { trace_ = FoldHash(trace_, value); }

void VirtualScheduler::FoldTrace(std::span<const uint8_t> bytes) {
  trace_ = FoldHash(trace_, HashBytes(bytes));
}

}  // namespace hearsay::simenv
