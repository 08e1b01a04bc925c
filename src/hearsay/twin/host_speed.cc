#include "hearsay/twin/host_speed.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "hearsay/engine/cost_model.h"
#include "hearsay/loadgen/robust_fit.h"

namespace hearsay::twin {
namespace {

// Each sample's time over the model's for its prompt, uncached, on an idle engine.
Result<std::vector<double>> Ratios(const std::vector<loadgen::ProbeSample>& samples,
                                   const engine::CostModel& model, double engine_per_node) {
  std::vector<double> ratios;
  for (const loadgen::ProbeSample& s : samples) {
    const auto node_tokens = static_cast<uint64_t>(std::llround(s.prompt_tokens / engine_per_node));
    if (node_tokens == 0) return InvalidArgumentError("a probe sample of no tokens");
    ratios.push_back(s.ttft_ms / model.PrefillMs(node_tokens, 0, 0));
  }
  return ratios;
}

}  // namespace

Result<HostSpeed> FitHostSpeed(const loadgen::HostProbe& probe, size_t engines,
                               const TwinUpstream& upstream) {
  if (probe.alone.empty() || probe.together.empty() || engines == 0) {
    return InvalidArgumentError("the probe needs samples alone and together");
  }
  HEARSAY_ASSIGN_OR_RETURN(const engine::CostModel model,
                           engine::CostModel::FromPreset(upstream.cost_model));
  const double per_node = upstream.engine_tokens_per_node_token;
  HEARSAY_ASSIGN_OR_RETURN(std::vector<double> alone, Ratios(probe.alone, model, per_node));
  HEARSAY_ASSIGN_OR_RETURN(std::vector<double> together, Ratios(probe.together, model, per_node));
  HostSpeed host;
  host.speed = loadgen::Median(alone);
  const double slowdown = loadgen::Median(together) / host.speed;
  const double k = static_cast<double>(engines);
  host.cores = std::clamp(k / slowdown, 1.0, k);
  return host;
}

Result<TwinUpstream> OnHost(TwinUpstream upstream, const HostSpeed& host) {
  if (!(host.speed > 0) || !std::isfinite(host.speed)) {
    return InvalidArgumentError("the host's speed must be positive");
  }
  HEARSAY_ASSIGN_OR_RETURN(const engine::CostModel model,
                           engine::CostModel::FromPreset(upstream.cost_model));
  engine::CostParams p = model.params();
  for (double* c : {&p.t0_ms, &p.a_ms_per_token, &p.b_ms_per_token2, &p.d1_ms_per_seq,
                    &p.d2_ms_per_ctx_token}) {
    *c *= host.speed;
  }
  upstream.cost_model = engine::CostModel(p).Spec();
  upstream.host_cores = host.cores;
  return upstream;
}

Result<HostSpeed> ProbeHost(const std::vector<std::string>& addresses,
                            const TwinUpstream& upstream) {
  loadgen::HostProbeOptions o;
  o.engines = addresses;
  o.model = "hearsay-probe";  // llama-server serves its one model whatever the name
  o.prompt_words = 300;
  o.rounds = 3;
  HEARSAY_ASSIGN_OR_RETURN(const loadgen::HostProbe probe, loadgen::RunHostProbe(o));
  return FitHostSpeed(probe, addresses.size(), upstream);
}

}  // namespace hearsay::twin
