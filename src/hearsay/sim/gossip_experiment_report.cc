#include "hearsay/sim/gossip_experiment_report.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "hearsay/common/percentile.h"
#include "hearsay/gossip/wire.h"
#include "hearsay/sim/gossip_experiment_signing.h"

namespace hearsay::sim::gossip_experiment {
namespace {

// The q-quantile of `v` (common/percentile.h); -1 when there are no samples.
double QuantileOr(std::vector<double> v, double q) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return Percentile(v, q);
}

// The gossip counters summed over the nodes up at the end (the whole run, warm-up included).
struct CounterTotals {
  uint64_t snapshots = 0, gaps = 0, stale = 0, entries = 0, redundant = 0, streamed = 0, msgs = 0;
  uint64_t probes = 0, probe_failures = 0, probes_heard = 0, probes_relayed = 0, refutations = 0;
  uint64_t evidence_notices = 0, silence_probes = 0, restrides = 0, stride_mismatches = 0,
           stride_runs = 0;
  double stride_sum = 0;
  uint32_t stride_max = 0;
  int up_nodes = 0;
  BytesByType bytes_by_type{};
  uint64_t signatures_made = 0, signatures_verified = 0, commitment_updates = 0,
           deltas_unverified = 0, deltas_forged = 0, key_conflicts = 0;
  // Signed membership: signatures made and checked (within the totals above), and refusals.
  uint64_t member_signed = 0, member_verified = 0, member_unverified = 0, member_forged = 0,
           member_capped = 0, accusations_ahead = 0, accusations_limited = 0;
};

CounterTotals SumCounters(const GossipCluster& c) {
  CounterTotals s;
  for (int i = 0; i < c.size(); ++i) {
    if (!c.up(i)) continue;
    const gossip::Counters& k = c.node(i).counters();
    s.snapshots += k.snapshots_sent;
    s.gaps += k.deltas_gap;
    s.stale += k.deltas_stale;
    s.entries += k.entries_received;
    s.redundant += k.entries_redundant;
    s.streamed += k.stream_msgs_sent;
    s.msgs += k.msgs_sent;
    s.probes += k.probes;
    s.probe_failures += k.probe_failures;
    s.probes_heard += k.probes_heard;
    s.probes_relayed += k.probes_relayed;
    s.refutations += k.refutations;
    s.evidence_notices += k.evidence_notices;
    s.silence_probes += k.silence_probes;
    s.restrides += k.restrides;
    s.stride_mismatches += k.deltas_stride_mismatch;
    s.stride_runs += k.stride_runs_applied;
    s.signatures_made += k.signatures_made;
    s.signatures_verified += k.signatures_verified;
    s.commitment_updates += k.commitment_updates;
    s.deltas_unverified += k.deltas_unverified;
    s.deltas_forged += k.deltas_forged;
    s.key_conflicts += k.signing_key_conflicts;
    s.member_signed += k.member_signatures_made;
    s.member_verified += k.member_signatures_verified;
    s.member_unverified += k.member_updates_unverified;
    s.member_forged += k.member_updates_forged;
    s.member_capped += k.member_updates_capped;
    s.accusations_ahead += k.accusations_ahead;
    s.accusations_limited += k.accusations_limited;
    s.stride_sum += c.node(i).landmark_stride();
    s.stride_max = std::max(s.stride_max, c.node(i).landmark_stride());
    ++s.up_nodes;
    for (size_t t = 0; t < s.bytes_by_type.size(); ++t) {
      s.bytes_by_type[t] += static_cast<double>(k.bytes_sent_by_type[t]);
    }
  }
  return s;
}

std::string TypeName(uint8_t t) {
  return std::string(gossip::MsgTypeName(static_cast<gossip::MsgType>(t)));
}

// Convergence, detection, false deaths and suspicions.
void AddFaults(const Observations& run, nlohmann::json& j) {
  const std::vector<double>& convergence = run.convergence.convergence();
  const std::vector<double>& cleared = run.faults.cleared_suspicions();
  j["detect_trace"] = run.faults.DetectTrace(run.cluster);
  j["undetected_by"] = run.faults.Undetected(run.cluster);
  const double median = QuantileOr(convergence, 0.5);
  j["convergence_median_s"] = median;
  // Deprecated: the old name of convergence_median_s (a median, despite "p99"), kept with the same
  // value for one release.
  j["convergence_p99_s"] = median;
  j["convergence_p99_s_tail"] = QuantileOr(convergence, 0.99);
  j["convergence_samples"] = convergence.size();
  j["convergence_censored"] = run.convergence.censored();
  j["detect_s"] = run.faults.detect_s();
  j["false_deaths"] = run.faults.false_deaths();
  j["false_death_trace"] = run.faults.false_death_trace();
  j["join_s"] = run.join < Duration{} ? -1.0 : ToSeconds(run.join);
  j["false_suspicions"] = cleared.size();
  j["false_suspicion_s_p50"] = QuantileOr(cleared, 0.5);
  j["false_suspicion_s_p99"] = QuantileOr(cleared, 0.99);
  j["false_suspicion_s_max"] = QuantileOr(cleared, 1.0);
}

// How well a node's gossip view predicts a peer's matched prefix.
void AddAccuracy(const AccuracySampler& a, nlohmann::json& j) {
  const uint64_t total = a.total();
  j["summary_accuracy"] = total ? static_cast<double>(a.ok()) / total : -1;
  j["summary_exact"] = total ? static_cast<double>(a.exact()) / total : -1;
  j["summary_mean_abs_error_blocks"] = total ? a.abs_err() / total : -1;
  j["summary_stride_mean"] = total ? a.stride_sum() / total : -1;
  j["summary_queries"] = total;
  j["summary_queries_with_match"] = a.nonzero();
}

// Bytes and messages: per node-second of the measured window, and shares by message type.
void AddTraffic(const Observations& run, const CounterTotals& s, double node_seconds,
                nlohmann::json& j) {
  const GossipExperimentOptions& o = run.options;
  const TrafficMeter& m = run.traffic;
  const int n = o.nodes;
  j["bytes_per_node_s"] = (m.bytes_after() - m.bytes_before()) / node_seconds;
  j["msgs_per_node_s"] = (m.msgs_after() - m.msgs_before()) / node_seconds;
  // What each surviving node received per second of the measured window.
  const double window_node_s = (n - 1) * o.duration_s;
  const TrafficMeter::Received& w = m.window();
  j["window_received_per_node_s"] = {
      {"run_entries", static_cast<double>(w.entries) / window_node_s},
      {"run_entries_redundant", static_cast<double>(w.redundant) / window_node_s},
      {"runs_applied", static_cast<double>(w.runs) / window_node_s},
      {"snapshots_applied", static_cast<double>(w.snapshots) / window_node_s},
      {"deltas_stale", static_cast<double>(w.stale) / window_node_s}};
  j["stream_msg_share"] =
      s.msgs ? static_cast<double>(s.streamed) / static_cast<double>(s.msgs) : 0.0;
  // Share of all bytes sent over the whole run (warm-up included), by message type.
  nlohmann::json shares = nlohmann::json::object();
  double all_bytes = 0;
  for (double b : s.bytes_by_type) all_bytes += b;
  for (uint8_t t = 1; t <= gossip::kMaxMsgType; ++t) {
    if (s.bytes_by_type[t] > 0 && all_bytes > 0) {
      shares[TypeName(t)] = std::round(1000 * s.bytes_by_type[t] / all_bytes) / 1000;
    }
  }
  j["bytes_share_by_type"] = shares;
  // The measured window's bytes per node-second by message type (as bytes_per_node_s), and of
  // them the piggybacked membership updates (body bytes).
  nlohmann::json window_types = nlohmann::json::object();
  for (uint8_t t = 1; t <= gossip::kMaxMsgType; ++t) {
    const double b = m.types_after()[t] - m.types_before()[t];
    if (b > 0) window_types[TypeName(t)] = b / node_seconds;
  }
  j["window_bytes_per_node_s_by_type"] = window_types;
  j["window_update_bytes_per_node_s"] = (m.types_after()[0] - m.types_before()[0]) / node_seconds;
}

// The signatures' work per node-second (over the whole simulation, warm-up included, survivors
// only) and what it costs in
// CPU at this machine's measured cost per operation (gossip_experiment_signing.cc).
void AddSignatures(const Observations& run, const CounterTotals& s, nlohmann::json& j) {
  const GossipExperimentOptions& o = run.options;
  if (o.signatures == gossip::SignatureMode::kOff) return;
  // The counters run to the end of the simulation (which goes on past the measured window until
  // the kill is detected), not to run.end.
  const double node_s = std::max(1, s.up_nodes) * ToSeconds(run.cluster.Now() - TimePoint{});
  const SigningCosts costs = MeasureSigningCosts();
  const double signs = static_cast<double>(s.signatures_made) / node_s;
  const double verifies = static_cast<double>(s.signatures_verified) / node_s;
  const double updates = static_cast<double>(s.commitment_updates) / node_s;
  // Each updated entry hashes at most two elements (the old value out, the new one in).
  const double cpu =
      signs * costs.sign_us + verifies * costs.verify_us + 2 * updates * costs.element_us;
  j["signatures"] = {
      {"mode", std::string(gossip::SignatureModeName(o.signatures))},
      {"sign_interval_s", o.sign_interval_s},
      {"signed_per_node_s", signs},
      {"verified_per_node_s", verifies},
      {"commitment_entries_per_node_s", updates},
      {"deltas_unverified", s.deltas_unverified},
      {"deltas_forged", s.deltas_forged},
      {"key_conflicts", s.key_conflicts},
      {"membership_signed_per_node_s", static_cast<double>(s.member_signed) / node_s},
      {"membership_verified_per_node_s", static_cast<double>(s.member_verified) / node_s},
      {"membership_unverified", s.member_unverified},
      {"membership_forged", s.member_forged},
      {"membership_capped", s.member_capped},
      {"accusations_ahead", s.accusations_ahead},
      {"accusations_limited", s.accusations_limited},
      {"sign_us", costs.sign_us},
      {"verify_us", costs.verify_us},
      {"element_us", costs.element_us},
      {"cpu_ms_per_node_s", cpu / 1000}};
  // The measured window alone (the workload stops at its end, while the simulation goes on
  // until the kill is detected): every run applied there was verified, and its entries updated
  // the commitment; plus one signature per interval.
  const TrafficMeter::Received& w = run.traffic.window();
  const double window_node_s = (o.nodes - 1) * o.duration_s;
  const double runs = static_cast<double>(w.runs + w.snapshots) / window_node_s;
  const double entries = static_cast<double>(w.entries) / window_node_s;
  j["signatures"]["window_cpu_ms_per_node_s"] =
      (runs * costs.verify_us + 2 * entries * costs.element_us +
       costs.sign_us / o.sign_interval_s) /
      1000;
}

}  // namespace

nlohmann::json Report(const Observations& run) {
  const GossipExperimentOptions& o = run.options;
  const int n = o.nodes;
  const CounterTotals s = SumCounters(run.cluster);
  const double node_seconds = (n - 1) * o.duration_s + ToSeconds(run.faults.kill_at() - run.warmup);
  nlohmann::json j;
  j["nodes"] = n;
  j["loss"] = o.loss;
  j["duration_s"] = o.duration_s;
  j["warmup_s"] = o.warmup_s;
  j["churn"] = o.churn;
  j["seed"] = o.seed;
  j["landmark_stride"] = o.landmark_stride;
  // Ed25519 runs on private replicas (gossip_experiment.h).
  j["share_replicas"] = o.share_replicas && o.signatures != gossip::SignatureMode::kEd25519;
  j["cache_blocks"] = o.cache_blocks;
  AddFaults(run, j);
  AddAccuracy(run.accuracy, j);
  AddTraffic(run, s, node_seconds, j);
  AddSignatures(run, s, j);
  j["landmark_budget_members"] = o.landmark_budget_members;
  j["landmark_stride_mean"] = s.up_nodes ? s.stride_sum / s.up_nodes : 0.0;
  j["landmark_stride_max"] = s.stride_max;
  j["restrides"] = s.restrides;
  j["deltas_stride_mismatch"] = s.stride_mismatches;
  j["stride_runs_applied"] = s.stride_runs;
  j["events_per_node_s"] = static_cast<double>(run.events_total) / (n * ToSeconds(run.end));
  j["snapshots_sent"] = s.snapshots;
  j["deltas_gap"] = s.gaps;
  j["deltas_stale"] = s.stale;
  j["entries_received"] = s.entries;
  j["entries_redundant"] = s.redundant;
  // Failure-detector health (over the whole run, survivors only): the share of probes that
  // failed, the share saved by hearing from the target, refutations per node, and the local
  // health score (0..8, probe interval multiplier - 1) over the measured window.
  j["probe_failure_share"] = s.probes ? static_cast<double>(s.probe_failures) / s.probes : 0.0;
  j["probe_heard_share"] = s.probes ? static_cast<double>(s.probes_heard) / s.probes : 0.0;
  j["probe_relayed_share"] = s.probes ? static_cast<double>(s.probes_relayed) / s.probes : 0.0;
  j["refutations_per_node"] = static_cast<double>(s.refutations) / n;
  j["evidence_notices_per_node"] = static_cast<double>(s.evidence_notices) / n;
  j["silence_probe_mult"] = o.silence_probe_mult;
  j["silence_probes_per_node"] = static_cast<double>(s.silence_probes) / n;
  j["local_health_mean"] = run.health.mean();
  j["local_health_max"] = run.health.max();
  return j;
}

}  // namespace hearsay::sim::gossip_experiment
