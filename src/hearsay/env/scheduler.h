// Scheduler: how core code defers work, without threads or blocking.
//
// Tasks run one at a time on the core's thread (the daemon's core thread, or the simulator's
// event loop), so a task never races with another task of the same core. A task may schedule
// more tasks. Implementations: the simulator's deterministic event queue (sim/) and the daemon's
// event loop (net/).
//
// Work that may take long (decoding a large answer) does not belong on the core thread: Offload()
// runs it elsewhere where the implementation has somewhere else (the daemon's I/O threads), then
// runs a continuation back on the core.
#pragma once

#include <cstdint>
#include <functional>

#include "hearsay/env/clock.h"
#include "hearsay/env/time.h"

namespace hearsay {

// Identifies a pending timer. Zero is never a valid id.
using TimerId = uint64_t;
inline constexpr TimerId kNoTimer = 0;

using Task = std::function<void()>;

class Scheduler {
 public:
  virtual ~Scheduler() = default;

  // The clock this scheduler runs on. Timers fire at RunAfter's call time plus the delay.
  virtual const Clock& clock() const = 0;

  // Runs `task` once, `delay` from now (a negative delay counts as zero). Tasks due at the same
  // time run in the order they were scheduled. Returns an id for Cancel().
  virtual TimerId RunAfter(Duration delay, Task task) = 0;

  // Stops a pending timer from running. Returns false if it already ran, was cancelled, or the
  // id is unknown; all three are harmless.
  virtual bool Cancel(TimerId id) = 0;

  // Runs `task` soon, after the task that is running now, in posting order.
  virtual void Post(Task task) = 0;

  // Runs `work` off the core thread where this scheduler has another one, then `then` as a core
  // task. `work` must touch no core state: it runs concurrently with core tasks; hand its result
  // to `then` through what both capture. Whoever owns state `then` touches must make it a no-op
  // once that state is gone (it may run after). The default runs both at once, in order, on the
  // calling thread: deterministic, as the simulator and tests need.
  virtual void Offload(Task work, Task then) {
    work();
    then();
  }
};

}  // namespace hearsay
