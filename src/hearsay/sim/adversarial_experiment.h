// Adversarial experiment: the runs behind `hearsay sim --experiment adversarial --out DIR`.
//
// Members that lie (SimConfig::liars, node::Misbehaviour): nodes 0 .. k-1 advertise every block any
// peer advertises and an idle engine, and never bounce a forward, while they serve what they get
// normally. For MMLU-like traffic and the bundled Mooncake trace, on 8 and 32 nodes, with 0, 1 and
// 3 liars, and with one slanderer (SimConfig::slanderers: honest about itself, it lists every
// peer under an hour of work it never sent), it runs four arms on the same requests and seeds:
//   hearsay             entry nodes judge each member's claims against its answers
//                       (node/peer_trust.h) and discount the ones that overclaim, and a lister
//                       alone moves nothing (node/shared_backlog.h);
//   hearsay-all-lists   the same, every list believed in full (SimConfig::trimmed_listers 0);
//   hearsay-trusting    the same policy believing every claim (SimConfig::trust false), the
//                       ablation that shows what the judging is worth;
//   paper               the paper's longest-match policy, which takes claims at face value.
// Goal: hearsay's mean TTFT with liars, or the slanderer, within 1.1x its value without them,
// while paper degrades with liars.
// Outputs, in the output folder: runs.csv (one row per run), cases.csv (mean and stddev over seeds
// per case and arm), plot_<workload>_<nodes>.csv and plots.gp (mean TTFT against the number of
// liars, one panel per workload and size, error bars over seeds), report.md (the table and each
// goal met or missed). Every file is a pure function of the options and the runs' results.
//
// Thread-safety: RunAdversarialExperiment is reentrant; it runs up to `jobs` simulations at once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/sim/experiment.h"
#include "hearsay/sim/sim_config.h"

namespace hearsay::sim {

struct AdversarialOptions {
  std::string out_dir;
  // Short runs (1 seed, few requests, MMLU-like traffic only) for tests and smoke runs.
  bool quick = false;
  // Seeds per case; 0 = 3 (quick: 1).
  int seeds = 0;
  uint64_t base_seed = 1;
  // Simulations run at once, >= 1.
  int jobs = 2;
  // Mooncake JSONL trace for the trace workload; empty = MMLU-like traffic only.
  std::string trace_path;
};

// One arm: a policy, whether its entry nodes judge claims, and how many listers they trim.
struct AdversarialArm {
  std::string label;
  std::string policy;
  bool trust = true;
  int trimmed_listers = 1;
};

// One case: a workload, a cluster size and the members that misbehave (arm and seed filled per
// run).
struct AdversarialCase {
  std::string workload;  // "mmlu" or "trace"
  int nodes = 0;
  int liars = 0;
  int slanderers = 0;
  SimConfig config;
};

std::vector<AdversarialArm> AdversarialArms();

// Every case, in output order (workload, nodes, liars ascending, then the slanderer).
std::vector<AdversarialCase> AdversarialCases(const AdversarialOptions& options);

// Runs every case and arm and writes every output file. Errors: INVALID_ARGUMENT for bad options,
// the first failing run's status, INTERNAL when a file cannot be written.
Status RunAdversarialExperiment(const AdversarialOptions& options, const SimRunFn& run = RunSim,
                                const ExperimentProgressFn& progress = {});

}  // namespace hearsay::sim
