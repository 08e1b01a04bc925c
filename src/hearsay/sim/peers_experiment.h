// Peers experiment: the sweep behind `hearsay sim --experiment peers --out DIR`.
//
// It puts hearsay (a policy on every node, no central router) beside the central routers users
// know, on the same traffic, seeds and engine model: the SGLang Model Gateway's cache-aware
// policy, Dynamo's KV router (with KV events, and approximate without), llm-d's precise
// prefix-cache scheduler, and round-robin behind a router as the cache-blind reference; each of
// the four peers also in its multi-replica form (3 routers behind a load balancer, each with its
// own view; Dynamo also with replica sync). The `oracle` (hearsay's price with exact, instant
// views) runs beside them as hearsay's own bound. See central_router.h for how a router is
// modelled.
//
// The grid: workloads MMLU-like at Zipf 0.8, 1.0 and 1.2, the bundled Mooncake trace (Poisson
// arrivals at the base rho; 8 nodes only, its long prompts make 32-node runs too slow) and
// multi-turn chat; 8 and 32 nodes; one-way delay 0.1, 1 and 5 ms;
// cache pressure low (each engine's cache holds the workload's whole reusable working set, up to
// 2^20 tokens) and high (a quarter of that), never below 1.25 × the largest request; 3 seeds. The
// multi-replica forms run at 1 ms only (the goal's delay; this keeps the full run under 10 minutes
// on 2 cores). Outputs, in the output folder:
//   runs.csv     one row per run, with figures from its per-request records;
//   points.csv   one row per (point, system): mean and stddev over seeds;
//   plot_*.csv, plots.gp  tables and a gnuplot script for the PNGs (error bars over seeds);
//   report.md    tables per point at 1 ms, hearsay's ratio to every peer, the goals, the oracle
//                against the same peers, the sanity checks (precise vs approximate under
//                pressure; cache-aware vs round-robin).
// Every file is a pure function of the options and the runs' results.
//
// Thread-safety: RunPeersExperiment is reentrant; it runs up to `jobs` simulations at once on
// its own threads (each run owns its simulation).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/sim/experiment.h"
#include "hearsay/sim/sim_config.h"

namespace hearsay::sim {

struct PeersOptions {
  std::string out_dir;
  // A small grid (MMLU Zipf 1.0 and chat, 8 nodes, 1 ms, both pressures, 1 seed) for tests.
  bool quick = false;
  // Seeds per point; 0 = 3 (quick: 1).
  int seeds = 0;
  uint64_t base_seed = 1;
  // Requests per node per run; 0 = 150 (quick: 40).
  uint64_t requests_per_node = 0;
  // Simulations run at once, >= 1.
  int jobs = 2;
  // Mooncake JSONL trace; empty = no trace workload.
  std::string trace_path;
};

// One system under test: a policy and where it runs.
struct PeerSystem {
  std::string label;  // "hearsay", "dynamo-kv", "dynamo-kv/3", "dynamo-kv/3+sync", ...
  std::string policy;
  int routers = 0;  // 0 = on the nodes; k = k router replicas
  bool replica_sync = false;
  bool multi_replica() const { return routers > 1; }
};

// One point of the grid: a configuration without policy, routers and seed.
struct PeersPoint {
  std::string workload;  // "mmlu-z0.8", "mmlu-z1", "mmlu-z1.2", "trace", "chat"
  int nodes = 0;
  double delay_ms = 0;
  std::string pressure;  // "low" or "high"
  uint64_t reused_tokens = 0;
  SimConfig config;
};

// The systems, in output order.
std::vector<PeerSystem> PeerSystems();

// The grid, in output order; measures each workload's footprint to size the caches.
Result<std::vector<PeersPoint>> PeersGrid(const PeersOptions& options);

// Whether `system` runs at `point` (multi-replica forms only at 1 ms).
bool RunsAt(const PeerSystem& system, const PeersPoint& point);

// Runs the grid and writes every output file. Errors: INVALID_ARGUMENT for bad options, the
// first failing run's status, INTERNAL when a file cannot be written.
Status RunPeersExperiment(const PeersOptions& options, const SimRunFn& run = RunSim,
                          const ExperimentProgressFn& progress = {});

}  // namespace hearsay::sim
