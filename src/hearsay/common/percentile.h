// Percentile: the one quantile definition of every figure hearsay reports (the load generator's
// latency distributions, the simulator's TTFT percentiles, the gossip experiment's convergence
// and suspicion times).
//
// Definition: linear interpolation between the closest ranks, Hyndman & Fan's type 7 (the
// default of numpy, R and vLLM's benchmark): for n sorted values x[0..n-1], the q-quantile is
// x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)]) with h = q * (n - 1). So p50 of
// {1, 2} is 1.5, p0 is the minimum and p100 the maximum.
//
// Thread-safety: a pure function.
#pragma once

#include <span>

namespace hearsay {

// The q-quantile of `sorted` (ascending) by the definition above. q is clamped to [0, 1] (NaN
// counts as 0); an empty input gives 0.
double Percentile(std::span<const double> sorted, double q);

}  // namespace hearsay
