// RunSim: one whole simulator run, from a SimConfig to a SimSummary.
//
// RunSim builds a SimCluster (sim_cluster.h): N node::Nodes, each with a SimEngine, a real
// gossip::Node over a SimNetwork and the configured routing policy, on one VirtualScheduler. It
// warms up membership, then feeds the workload's requests to their entry nodes at their arrival
// times and runs until every request has completed. Everything is deterministic in the seed:
// equal configs give equal summaries, except sim_requests_per_wall_s (wall-clock speed).
//
// Arrival rate for rho: the cluster's capacity is estimated from the engine cost model for the
// workload's mean request (mean prompt tokens P, mean cached fraction ignored, mean output O):
// service time = PrefillMs(P, 0) + O x DecodeStepMs at a typical batch, amortized by batching;
// see ServiceMs in sim_run.cc. rate = rho x nodes / service time; for a pool of unequal machines
// (SimConfig::cluster) rate = rho x the sum over nodes of 1 / their service time.
//
// Thread-safety: RunSim is reentrant (no globals); each call owns its simulation.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/env/time.h"
#include "hearsay/gossip/config.h"
#include "hearsay/node/decision_record.h"
#include "hearsay/sim/sim_config.h"
#include "hearsay/workload/workload.h"

namespace hearsay::sim {

// One client request as the simulation saw it (kept when SimConfig::record_requests is set).
struct RequestRecord {
  uint64_t id = 0;
  // Arrival at the entry node, in virtual ms from the first arrival's time origin.
  double arrival_ms = 0;
  uint32_t entry_node = 0;
  // The node whose engine served it; -1 if it failed.
  int32_t served_node = -1;
  // MMLU subject, chat system prompt (or -1), as in workload::Request.
  int32_t subject = -1;
  // The model it asked for: an index into the cluster's models (0 with one model).
  uint32_t model = 0;
  uint32_t prompt_tokens = 0;
  // Request::shareable_prefix_tokens: what an unbounded cache that saw every earlier request
  // would hold.
  uint32_t shareable_prefix_tokens = 0;
  // Prompt tokens the serving engine found cached.
  uint32_t cached_tokens = 0;
  // Time to first token at the client; < 0 if it failed.
  double ttft_ms = -1;
};

// Windows of the specialist-drift figures in SimSummary.
inline constexpr double kDriftWindowMs = 2000;
inline constexpr uint32_t kDriftMinRequests = 3;

// The figures of one run. Times are in virtual milliseconds, measured at the client: from the
// request's arrival at its entry node to the first token (or the last) back at the entry node.
struct SimSummary {
  double mean_ttft_ms = 0;
  double p50_ttft_ms = 0;
  double p90_ttft_ms = 0;
  double p99_ttft_ms = 0;
  double mean_e2e_ms = 0;
  // Token-level cache hit rate: prompt tokens found cached by the serving engines / prompt tokens.
  double hit_rate = 0;
  // Fraction of requests served by a node other than their entry node.
  double forwarded_frac = 0;
  // Coefficient of variation (stddev / mean, population) of per_node_work across nodes.
  double load_cov = 0;
  // Gossip bytes sent per node per simulated second (membership + anti-entropy, all channels).
  double gossip_bytes_per_node_s = 0;
  // Requests completed.
  uint64_t requests = 0;
  // Requests that failed (never expected; nonzero means a bug or an impossible request).
  uint64_t failed = 0;
  // Forwards that failed before the first byte and were retried elsewhere.
  uint64_t retries = 0;
  // Forwards a busy peer sent back unserved, each routed again (NodeStats::forwards_bounced).
  uint64_t bounces = 0;
  // Requests sent to a node without their model (a pool with models, SimConfig::cluster):
  // forwards such a node refused (node::NodeStats::forwards_wrong_model) plus first tokens
  // that came from an engine that does not serve the request's model. Must be 0.
  uint64_t wrong_model = 0;
  // Virtual seconds from the first arrival to the last completion.
  double sim_seconds = 0;
  // Per node: prompt tokens it computed (prefilled, net of cache hits). load_cov is over these.
  std::vector<double> per_node_work;
  // Per node: requests its engine served.
  std::vector<uint64_t> per_node_served;
  // The arrival rate used, requests per virtual second.
  double arrival_rate_per_s = 0;
  // Wall-clock speed of the simulation; not deterministic, keep it out of comparisons.
  double sim_requests_per_wall_s = 0;
  double wall_seconds = 0;
  // Specialist drift (specialist_drift.h) over windows of kDriftWindowMs with at least
  // kDriftMinRequests requests of a subject; only with SimConfig::record_requests, else 0.
  double specialist_drift = 0;
  double specialist_share = 0;
  // One record per request, by id (only with SimConfig::record_requests; not in ToJson).
  std::vector<RequestRecord> records;
};

// The summary as one JSON object (field names as above).
nlohmann::json ToJson(const SimSummary& summary);

// How much cache a workload wants, measured on the requests a run of `config` would issue.
struct WorkloadFootprint {
  // Distinct prompt blocks that occur in at least two requests, in tokens: the reusable working
  // set, what one cache would need to hold every prefix that is ever reused.
  uint64_t reused_tokens = 0;
  // The largest prompt + output of one request, in tokens (a cache must hold at least that).
  uint64_t max_request_tokens = 0;
  uint64_t requests = 0;
};

// The footprint of config's workload (its seed, size and request count). Errors as RunSim's.
Result<WorkloadFootprint> MeasureWorkload(const SimConfig& config);

// The arrival rate, requests per virtual second, a run of `config` would use. Errors as RunSim's.
Result<double> ArrivalRateOf(const SimConfig& config);

// The gossip settings every node of a run of `config` gets: gossip every gossip_ms, a SWIM probe
// every 5 x gossip_ms (at least 100 ms) with half of that to answer, the landmark stride; the
// rest gossip::Config's defaults.
gossip::Config GossipConfigOf(const SimConfig& config);
// How often every node of a run publishes its cache events and load: half a gossip interval, at
// least 10 ms.
Duration PublishIntervalOf(const SimConfig& config);

// The request stream a run of `config` issues (its arrival rate resolved as RunSim does), for a
// workload other than "trace". Errors as RunSim's.
Result<std::unique_ptr<workload::Workload>> MakeRunWorkload(const SimConfig& config);

// Called now and then during a run with (requests completed, requests expected).
using ProgressFn = std::function<void(uint64_t done, uint64_t total)>;

// Runs one simulation. Errors: INVALID_ARGUMENT for a bad config (see ValidateSimConfig),
// NOT_FOUND for an unknown policy, preset or unreadable trace.
Result<SimSummary> RunSim(const SimConfig& config, const ProgressFn& progress = {});
// The same, with every node's decision records going to `recorder`.
Result<SimSummary> RunSimRecorded(const SimConfig& config, const ProgressFn& progress,
                                  node::DecisionRecorder* recorder);

}  // namespace hearsay::sim
