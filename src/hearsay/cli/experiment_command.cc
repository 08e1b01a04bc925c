#include "hearsay/cli/experiment_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "hearsay/sim/adversarial_experiment.h"
#include "hearsay/sim/experiment.h"
#include "hearsay/sim/peers_experiment.h"
#include "hearsay/sim/pool_experiment.h"

namespace hearsay::cli {

void AddExperimentFlags(CLI::App* cmd, ExperimentCliFlags* f) {
  cmd->add_option("--experiment", f->experiment,
                  "Run a whole experiment sweep: paper (docs/paper-reproduction.md), peers "
                  "(docs/peers.md), pool (docs/pool.md) or adversarial (docs/adversarial.md)")
      ->check(CLI::IsMember({"paper", "peers", "pool", "adversarial"}));
  cmd->add_option("--out", f->out_dir, "Experiment output folder (CSV, PNG, report.md)");
  cmd->add_flag("--quick", f->quick, "Experiment: a small sweep (smoke test)");
  cmd->add_option("--seeds", f->seeds, "Experiment: seeds per point (default 3, quick 1)");
  cmd->add_option("--exp-requests", f->exp_requests,
                  "Experiment: requests per run (default 2000, quick 300); peers: per node per "
                  "run (default 150, quick 40)");
  cmd->add_option("--policies", f->policies, "Experiment: comma-separated policies (default all)");
  cmd->add_option("--exp-trace", f->trace, "Experiment: Mooncake trace ('' = no trace section)")
      ->capture_default_str();
  cmd->add_flag("--no-plots", f->no_plots, "Experiment: do not run gnuplot");
  cmd->add_option("--jobs", f->jobs, "Experiment peers and pool: simulations run at once")
      ->capture_default_str();
}

int RunExperimentCli(const ExperimentCliFlags& f) {
  if (f.out_dir.empty()) {
    std::fprintf(stderr, "hearsay sim --experiment: --out DIR is required\n");
    return 2;
  }
  sim::ExperimentOptions o;
  o.out_dir = f.out_dir;
  o.quick = f.quick;
  o.seeds = f.seeds;
  o.requests = f.exp_requests;
  if (!f.trace.empty()) {
    if (!std::filesystem::exists(f.trace)) {
      std::fprintf(stderr,
                   "hearsay sim --experiment: no trace file at %s (--exp-trace FILE names "
                   "another, --exp-trace '' skips the trace section)\n",
                   f.trace.c_str());
      return 2;
    }
    o.trace_path = f.trace;
  }
  std::stringstream ps(f.policies);
  for (std::string p; std::getline(ps, p, ',');) {
    if (!p.empty()) o.policies.push_back(p);
  }

  const bool tty = isatty(fileno(stderr)) != 0;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  uint64_t last_runs = ~0ull;
  auto progress = [&](uint64_t runs, uint64_t total, uint64_t rd, uint64_t rt) {
    if (!tty && runs == last_runs) return;
    last_runs = runs;
    const double frac =
        total == 0 ? 1.0
                   : (static_cast<double>(runs) + (rt == 0 ? 0.0 : static_cast<double>(rd) / rt)) /
                         static_cast<double>(total);
    const int width = 30;
    const int fill = static_cast<int>(frac * width);
    const double t = elapsed();
    const double eta = frac > 0.01 ? t / frac - t : 0;
    std::fprintf(stderr, "%s[%.*s%*s] %llu/%llu runs  %.0fs elapsed, ~%.0fs left%s",
                 tty ? "\r" : "", fill, "##############################", width - fill, "",
                 static_cast<unsigned long long>(runs), static_cast<unsigned long long>(total), t,
                 eta, tty ? "" : "\n");
  };
  Status s;
  if (f.experiment == "peers") {
    sim::PeersOptions po;
    po.out_dir = o.out_dir;
    po.quick = o.quick;
    po.seeds = o.seeds;
    po.jobs = f.jobs;
    po.trace_path = o.trace_path;
    if (f.exp_requests > 0) po.requests_per_node = f.exp_requests;
    s = sim::RunPeersExperiment(po, sim::RunSim, progress);
  } else if (f.experiment == "adversarial") {
    sim::AdversarialOptions ao;
    ao.out_dir = o.out_dir;
    ao.quick = o.quick;
    ao.seeds = o.seeds;
    ao.jobs = f.jobs;
    ao.trace_path = o.trace_path;
    s = sim::RunAdversarialExperiment(ao, sim::RunSim, progress);
  } else if (f.experiment == "pool") {
    sim::PoolOptions po;
    po.out_dir = o.out_dir;
    po.quick = o.quick;
    po.seeds = o.seeds;
    po.jobs = f.jobs;
    po.policies = o.policies;
    s = sim::RunPoolExperiment(po, sim::RunSim, progress);
  } else {
    s = sim::RunPaperExperiment(o, sim::RunSim, progress);
  }
  if (tty) std::fputc('\n', stderr);
  if (!s.ok()) {
    std::fprintf(stderr, "hearsay sim --experiment: %s\n", s.ToString().c_str());
    return 1;
  }
  if (!f.no_plots) {
    const std::string cmd = "cd '" + f.out_dir + "' && gnuplot plots.gp 2>gnuplot.log";
    if (std::system(cmd.c_str()) != 0) {
      std::fprintf(stderr, "hearsay sim --experiment: gnuplot failed; the CSVs are written\n");
    }
  }
  std::printf("%s/report.md written in %.1f s\n", f.out_dir.c_str(), elapsed());
  return 0;
}

}  // namespace hearsay::cli
