// Paper experiment: the sweep behind `hearsay sim --experiment paper --out DIR`.
//
// It reproduces the evaluation of "Towards Distributed Inference of LLMs on a P2P Network"
// (2026) and checks hearsay's goals against it. Around one base point (MMLU traffic, 4 nodes,
// 1 ms one-way delay, Zipf 1.0, rho 0.7, gossip 200 ms, a per-node cache of 16384 tokens, which
// holds about half of the working set of ~57 x 500 prefix tokens, so a node cannot cache every
// subject but the cluster can), it sweeps one factor at a time (delay, Zipf s, node count, gossip
// interval, cache capacity), runs every policy with several seeds at each point, optionally adds
// a trace-driven point, and writes into the output folder:
//   runs.csv    one row per (factor, level, policy, seed) run;
//   points.csv  one row per (factor, level, policy): mean and stddev over seeds;
//   plot_<factor>_<metric>.csv  wide tables (level, one column per policy) for gnuplot;
//   plots.gp    a gnuplot script drawing PNGs from those tables (run it in the folder);
//   report.md   one table per question, the paper's claims and hearsay's goals with PASS/MISS.
// Runs that share a configuration (the base point appears in every factor) are simulated once.
// Every file is a pure function of the options and the run function's results, so the same
// seeds give byte-identical files.
//
// Thread-safety: RunPaperExperiment is reentrant; it runs simulations one after another.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/sim/sim_config.h"
#include "hearsay/sim/sim_run.h"

namespace hearsay::sim {

struct ExperimentOptions {
  // Folder for the outputs; created if missing.
  std::string out_dir;
  // A small sweep (2 levels per swept factor, fewer requests) for tests and smoke runs.
  bool quick = false;
  // Seeds per point (seed values base_seed .. base_seed + seeds - 1); >= 1. 0 = mode default.
  int seeds = 0;
  uint64_t base_seed = 1;
  // Requests per run; 0 = mode default.
  uint64_t requests = 0;
  // Policies to run; empty = all eight registered policies.
  std::vector<std::string> policies;
  // Mooncake JSONL trace for the trace section; empty = no trace section.
  std::string trace_path;
};

// One simulated configuration of the sweep, labelled by the factor it varies.
struct ExperimentPoint {
  std::string factor;  // "delay_ms", "zipf", "nodes", "gossip_ms", "capacity_tokens", "trace".
  double level = 0;    // The factor's value at this point.
  SimConfig config;    // Policy and seed are filled per run.
};

// The base configuration of the sweep (see the opening paragraph).
SimConfig PaperBaseConfig(const ExperimentOptions& options);

// Every point of the sweep, in output order (factor by factor, levels ascending).
std::vector<ExperimentPoint> PaperSweep(const ExperimentOptions& options);

// The policies that options selects, in output order.
std::vector<std::string> ExperimentPolicies(const ExperimentOptions& options);

// Runs one simulation; RunSim in production, a fake in tests.
using SimRunFn = std::function<Result<SimSummary>(const SimConfig&, const ProgressFn&)>;

// Called after each run with (runs done, runs total) and within a run with RunSim's progress.
using ExperimentProgressFn = std::function<void(uint64_t runs_done, uint64_t runs_total,
                                                uint64_t req_done, uint64_t req_total)>;

// Runs the sweep and writes every output file. Errors: INVALID_ARGUMENT for bad options, the
// first failing run's status, or INTERNAL when a file cannot be written.
Status RunPaperExperiment(const ExperimentOptions& options, const SimRunFn& run = RunSim,
                          const ExperimentProgressFn& progress = {});

}  // namespace hearsay::sim
