#include "hearsay/sim/experiment.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <utility>

#include "hearsay/sim/experiment_results.h"

namespace hearsay::sim {
namespace {

constexpr const char* kAllPolicies[] = {"local", "random", "round-robin", "least-loaded",
                                        "p2c",   "paper",  "oracle",      "hearsay"};

int SeedsOf(const ExperimentOptions& o) { return o.seeds > 0 ? o.seeds : (o.quick ? 1 : 3); }

uint64_t RequestsOf(const ExperimentOptions& o) {
  return o.requests > 0 ? o.requests : (o.quick ? 300 : 2000);
}

// Everything a run's outcome depends on, to simulate shared configurations once.
std::string ConfigKey(const SimConfig& c) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%s|%s|%d|%s|%.9g|%.9g|%.9g|%.9g|%llu|%llu|%.9g|%llu|%s",
                c.workload.c_str(), c.trace_path.c_str(), c.nodes, c.policy.c_str(), c.delay_ms,
                c.delay_jitter, c.zipf, c.rho, static_cast<unsigned long long>(c.requests),
                static_cast<unsigned long long>(c.capacity_tokens), c.gossip_ms,
                static_cast<unsigned long long>(c.seed), c.arrivals.c_str());
  return buf;
}

Status WriteRunsCsv(const std::string& path, const std::vector<ExperimentPoint>& points,
                    const std::vector<std::pair<size_t, SimConfig>>& runs,
                    const std::vector<SimSummary>& summaries) {
  std::ofstream out(path, std::ios::binary);
  if (!out) return InternalError("cannot write " + path);
  out << "factor,level,policy,seed";
  for (size_t m = 0; m < kMetricCount; ++m) out << ',' << MetricName(static_cast<Metric>(m));
  out << ",requests,failed,retries,sim_seconds,arrival_rate_per_s\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& [point, config] = runs[i];
    const SimSummary& s = summaries[i];
    out << points[point].factor << ',' << CsvNumber(points[point].level) << ',' << config.policy
        << ',' << config.seed;
    for (size_t m = 0; m < kMetricCount; ++m) {
      out << ',' << CsvNumber(MetricValue(s, static_cast<Metric>(m)));
    }
    out << ',' << s.requests << ',' << s.failed << ',' << s.retries << ','
        << CsvNumber(s.sim_seconds) << ',' << CsvNumber(s.arrival_rate_per_s) << '\n';
  }
  return out.good() ? OkStatus() : InternalError("write failed: " + path);
}

}  // namespace

SimConfig PaperBaseConfig(const ExperimentOptions& options) {
  SimConfig c;
  c.workload = "mmlu";
  c.nodes = 4;
  c.delay_ms = 1.0;
  c.zipf = 1.0;
  c.rho = 0.7;
  c.requests = RequestsOf(options);
  c.capacity_tokens = 16384;
  c.gossip_ms = 200;
  c.seed = options.base_seed;
  // Per-request records, for the specialist-drift figures of claim 4.
  c.record_requests = true;
  return c;
}

std::vector<ExperimentPoint> PaperSweep(const ExperimentOptions& options) {
  const SimConfig base = PaperBaseConfig(options);
  const bool q = options.quick;
  const std::vector<double> delays =
      q ? std::vector<double>{1, 100} : std::vector<double>{0.1, 1, 5, 20, 50, 100};
  const std::vector<double> zipfs =
      q ? std::vector<double>{0, 1.2} : std::vector<double>{0, 0.4, 0.8, 1.0, 1.2, 1.4};
  const std::vector<double> nodes = q ? std::vector<double>{4} : std::vector<double>{4, 8, 16, 32};
  const std::vector<double> gossips =
      q ? std::vector<double>{200} : std::vector<double>{200, 1000, 5000, 30000};
  const std::vector<double> caps =
      q ? std::vector<double>{8192, 16384} : std::vector<double>{4096, 8192, 16384, 32768, 65536};
  std::vector<ExperimentPoint> points;
  auto add = [&](const char* factor, const std::vector<double>& levels, auto apply) {
    for (double level : levels) {
      ExperimentPoint p{factor, level, base};
      apply(p.config, level);
      points.push_back(std::move(p));
    }
  };
  add("delay_ms", delays, [](SimConfig& c, double v) { c.delay_ms = v; });
  add("zipf", zipfs, [](SimConfig& c, double v) { c.zipf = v; });
  add("nodes", nodes, [](SimConfig& c, double v) { c.nodes = static_cast<int>(v); });
  add("gossip_ms", gossips, [](SimConfig& c, double v) { c.gossip_ms = v; });
  add("capacity_tokens", caps,
      [](SimConfig& c, double v) { c.capacity_tokens = static_cast<uint64_t>(v); });
  if (!options.trace_path.empty()) {
    // Poisson arrivals at the base rho keep the trace's load comparable to the MMLU points.
    ExperimentPoint p{"trace", 0, base};
    p.config.workload = "trace";
    p.config.trace_path = options.trace_path;
    p.config.arrivals = "poisson";
    points.push_back(std::move(p));
  }
  return points;
}

std::vector<std::string> ExperimentPolicies(const ExperimentOptions& options) {
  if (!options.policies.empty()) return options.policies;
  return {std::begin(kAllPolicies), std::end(kAllPolicies)};
}

Status RunPaperExperiment(const ExperimentOptions& options, const SimRunFn& run,
                          const ExperimentProgressFn& progress) {
  if (options.out_dir.empty()) return InvalidArgumentError("out_dir is empty");
  if (options.seeds < 0) return InvalidArgumentError("seeds must be >= 0");
  if (!run) return InvalidArgumentError("no run function");
  std::error_code ec;
  std::filesystem::create_directories(options.out_dir, ec);
  if (ec) return InternalError("cannot create " + options.out_dir + ": " + ec.message());

  ExperimentResults results;
  results.options = options;
  results.base = PaperBaseConfig(options);
  results.points = PaperSweep(options);
  results.policies = ExperimentPolicies(options);
  const int seeds = SeedsOf(options);

  std::vector<std::pair<size_t, SimConfig>> runs;
  for (size_t p = 0; p < results.points.size(); ++p) {
    for (const std::string& policy : results.policies) {
      for (int s = 0; s < seeds; ++s) {
        SimConfig c = results.points[p].config;
        c.policy = policy;
        c.seed = options.base_seed + static_cast<uint64_t>(s);
        runs.emplace_back(p, std::move(c));
      }
    }
  }
  std::map<std::string, size_t> first_run;  // Config key -> first run index with it.
  uint64_t unique = 0;
  for (const auto& r : runs) unique += first_run.emplace(ConfigKey(r.second), 0).second ? 1 : 0;
  first_run.clear();

  std::vector<SimSummary> summaries(runs.size());
  uint64_t done = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string key = ConfigKey(runs[i].second);
    auto [it, fresh] = first_run.emplace(key, i);
    if (!fresh) {
      summaries[i] = summaries[it->second];
      continue;
    }
    ProgressFn inner;
    if (progress) {
      inner = [&](uint64_t rd, uint64_t rt) { progress(done, unique, rd, rt); };
    }
    Result<SimSummary> r = run(runs[i].second, inner);
    if (!r.ok()) {
      const ExperimentPoint& pt = results.points[runs[i].first];
      return Status(r.status().code(), pt.factor + "=" + CsvNumber(pt.level) + " policy " +
                                           runs[i].second.policy + ": " + r.status().message());
    }
    summaries[i] = std::move(r).value();
    ++done;
    if (progress) progress(done, unique, 0, 0);
  }

  // Aggregate over seeds; runs of one (point, policy) are contiguous.
  for (size_t i = 0; i < runs.size(); i += static_cast<size_t>(seeds)) {
    PointStats ps;
    ps.point = runs[i].first;
    ps.policy = runs[i].second.policy;
    ps.seeds = seeds;
    for (size_t m = 0; m < kMetricCount; ++m) {
      double sum = 0;
      double sq = 0;
      for (int s = 0; s < seeds; ++s) {
        const double v = MetricValue(summaries[i + static_cast<size_t>(s)], static_cast<Metric>(m));
        sum += v;
        sq += v * v;
      }
      const double mean = sum / seeds;
      ps.metrics[m] = {mean, std::sqrt(std::max(0.0, sq / seeds - mean * mean))};
    }
    results.stats.push_back(std::move(ps));
  }

  HEARSAY_RETURN_IF_ERROR(
      WriteRunsCsv(options.out_dir + "/runs.csv", results.points, runs, summaries));
  return WriteExperimentOutputs(results);
}

}  // namespace hearsay::sim
