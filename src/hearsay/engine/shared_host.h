// SharedHost: the cores of one machine, shared by the simulated engines that run on it (CPU
// engines such as llama.cpp's llama-server, several on one host).
//
// Processor sharing: an engine's iteration is work_ms of work at full speed (one core). While k
// engines run an iteration on a host of `cores` cores, each runs at min(1, cores / k) of its
// speed; whenever an iteration begins or ends the others' remaining work is recomputed at the new
// rate and each is told its new time to finish (Member::Reschedule). Without a SharedHost every
// engine has a machine of its own (GPU engines).
//
// Prefills also slow each other beyond the core count (`contention`): while p iterations that
// prefill run, each runs at 1 / (1 + contention × (min(p, cores) − 1)) of that rate, the memory
// bandwidth and caches they share. On the llama demo's host (four llama-servers, two cores) a
// prefill with about one other beside it takes 1.26 × its time per token alone and with 1.5 or
// more 1.68 × (docs/benchmarks.md), about what 0.3 gives. 0: cores alone.
//
// Thread-safety: none; the simulator's one core thread. Deterministic: members are rescheduled
// in the order their iterations began.
#pragma once

#include <vector>

#include "hearsay/env/time.h"

namespace hearsay::engine {

class SharedHost {
 public:
  // A member's iteration in progress, told when it will end.
  class Member {
   public:
    virtual ~Member() = default;
    // The running iteration now ends `left` from now.
    virtual void Reschedule(Duration left) = 0;
  };

  // `cores` > 0, `contention` >= 0 (callers validate).
  explicit SharedHost(double cores, double contention = 0)
      : cores_(cores), contention_(contention) {}

  // `member` starts an iteration of `work_ms` at full speed, at `now`, that prefills or not;
  // every running member (this one included) is rescheduled. A member runs one iteration at a
  // time.
  void Begin(Member* member, double work_ms, TimePoint now, bool prefill = false);
  // `member`'s iteration ended (or was dropped) at `now`; the others are rescheduled. A member
  // that is not running is ignored.
  void End(Member* member, TimePoint now);

  double cores() const { return cores_; }
  // Members running an iteration now.
  size_t running() const { return jobs_.size(); }

 private:
  struct Job {
    Member* member;
    double left_ms;  // work left at full speed, as of updated_
    bool prefill = false;
  };
  // Work done since updated_ at the old rate is taken off every job.
  void Advance(TimePoint now);
  // Each job's new end at the rate of jobs_.size() members.
  void RescheduleAll();
  // The speeds jobs run at now, as fractions of full speed (jobs_ not empty).
  struct Rates {
    double other;
    double prefill;
    double Of(const Job& j) const { return j.prefill ? prefill : other; }
  };
  Rates CurrentRates() const;

  double cores_;
  double contention_;
  std::vector<Job> jobs_;
  TimePoint updated_{};
};

}  // namespace hearsay::engine
