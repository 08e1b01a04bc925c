// RunParallel: the experiments' runs spread over worker threads. Each run is a whole simulation
// with its own scheduler and rng, so runs share nothing and their results do not depend on the
// number of threads or on the order they finish in.
//
// Thread-safety: `one` is called from several threads at once, each time with another index;
// `progress` is called under a lock, one call at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>

#include "hearsay/common/status.h"

namespace hearsay::sim {

struct RunFailure {
  size_t index = 0;
  Status status;
};

// Calls one(i) for every i in [0, count) on `jobs` threads (the caller's among them; at least one)
// and progress(done, count) after each. Returns the failure of the lowest index that failed.
std::optional<RunFailure> RunParallel(size_t count, int jobs,
                                      const std::function<Status(size_t)>& one,
                                      const std::function<void(uint64_t, uint64_t)>& progress);

}  // namespace hearsay::sim
