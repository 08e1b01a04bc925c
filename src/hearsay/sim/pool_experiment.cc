#include "hearsay/sim/pool_experiment.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "hearsay/sim/cluster_spec.h"
#include "hearsay/sim/experiment_results.h"
#include "hearsay/sim/parallel_runs.h"
#include "hearsay/sim/pool_experiment_results.h"

namespace hearsay::sim {
namespace pool {
namespace {

int SeedsOf(const PoolOptions& o) { return o.seeds > 0 ? o.seeds : (o.quick ? 1 : 3); }

// The figures of one run.
struct Figures {
  double mean = 0, p50 = 0, p99 = 0, hit = 0, failed = 0, wrong_model = 0;
  double class_share[kClasses] = {};  // mixed: share of requests each hardware class served
  std::vector<double> slow_share;     // slowdown: the slowed node's share of arrivals per second
};

Figures FiguresOf(const PoolSection& section, const SimSummary& s, int seconds) {
  Figures f;
  f.mean = s.mean_ttft_ms;
  f.p50 = s.p50_ttft_ms;
  f.p99 = s.p99_ttft_ms;
  f.hit = s.hit_rate;
  f.failed = static_cast<double>(s.failed);
  f.wrong_model = static_cast<double>(s.wrong_model);
  if (section.name == "mixed") {
    double total = 0;
    int node = 0;
    for (size_t c = 0; c < kClasses; ++c) {
      for (int k = 0; k < kMixed[c].count; ++k, ++node) {
        if (static_cast<size_t>(node) >= s.per_node_served.size()) break;
        const double n = static_cast<double>(s.per_node_served[static_cast<size_t>(node)]);
        f.class_share[c] += n;
        total += n;
      }
    }
    for (double& v : f.class_share) v = total > 0 ? v / total : 0;
  }
  if (section.name == "slowdown") {
    std::vector<double> all(static_cast<size_t>(seconds), 0), slow(all.size(), 0);
    for (const RequestRecord& r : s.records) {
      const auto sec = static_cast<size_t>(std::max(0.0, r.arrival_ms / 1000));
      if (sec >= all.size() || r.served_node < 0) continue;
      all[sec] += 1;
      slow[sec] += r.served_node == section.config.slow_node ? 1 : 0;
    }
    f.slow_share.resize(all.size());
    for (size_t i = 0; i < all.size(); ++i) f.slow_share[i] = all[i] > 0 ? slow[i] / all[i] : 0;
  }
  return f;
}

Agg Aggregate(const std::vector<const Figures*>& runs) {
  Agg a;
  std::vector<double> mean, p50, p99, hit;
  for (const Figures* f : runs) {
    mean.push_back(f->mean);
    p50.push_back(f->p50);
    p99.push_back(f->p99);
    hit.push_back(f->hit);
    a.failed += f->failed;
    a.wrong_model += f->wrong_model;
    for (size_t c = 0; c < kClasses; ++c) a.class_share[c] += f->class_share[c] / runs.size();
    if (a.slow_share.size() < f->slow_share.size()) a.slow_share.resize(f->slow_share.size(), 0);
    for (size_t i = 0; i < f->slow_share.size(); ++i) {
      a.slow_share[i] += f->slow_share[i] / runs.size();
    }
  }
  a.mean = StatOf(mean);
  a.p50 = StatOf(p50);
  a.p99 = StatOf(p99);
  a.hit = StatOf(hit);
  return a;
}

}  // namespace
}  // namespace pool

std::vector<std::string> PoolPolicies(const PoolOptions& options) {
  if (!options.policies.empty()) return options.policies;
  return {"hearsay", "oracle", "least-loaded", "paper"};
}

Result<std::vector<PoolSection>> PoolSections(const PoolOptions& o) {
  SimConfig base;
  base.workload = "mmlu";
  base.zipf = 1.0;
  base.rho = 0.7;
  base.delay_ms = 1;
  base.gossip_ms = 200;
  base.capacity_tokens = 32768;
  base.seed = o.base_seed;
  base.record_requests = true;
  base.requests = pool::PerNodeOf(o) * pool::kNodes;
  std::vector<PoolSection> out;

  PoolSection mixed{"mixed", "mixed-speed machines, one model", base};
  std::string spec;
  for (const pool::HardwareClass& c : pool::kMixed) {
    if (!spec.empty()) spec += ',';
    spec.append(c.preset).append(":").append(std::to_string(c.count));
  }
  mixed.config.cluster = spec;
  out.push_back(mixed);

  // m1 on 6 nodes, m2 and m3 on 4 each; Zipf 1 over models gives them 55%, 27% and 18%.
  PoolSection models{"models", "three models, each on a subset of the nodes", base};
  models.config.cluster =
      "h100-llama3-8b:2:m1,h100-llama3-8b:2:m1+m2,h100-llama3-8b:2:m2+m3,h100-llama3-8b:2:m1+m3";
  models.config.model_zipf = 1.0;
  out.push_back(models);

  PoolSection slow{"slowdown", "one engine slows to half speed mid-run", base};
  // Appended, not "..." + std::to_string(...): GCC 12 warns falsely (-Wrestrict) on that.
  slow.config.cluster = std::string("h100-llama3-8b:").append(std::to_string(pool::kNodes));
  slow.config.slow_node = pool::kSlowNode;
  slow.config.slow_at_s = pool::SlowAtOf(o);
  slow.config.slow_factor = pool::kSlowFactor;
  HEARSAY_ASSIGN_OR_RETURN(const double rate, ArrivalRateOf(slow.config));
  slow.config.requests = static_cast<uint64_t>(rate * pool::SlowRunOf(o));
  out.push_back(slow);
  for (PoolSection& s : out) HEARSAY_RETURN_IF_ERROR(ValidateSimConfig(s.config));
  return out;
}

Status RunPoolExperiment(const PoolOptions& options, const SimRunFn& run,
                         const ExperimentProgressFn& progress) {
  HEARSAY_RETURN_IF_ERROR(
      PrepareRuns(options.out_dir, options.seeds, options.jobs, static_cast<bool>(run)));

  pool::Results r;
  r.options = options;
  HEARSAY_ASSIGN_OR_RETURN(r.sections, PoolSections(options));
  r.policies = PoolPolicies(options);
  r.seeds = pool::SeedsOf(options);
  const int seconds = static_cast<int>(std::ceil(pool::SlowRunOf(options)));

  struct Run {
    size_t section, policy;
    SimConfig config;
  };
  std::vector<Run> runs;
  for (size_t s = 0; s < r.sections.size(); ++s) {
    for (size_t p = 0; p < r.policies.size(); ++p) {
      for (int k = 0; k < r.seeds; ++k) {
        SimConfig c = r.sections[s].config;
        c.policy = r.policies[p];
        c.routers = 0;
        c.seed = options.base_seed + static_cast<uint64_t>(k);
        runs.push_back({s, p, std::move(c)});
      }
    }
  }
  std::vector<pool::Figures> figures(runs.size());
  const std::optional<RunFailure> failed = RunParallel(
      runs.size(), options.jobs,
      [&](size_t i) {
        Result<SimSummary> s = run(runs[i].config, ProgressFn{});
        if (!s.ok()) return s.status();
        figures[i] = pool::FiguresOf(r.sections[runs[i].section], *s, seconds);
        return Status();
      },
      [&](uint64_t done, uint64_t total) {
        if (progress) progress(done, total, 0, 0);
      });
  if (failed) {
    const size_t i = failed->index;
    return Status(failed->status.code(),
                  r.sections[runs[i].section].name + ", " + r.policies[runs[i].policy] + ", seed " +
                      std::to_string(runs[i].config.seed) + ": " + failed->status.message());
  }

  std::ostringstream csv;
  csv << "section,policy,seed,mean_ttft_ms,p50_ttft_ms,p99_ttft_ms,hit_rate,failed,wrong_model";
  for (const pool::HardwareClass& c : pool::kMixed) csv << ",served_" << c.label;
  csv << '\n';
  r.stats.assign(r.sections.size(), std::vector<pool::Agg>(r.policies.size()));
  for (size_t i = 0; i < runs.size(); ++i) {
    const pool::Figures& f = figures[i];
    csv << r.sections[runs[i].section].name << ',' << r.policies[runs[i].policy] << ','
        << runs[i].config.seed << ',' << CsvNumber(f.mean) << ',' << CsvNumber(f.p50) << ','
        << CsvNumber(f.p99) << ',' << CsvNumber(f.hit) << ',' << CsvNumber(f.failed) << ','
        << CsvNumber(f.wrong_model);
    for (double v : f.class_share) csv << ',' << CsvNumber(v);
    csv << '\n';
  }
  // Runs of one (section, policy) are contiguous.
  for (size_t i = 0; i < runs.size(); i += static_cast<size_t>(r.seeds)) {
    std::vector<const pool::Figures*> group;
    for (int k = 0; k < r.seeds; ++k) group.push_back(&figures[i + static_cast<size_t>(k)]);
    r.stats[runs[i].section][runs[i].policy] = pool::Aggregate(group);
  }
  std::ostringstream sections;
  sections << "section,policy,seeds,mean_ttft_ms,mean_ttft_ms_sd,p50_ttft_ms,p99_ttft_ms,"
              "p99_ttft_ms_sd,hit_rate,failed,wrong_model\n";
  for (size_t s = 0; s < r.sections.size(); ++s) {
    for (size_t p = 0; p < r.policies.size(); ++p) {
      const pool::Agg& a = r.stats[s][p];
      sections << r.sections[s].name << ',' << r.policies[p] << ',' << r.seeds << ','
               << CsvNumber(a.mean.mean) << ',' << CsvNumber(a.mean.sd) << ','
               << CsvNumber(a.p50.mean) << ',' << CsvNumber(a.p99.mean) << ','
               << CsvNumber(a.p99.sd) << ',' << CsvNumber(a.hit.mean) << ',' << CsvNumber(a.failed)
               << ',' << CsvNumber(a.wrong_model) << '\n';
    }
  }
  const std::string& dir = options.out_dir;
  HEARSAY_RETURN_IF_ERROR(pool::WriteFile(dir + "/runs.csv", csv.str()));
  HEARSAY_RETURN_IF_ERROR(pool::WriteFile(dir + "/sections.csv", sections.str()));
  HEARSAY_RETURN_IF_ERROR(pool::WritePlots(r));
  return pool::WriteFile(dir + "/report.md", pool::RenderReport(r));
}

}  // namespace hearsay::sim
