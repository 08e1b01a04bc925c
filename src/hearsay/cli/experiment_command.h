// The `--experiment` mode of `hearsay sim`: flags and runner for sim/experiment.h's sweeps.
//
// `hearsay sim` (sim_command.cc) registers these flags on its subcommand with
// AddExperimentFlags, and when `--experiment` is set, calls RunExperimentCli instead of a single
// run. The CLI layer owns the wall clock (progress bar, elapsed time) and spawns gnuplot.
//
// Thread-safety: single-threaded CLI code.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "hearsay/workload/bundled_trace.h"

namespace hearsay::cli {

struct ExperimentCliFlags {
  std::string experiment;  // "paper" or "peers"; empty = not an experiment run.
  std::string out_dir;
  bool quick = false;
  int seeds = 0;                                     // 0 = the experiment's default.
  uint64_t exp_requests = 0;                         // 0 = the experiment's default.
  std::string policies;                              // Comma-separated; empty = all.
  std::string trace = workload::BundledTracePath();  // the repository's data/ trace
  bool no_plots = false;
  int jobs = 2;  // peers: simulations at once
};

// Registers --experiment, --out, --quick, --seeds, --exp-requests, --policies, --exp-trace and
// --no-plots on `cmd`, bound to `flags` (which must outlive parsing).
void AddExperimentFlags(CLI::App* cmd, ExperimentCliFlags* flags);

// Runs the experiment `flags` names, prints progress to stderr and the output folder to stdout;
// returns the process exit code (0 on success).
int RunExperimentCli(const ExperimentCliFlags& flags);

}  // namespace hearsay::cli
