// Pool experiment: the runs behind `hearsay sim --experiment pool --out DIR`.
//
// hearsay as a pool of unequal machines serving several models, side by side with the `oracle`
// (exact, instant knowledge), `least-loaded` and the paper's policy, on the same requests and
// seeds, all 8-node pools (SimConfig::cluster). Three sections:
//   mixed     two H100s, two A100s and four consumer cards, one model: every node prices each
//             member by its measured prefill speed. Goal: hearsay's mean TTFT <= 1.05x the
//             oracle's and <= 0.8x least-loaded's.
//   models    three models, each served by a subset of the nodes, Zipf over models. Goals: no
//             request is ever served by an engine without its model (counted), and hearsay
//             <= 1.05x the oracle.
//   slowdown  eight H100s; one engine slows to half speed in the middle of the run. Goals:
//             hearsay's share of arrivals on it falls within 10 s (a plot of that node's share
//             of arrivals per second, per policy), and its mean TTFT over the run <= 1.1x the
//             oracle's.
// Outputs, in the output folder: runs.csv (one row per run), sections.csv (mean and stddev over
// seeds per section and policy), slow_share.csv (the slowed node's share of arrivals per second,
// per policy, mean over seeds), plots.gp (gnuplot script for slow_share.png and ttft.png) and
// report.md (each goal met or missed, by how much). Every file is a pure function of the options
// and the runs' results.
//
// Thread-safety: RunPoolExperiment is reentrant; it runs up to `jobs` simulations at once on its
// own threads (each run owns its simulation).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/sim/experiment.h"
#include "hearsay/sim/sim_config.h"

namespace hearsay::sim {

struct PoolOptions {
  std::string out_dir;
  // Short runs (1 seed, fewer requests, the slowdown early) for tests and smoke runs.
  bool quick = false;
  // Seeds per section; 0 = 3 (quick: 1).
  int seeds = 0;
  uint64_t base_seed = 1;
  // Simulations run at once, >= 1.
  int jobs = 2;
  // Policies; empty = hearsay, oracle, least-loaded, paper.
  std::vector<std::string> policies;
};

// One section: a configuration without policy and seed.
struct PoolSection {
  std::string name;  // "mixed", "models", "slowdown"
  std::string title;
  SimConfig config;
};

// The sections, in output order. The slowdown section's request count is derived from its
// arrival rate (ArrivalRateOf), so that the run lasts its planned virtual time.
Result<std::vector<PoolSection>> PoolSections(const PoolOptions& options);

// The policies `options` selects, in output order.
std::vector<std::string> PoolPolicies(const PoolOptions& options);

// Runs every section and writes every output file. Errors: INVALID_ARGUMENT for bad options,
// the first failing run's status, INTERNAL when a file cannot be written.
Status RunPoolExperiment(const PoolOptions& options, const SimRunFn& run = RunSim,
                         const ExperimentProgressFn& progress = {});

}  // namespace hearsay::sim
