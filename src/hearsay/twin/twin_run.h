// The digital twin's prediction: the simulator run that models a real cluster (twin_config.h),
// repeated with several cluster seeds over the same requests and averaged.
//
// One simulator run is one draw of everything random in the cluster (gossip peers, routing ties,
// the random policy's choices), as one real run is. Averaged over `runs` draws, the prediction is
// the expected figure of a real run rather than one more sample of it, so its error against one
// measured run is that run's own spread, not twice it.
//
// Thread-safety: a plain function; each call owns its simulations.
#pragma once

#include <cstdint>

#include "hearsay/common/status.h"
#include "hearsay/sim/sim_config.h"

namespace hearsay::twin {

struct TwinPrediction {
  // Means over the runs of each run's figure.
  double mean_ttft_ms = 0;
  double p99_ttft_ms = 0;
  double hit_rate = 0;
  // The lowest and highest mean TTFT of one run: the spread of a single draw.
  double min_mean_ttft_ms = 0;
  double max_mean_ttft_ms = 0;
  uint32_t runs = 0;
};

// Cluster seeds the twin averages over by default. A balancer's single draws spread widely (the
// random policy on the demo's cluster: 286-528 ms mean TTFT over 20 draws of one workload, a
// standard deviation of 17%), so 5 draws would leave the prediction itself 7.5% off its expectation
// (one standard error); 40 leave 2.7%, and a draw of the demo's 200 requests takes about 25 ms.
inline constexpr uint32_t kDefaultTwinRuns = 40;

// Runs `config` with cluster seeds 1..runs (config.cluster_seed is replaced; runs >= 1) and
// averages. Errors as sim::RunSim's, and INVALID_ARGUMENT for runs 0.
Result<TwinPrediction> Predict(const sim::SimConfig& config, uint32_t runs = kDefaultTwinRuns);

// The config of the prediction's k-th run (k in 1..runs): `config` with cluster seed k.
sim::SimConfig DrawConfig(const sim::SimConfig& config, uint32_t k);

}  // namespace hearsay::twin
