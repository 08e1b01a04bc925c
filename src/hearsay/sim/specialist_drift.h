// SpecialistDrift: how stable the subject → serving node mapping is over a run (the paper's
// claim 4, "eviction makes specialists drift").
//
// Time is cut into windows of `window_ms` (by arrival). In each window, a subject with at least
// `min_requests` requests has a specialist: the node that served most of them (ties go to the
// lowest node index). For each subject, each pair of consecutive qualifying windows is one
// transition; drift is the fraction of transitions, pooled over subjects, in which the
// specialist changed. specialist_share is the mean, over qualifying (subject, window) cells, of
// the fraction of that subject's requests its specialist served: 1 means every subject lives on
// one node at a time, 1 / N means no specialization at all.
//
// Records without a subject (< 0) or a serving node (< 0) are ignored.
//
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <span>

#include "hearsay/sim/sim_run.h"

namespace hearsay::sim {

struct DriftStats {
  // Fraction of transitions in which a subject's specialist changed, in [0, 1] (0 if none).
  double drift = 0;
  // Mean share of a subject's requests served by its specialist, in [0, 1] (0 if no cell).
  double specialist_share = 0;
  uint64_t transitions = 0;
  uint64_t cells = 0;
};

// The drift of `records` (any order). window_ms must be > 0 and min_requests >= 1; otherwise
// the result is all zeros.
DriftStats SpecialistDrift(std::span<const RequestRecord> records, double window_ms,
                           uint32_t min_requests);

}  // namespace hearsay::sim
