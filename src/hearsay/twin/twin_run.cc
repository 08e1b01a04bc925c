#include "hearsay/twin/twin_run.h"

#include <algorithm>

#include "hearsay/sim/sim_run.h"

namespace hearsay::twin {

sim::SimConfig DrawConfig(const sim::SimConfig& config, uint32_t k) {
  sim::SimConfig c = config;
  c.cluster_seed = k;
  return c;
}

Result<TwinPrediction> Predict(const sim::SimConfig& config, uint32_t runs) {
  if (runs == 0) return InvalidArgumentError("the twin needs at least one run");
  TwinPrediction p;
  for (uint32_t k = 1; k <= runs; ++k) {
    HEARSAY_ASSIGN_OR_RETURN(const sim::SimSummary s, sim::RunSim(DrawConfig(config, k)));
    p.mean_ttft_ms += s.mean_ttft_ms / runs;
    p.p99_ttft_ms += s.p99_ttft_ms / runs;
    p.hit_rate += s.hit_rate / runs;
    p.min_mean_ttft_ms = k == 1 ? s.mean_ttft_ms : std::min(p.min_mean_ttft_ms, s.mean_ttft_ms);
    p.max_mean_ttft_ms = std::max(p.max_mean_ttft_ms, s.mean_ttft_ms);
  }
  p.runs = runs;
  return p;
}

}  // namespace hearsay::twin
