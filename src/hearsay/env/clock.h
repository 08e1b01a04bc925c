// Clock: the only way core code learns the time.
//
// Implementations: the simulator's virtual clock (sim/), and the daemon's steady clock (net/).
// Thread-safety: Now() may be called from the thread that owns the core; implementations say
// whether more is allowed.
#pragma once

#include "hearsay/env/time.h"

namespace hearsay {

class Clock {
 public:
  virtual ~Clock() = default;
  // The current time on the host's monotonic time line. Never goes backwards.
  virtual TimePoint Now() const = 0;
};

}  // namespace hearsay
