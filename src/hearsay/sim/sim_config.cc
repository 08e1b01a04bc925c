#include "hearsay/sim/sim_config.h"

#include <cmath>
#include <string>

#include "hearsay/gossip/state_signing.h"
#include "hearsay/node/shared_backlog.h"
#include "hearsay/route/registry.h"
#include "hearsay/sim/cluster_spec.h"

namespace hearsay::sim {

namespace {
Status Bad(const std::string& what) { return InvalidArgumentError("sim config: " + what); }
bool Finite(double x) { return std::isfinite(x); }
}  // namespace

Status ValidateSimConfig(const SimConfig& c) {
  if (c.workload != "mmlu" && c.workload != "trace" && c.workload != "chat") {
    return Bad("--workload must be mmlu, trace or chat (got '" + c.workload + "')");
  }
  if (c.workload == "trace" && c.trace_path.empty())
    return Bad("--workload trace needs --trace FILE");
  if (c.nodes < 1 || c.nodes > 4096) return Bad("--nodes must be in [1, 4096]");
  if (c.policy.empty()) return Bad("--policy must name a policy");
  if (!Finite(c.delay_ms) || c.delay_ms < 0 || c.delay_ms > 60000) {
    return Bad("--delay-ms must be in [0, 60000]");
  }
  if (!Finite(c.delay_jitter) || c.delay_jitter < 0 || c.delay_jitter > 10) {
    return Bad("delay jitter must be in [0, 10]");
  }
  if (!Finite(c.zipf) || c.zipf < 0 || c.zipf > 10) return Bad("--zipf must be in [0, 10]");
  if (!Finite(c.rho) || c.rho <= 0 || c.rho > 100) return Bad("--rho must be in (0, 100]");
  if (!Finite(c.rate_per_s) || c.rate_per_s < 0 || c.rate_per_s > 1e7) {
    return Bad("--rate must be in [0, 1e7] (0: from --rho)");
  }
  if (c.max_running > 1u << 20) return Bad("--max-running must be at most 1048576 (0: default)");
  if (!Finite(c.host_cores) || c.host_cores < 0 || c.host_cores > 4096) {
    return Bad("--host-cores must be in [0, 4096] (0: a machine per engine)");
  }
  if (!Finite(c.host_contention) || c.host_contention < 0 || c.host_contention > 100) {
    return Bad("--host-contention must be in [0, 100]");
  }
  if (c.host_contention > 0 && c.host_cores == 0) {
    return Bad("--host-contention needs --host-cores (engines on one host)");
  }
  if (c.engine_cache != "paged" && c.engine_cache != "slots") {
    return Bad("--engine-cache must be paged or slots");
  }
  if (c.engine_cache == "slots" && (c.max_running < 1 || c.max_running > 64)) {
    return Bad("--engine-cache slots needs --max-running (the slots) in [1, 64]");
  }
  if (c.requests == 0 && c.workload != "trace") return Bad("--requests must be >= 1");
  if (c.requests > (uint64_t{1} << 32)) return Bad("--requests must be <= 2^32");
  if (c.capacity_tokens < 1024 || c.capacity_tokens >= (uint64_t{1} << 32)) {
    return Bad("--capacity-tokens must be in [1024, 2^32)");
  }
  if (!Finite(c.gossip_ms) || c.gossip_ms < 1 || c.gossip_ms > 600000) {
    return Bad("--gossip-ms must be in [1, 600000]");
  }
  if (c.engine_preset.empty()) return Bad("--engine-preset must name a preset");
  if (c.variants < 1 || c.variants > 1000) return Bad("--variants must be in [1, 1000]");
  if (!c.arrivals.empty() && c.arrivals != "poisson" && c.arrivals != "bursty" &&
      c.arrivals != "trace") {
    return Bad("--arrivals must be poisson, bursty or trace");
  }
  if (c.arrivals == "trace" && c.workload != "trace") {
    return Bad("--arrivals trace needs --workload trace");
  }
  if (!Finite(c.burst_cv) || c.burst_cv <= 0 || c.burst_cv > 100) {
    return Bad("--burst-cv must be in (0, 100]");
  }
  if (c.entry != "uniform" && c.entry != "sticky") return Bad("--entry must be uniform or sticky");
  if (!Finite(c.loss) || c.loss < 0 || c.loss >= 1) return Bad("--loss must be in [0, 1)");
  if (c.landmark_stride < 1 || c.landmark_stride > 1024) {
    return Bad("landmark stride must be in [1, 1024]");
  }
  if (c.block_tokens < 1 || c.block_tokens > 4096) return Bad("block tokens must be in [1, 4096]");
  if (!gossip::ParseSignatureMode(c.signatures).ok()) {
    return Bad("--signatures must be off, modeled or ed25519");
  }
  if (!Finite(c.warmup_ms) || c.warmup_ms < 0 || c.warmup_ms > 3.6e6) {
    return Bad("warmup must be in [0, 3600000] ms");
  }
  if (c.routers < -1 || c.routers > 64) return Bad("--routers must be in [-1, 64]");
  int nodes = c.nodes;
  if (!c.cluster.empty()) {
    Result<ClusterSpec> spec = ParseClusterSpec(c.cluster);
    if (!spec.ok()) return Status(spec.status().code(), "sim config: " + spec.status().message());
    nodes = spec->nodes();
    if (!spec->Models().empty() && EffectiveRouters(c) > 0) {
      return Bad("a --cluster with models runs the policy on the nodes only (--routers 0)");
    }
  }
  if (!c.model.empty() && !c.cluster.empty()) {
    return Bad("--model names the one model of alike nodes; a --cluster names its own models");
  }
  if (c.model.size() > 256) return Bad("--model must be at most 256 characters");
  if (!c.model.empty() && EffectiveRouters(c) > 0) {
    return Bad("--model runs the policy on the nodes only (--routers 0)");
  }
  if (!Finite(c.model_zipf) || c.model_zipf < 0 || c.model_zipf > 10) {
    return Bad("--model-zipf must be in [0, 10]");
  }
  if (c.slow_node < -1 || c.slow_node >= nodes) {
    return Bad("--slow-node must be -1 (none) or a node index in [0, " + std::to_string(nodes) +
               ")");
  }
  if (!Finite(c.slow_at_s) || c.slow_at_s < 0 || c.slow_at_s > 1e6) {
    return Bad("--slow-at must be in [0, 1e6] s");
  }
  if (!Finite(c.slow_factor) || c.slow_factor < 0.01 || c.slow_factor > 100) {
    return Bad("--slow-factor must be in [0.01, 100]");
  }
  if (c.liars < 0 || c.liars >= nodes) {
    return Bad("--liars must be in [0, " + std::to_string(nodes) + ")");
  }
  if (c.slanderers < 0 || c.liars + c.slanderers >= nodes) {
    return Bad("--liars plus --slanderers must be below --nodes");
  }
  if (c.trimmed_listers < 0 || c.trimmed_listers > int(node::SharedBacklog::kMaxTrimmed)) {
    return Bad("--trimmed-listers must be in [0, " +
               std::to_string(node::SharedBacklog::kMaxTrimmed) + "]");
  }
  if (!Finite(c.forward_deadline_factor) || c.forward_deadline_factor < 0 ||
      c.forward_deadline_factor > 1e6) {
    return Bad("--forward-deadline-factor must be in [0, 1e6]");
  }
  const route::PolicyInfo* info = route::FindPolicy(c.policy);
  if (info != nullptr && info->central && c.routers == 0) {
    return Bad("--policy " + c.policy + " is a central router's policy: it needs --routers >= 1");
  }
  if (c.policy == "oracle" && EffectiveRouters(c) > 0) {
    return Bad("--policy oracle runs on the nodes only (--routers 0)");
  }
  return OkStatus();
}

int EffectiveRouters(const SimConfig& c) {
  if (c.routers >= 0) return c.routers;
  const route::PolicyInfo* info = route::FindPolicy(c.policy);
  return info != nullptr && info->central ? 1 : 0;
}

}  // namespace hearsay::sim
