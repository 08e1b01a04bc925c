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
#include <string>

#include "hearsay/common/status.h"

namespace hearsay::sim {

struct RunFailure {
  size_t index = 0;
  Status status;
};

// Checks an experiment's common options (an output folder, seeds >= 0, jobs >= 1, a run
// function) and creates the folder: INVALID_ARGUMENT or INTERNAL naming what is wrong.
Status PrepareRuns(const std::string& out_dir, int seeds, int jobs, bool has_run);

// Calls one(i) for every i in [0, count) on `jobs` threads (the caller's among them; at least one)
// and progress(done, count) after each. Returns the failure of the lowest index that failed.
std::optional<RunFailure> RunParallel(size_t count, int jobs,
                                      const std::function<Status(size_t)>& one,
                                      const std::function<void(uint64_t, uint64_t)>& progress);

}  // namespace hearsay::sim
