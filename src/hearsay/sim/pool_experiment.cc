#include "hearsay/sim/pool_experiment.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>

#include "hearsay/sim/cluster_spec.h"
#include "hearsay/sim/experiment_results.h"

namespace hearsay::sim {
namespace {

constexpr int kNodes = 8;
// The slowdown section: the slowed node, when (virtual seconds after the first arrival) and for
// how long the run lasts; the goal's window.
constexpr int kSlowNode = 3;
constexpr double kSlowFactor = 2;
constexpr double kSlowWindowS = 10;
// A node's load "fell" once its share of arrivals over kFallSpanS seconds is below this fraction
// of its share in the kSlowWindowS before the slowdown.
constexpr double kFallFraction = 0.75;
constexpr int kFallSpanS = 2;

int SeedsOf(const PoolOptions& o) { return o.seeds > 0 ? o.seeds : (o.quick ? 1 : 3); }
double SlowAtOf(const PoolOptions& o) { return o.quick ? 4 : 30; }
double SlowRunOf(const PoolOptions& o) { return o.quick ? 10 : 60; }
uint64_t PerNodeOf(const PoolOptions& o) { return o.quick ? 40 : 500; }

// The hardware groups of the mixed section, in node order.
struct HardwareClass {
  const char* preset;
  const char* label;
  int count;
};
constexpr HardwareClass kMixed[] = {
    {"h100-llama3-8b", "H100", 2}, {"a100-llama3-8b", "A100", 2}, {"consumer", "consumer", 4}};
constexpr size_t kClasses = std::size(kMixed);

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

struct Agg {
  Stat mean, p50, p99, hit;
  double failed = 0, wrong_model = 0;  // sums over seeds
  double class_share[kClasses] = {};   // means over seeds
  std::vector<double> slow_share;      // means over seeds
};

Stat StatOf(const std::vector<double>& v) {
  double sum = 0, sq = 0;
  for (double x : v) {
    sum += x;
    sq += x * x;
  }
  const double n = static_cast<double>(v.size());
  const double mean = n > 0 ? sum / n : 0;
  return {mean, n > 0 ? std::sqrt(std::max(0.0, sq / n - mean * mean)) : 0};
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

// The slowed node's share of arrivals over seconds [from, to) of `share` (a mean of per-second
// shares; seconds outside the run are left out).
double ShareOver(const std::vector<double>& share, double from, double to) {
  double sum = 0, n = 0;
  for (int s = static_cast<int>(std::max(0.0, from)); s < static_cast<int>(to); ++s) {
    if (static_cast<size_t>(s) >= share.size()) break;
    sum += share[static_cast<size_t>(s)];
    n += 1;
  }
  return n > 0 ? sum / n : 0;
}

// How the slowed node's load changed: its share in the kSlowWindowS before the slowdown, over the
// second half of the time after it, and the seconds after the slowdown until its share over
// kFallSpanS seconds fell below kFallFraction of before (-1 never).
struct Fall {
  double before = 0;
  double after = 0;
  double seconds = -1;
};

Fall FallOf(const std::vector<double>& share, double at, double end) {
  Fall f;
  f.before = ShareOver(share, at - kSlowWindowS, at);
  f.after = ShareOver(share, at + (end - at) / 2, end);
  for (int k = 0; at + k + kFallSpanS <= end; ++k) {
    if (ShareOver(share, at + k, at + k + kFallSpanS) < kFallFraction * f.before) {
      f.seconds = k;
      break;
    }
  }
  return f;
}

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) return InternalError("cannot write " + path);
  out << text;
  return out.good() ? OkStatus() : InternalError("write failed: " + path);
}

struct Results {
  PoolOptions options;
  std::vector<PoolSection> sections;
  std::vector<std::string> policies;
  std::vector<std::vector<Agg>> stats;  // [section][policy]
  int seeds = 0;

  const Agg* At(const std::string& section, const std::string& policy) const {
    for (size_t s = 0; s < sections.size(); ++s) {
      if (sections[s].name != section) continue;
      for (size_t p = 0; p < policies.size(); ++p) {
        if (policies[p] == policy) return &stats[s][p];
      }
    }
    return nullptr;
  }
  const PoolSection* Section(const std::string& name) const {
    for (const PoolSection& s : sections) {
      if (s.name == name) return &s;
    }
    return nullptr;
  }
};

// One goal's row: what, the measured figure, and the verdict.
struct Goal {
  std::string what;
  std::string measured;
  bool met = false;
  bool known = false;  // false: a policy it needs did not run
};

// hearsay's mean TTFT against `other`'s in `section`, as a goal of ratio <= `limit`.
Goal RatioGoal(const Results& r, const std::string& section, const std::string& other,
               double limit) {
  Goal g;
  g.what = section + ": hearsay mean TTFT ≤ " + Fmt("%.2f", limit) + "× " + other + "'s";
  const Agg* h = r.At(section, "hearsay");
  const Agg* o = r.At(section, other);
  if (h == nullptr || o == nullptr || o->mean.mean <= 0) {
    g.measured = "not run";
    return g;
  }
  const double ratio = h->mean.mean / o->mean.mean;
  g.known = true;
  g.met = ratio <= limit;
  g.measured = Fmt("%.3f", ratio) + "× (" + Fmt("%.1f", h->mean.mean) + " ms vs " +
               Fmt("%.1f", o->mean.mean) + " ms)" +
               (g.met ? "" : ", missed by " + Fmt("%.1f", 100 * (ratio / limit - 1)) + "%");
  return g;
}

std::vector<Goal> Goals(const Results& r) {
  std::vector<Goal> goals;
  if (r.Section("mixed") != nullptr) {
    goals.push_back(RatioGoal(r, "mixed", "oracle", 1.05));
    goals.push_back(RatioGoal(r, "mixed", "least-loaded", 0.8));
  }
  if (r.Section("models") != nullptr) {
    Goal g;
    g.what =
        "no request sent to or served by a node without its model (every section, policy, seed)";
    double wrong = 0;
    for (size_t p = 0; p < r.policies.size(); ++p) {
      for (size_t s = 0; s < r.sections.size(); ++s) wrong += r.stats[s][p].wrong_model;
    }
    g.known = true;
    g.met = wrong == 0;
    g.measured = Fmt("%.0f", wrong) + " wrong-model requests";
    goals.push_back(g);
    goals.push_back(RatioGoal(r, "models", "oracle", 1.05));
  }
  if (const PoolSection* sec = r.Section("slowdown")) {
    Goal g;
    g.what = "slowdown: hearsay's share of arrivals on the slowed node falls within " +
             Fmt("%.0f", kSlowWindowS) + " s and stays down";
    if (const Agg* h = r.At("slowdown", "hearsay")) {
      const Fall f = FallOf(h->slow_share, sec->config.slow_at_s, SlowRunOf(r.options));
      g.known = true;
      g.met = f.seconds >= 0 && f.seconds <= kSlowWindowS && f.after < kFallFraction * f.before;
      g.measured = (f.seconds < 0 ? std::string("never fell")
                                  : "fell after " + Fmt("%.0f", f.seconds) + " s") +
                   "; share " + Fmt("%.3f", f.before) + " before, " + Fmt("%.3f", f.after) +
                   " in the second half of the time after";
    } else {
      g.measured = "not run";
    }
    goals.push_back(g);
    goals.push_back(RatioGoal(r, "slowdown", "oracle", 1.1));
  }
  return goals;
}

std::string RenderReport(const Results& r) {
  std::ostringstream out;
  const PoolOptions& o = r.options;
  out << "# hearsay as a pool of unequal machines and several models (pool experiment)\n\n"
      << "Generated by `hearsay sim --experiment pool --out DIR" << (o.quick ? " --quick" : "")
      << "` (" << r.seeds << " seed" << (r.seeds == 1 ? "" : "s") << " per section, " << kNodes
      << " nodes, MMLU-like traffic at Zipf 1.0, rho 0.7 of the pool's summed capacity, 1 ms "
         "one-way delay, gossip 200 ms). Every policy runs on the same requests and seeds. "
         "Figures are means over seeds, ± the standard deviation over seeds.\n\n";
  out << "## Sections\n\n| section | what | cluster |\n|---|---|---|\n";
  for (const PoolSection& s : r.sections) {
    out << "| " << s.name << " | " << s.title << " | `" << s.config.cluster << "` |\n";
  }

  out << "\n## Goals\n\n| goal | measured | verdict |\n|---|---|---|\n";
  for (const Goal& g : Goals(r)) {
    out << "| " << g.what << " | " << g.measured << " | "
        << (!g.known ? "–" : (g.met ? "**MET**" : "**MISSED**")) << " |\n";
  }

  for (size_t s = 0; s < r.sections.size(); ++s) {
    const PoolSection& sec = r.sections[s];
    out << "\n## " << sec.name << ": " << sec.title << "\n\n"
        << sec.config.requests << " requests per run, KV cache " << sec.config.capacity_tokens
        << " tokens per engine.\n\n| policy | mean TTFT ms | p50 ms | p99 TTFT ms | hit rate | "
           "failed | wrong model |";
    const bool mixed = sec.name == "mixed";
    if (mixed) {
      for (const HardwareClass& c : kMixed) out << " served by " << c.label << " |";
    }
    out << "\n|---|---|---|---|---|---|---|" << (mixed ? "---|---|---|" : "") << "\n";
    for (size_t p = 0; p < r.policies.size(); ++p) {
      const Agg& a = r.stats[s][p];
      out << "| " << r.policies[p] << " | " << Fmt("%.2f", a.mean.mean) << " ± "
          << Fmt("%.2f", a.mean.sd) << " | " << Fmt("%.2f", a.p50.mean) << " | "
          << Fmt("%.1f", a.p99.mean) << " ± " << Fmt("%.1f", a.p99.sd) << " | "
          << Fmt("%.3f", a.hit.mean) << " | " << Fmt("%.0f", a.failed) << " | "
          << Fmt("%.0f", a.wrong_model) << " |";
      if (mixed) {
        for (double v : a.class_share) out << " " << Fmt("%.3f", v) << " |";
      }
      out << "\n";
    }
    if (mixed) {
      out << "\nserved by: the share of requests each kind of machine served (it has "
          << kMixed[0].count << ", " << kMixed[1].count << " and " << kMixed[2].count
          << " nodes of them; an H100 prefills ~8× as fast as a consumer card).\n";
    }
    if (sec.name == "slowdown") {
      out << "\nNode " << sec.config.slow_node << "'s engine runs at 1/" << Fmt("%.0f", kSlowFactor)
          << " of its speed from " << Fmt("%.0f", sec.config.slow_at_s)
          << " s. Its share of arrivals (all nodes alike: 1/" << kNodes << " = "
          << Fmt("%.3f", 1.0 / kNodes) << "), in the " << Fmt("%.0f", kSlowWindowS)
          << " s before, in the second half of the time after (from "
          << Fmt("%.0f", (sec.config.slow_at_s + SlowRunOf(o)) / 2)
          << " s to the end), and the seconds until its share over " << kFallSpanS
          << " s fell below " << Fmt("%.2f", kFallFraction) << "× the share before (plot: "
          << "[slow_share.png](slow_share.png)):\n\n| policy | before | after | fell after |\n"
             "|---|---|---|---|\n";
      for (size_t p = 0; p < r.policies.size(); ++p) {
        const Fall f = FallOf(r.stats[s][p].slow_share, sec.config.slow_at_s, SlowRunOf(o));
        out << "| " << r.policies[p] << " | " << Fmt("%.3f", f.before) << " | "
            << Fmt("%.3f", f.after) << " | "
            << (f.seconds < 0 ? std::string("never") : Fmt("%.0f", f.seconds) + " s") << " |\n";
      }
    }
  }
  out << "\n![mean TTFT per section](ttft.png)\n\n![slowed node's share](slow_share.png)\n";
  return out.str();
}

Status WritePlots(const Results& r) {
  const std::string& dir = r.options.out_dir;
  std::ostringstream ttft;
  ttft << "section";
  for (const std::string& p : r.policies) ttft << ',' << p << ',' << p << "_sd";
  ttft << '\n';
  for (size_t s = 0; s < r.sections.size(); ++s) {
    ttft << r.sections[s].name;
    for (size_t p = 0; p < r.policies.size(); ++p) {
      ttft << ',' << CsvNumber(r.stats[s][p].mean.mean) << ',' << CsvNumber(r.stats[s][p].mean.sd);
    }
    ttft << '\n';
  }
  HEARSAY_RETURN_IF_ERROR(WriteFile(dir + "/plot_ttft.csv", ttft.str()));

  std::ostringstream gp;
  gp << "# Draws the pool experiment's PNGs: run `gnuplot plots.gp` in this folder.\n"
        "set datafile separator ','\nset datafile columnheaders\nset grid\n"
        "set key top left font ',9'\n";
  const size_t nb = r.policies.size();
  gp << "set terminal pngcairo size 900,500 noenhanced\nset output 'ttft.png'\n"
        "set title 'Mean TTFT per section (error bars: stddev over seeds)'\n"
        "set boxwidth 0.9\nset style fill solid 0.6 border -1\nset offsets 1, 1, 0, 0\n"
        "set yrange [0:*]\nset ylabel 'mean TTFT (ms)'\nplot "
     << "'plot_ttft.csv' using ($0*" << nb + 1 << "+" << CsvNumber((nb - 1) / 2.0)
     << "):(NaN):xtic(1) notitle";
  for (size_t i = 0; i < nb; ++i) {
    gp << ", 'plot_ttft.csv' using ($0*" << nb + 1 << "+" << i << "):" << 2 + 2 * i << ":"
       << 3 + 2 * i << " with boxerrorbars title '" << r.policies[i] << "'";
  }
  gp << "\n";

  if (const PoolSection* sec = r.Section("slowdown")) {
    std::ostringstream share;
    share << "second";
    for (const std::string& p : r.policies) share << ',' << p;
    share << '\n';
    size_t seconds = 0;
    for (const std::string& p : r.policies) {
      seconds = std::max(seconds, r.At("slowdown", p)->slow_share.size());
    }
    for (size_t t = 0; t < seconds; ++t) {
      share << t;
      for (const std::string& p : r.policies) {
        const std::vector<double>& v = r.At("slowdown", p)->slow_share;
        share << ',' << CsvNumber(t < v.size() ? v[t] : 0);
      }
      share << '\n';
    }
    HEARSAY_RETURN_IF_ERROR(WriteFile(dir + "/slow_share.csv", share.str()));
    gp << "unset offsets\nunset xtics\nset xtics\nset yrange [0:*]\nset boxwidth\nset key bottom "
          "left\n"
          "set terminal pngcairo size 900,500 noenhanced\nset output 'slow_share.png'\n"
          "set title \"Node "
       << sec->config.slow_node << "'s share of arrivals per second; its engine runs at half "
       << "speed from t = " << CsvNumber(sec->config.slow_at_s) << " s (mean over seeds)\"\n"
       << "set arrow 1 from " << CsvNumber(sec->config.slow_at_s) << ", graph 0 to "
       << CsvNumber(sec->config.slow_at_s) << ", graph 1 nohead dashtype 2\n"
       << "set xlabel 'virtual time (s, from the first arrival)'\n"
          "set ylabel 'share of arrivals served by the slowed node'\nplot ";
    for (size_t i = 0; i < nb; ++i) {
      gp << (i ? ", " : "") << "'slow_share.csv' using 1:" << 2 + i << " with linespoints title '"
         << r.policies[i] << "'";
    }
    gp << "\n";
  }
  return WriteFile(dir + "/plots.gp", gp.str());
}

}  // namespace

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
  base.requests = PerNodeOf(o) * kNodes;
  std::vector<PoolSection> out;

  PoolSection mixed{"mixed", "mixed-speed machines, one model", base};
  std::string spec;
  for (const HardwareClass& c : kMixed) {
    spec += (spec.empty() ? "" : ",") + std::string(c.preset) + ":" + std::to_string(c.count);
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
  slow.config.cluster = "h100-llama3-8b:" + std::to_string(kNodes);
  slow.config.slow_node = kSlowNode;
  slow.config.slow_at_s = SlowAtOf(o);
  slow.config.slow_factor = kSlowFactor;
  HEARSAY_ASSIGN_OR_RETURN(const double rate, ArrivalRateOf(slow.config));
  slow.config.requests = static_cast<uint64_t>(rate * SlowRunOf(o));
  out.push_back(slow);
  for (PoolSection& s : out) HEARSAY_RETURN_IF_ERROR(ValidateSimConfig(s.config));
  return out;
}

Status RunPoolExperiment(const PoolOptions& options, const SimRunFn& run,
                         const ExperimentProgressFn& progress) {
  if (options.out_dir.empty()) return InvalidArgumentError("out_dir is empty");
  if (options.seeds < 0 || options.jobs < 1) {
    return InvalidArgumentError("seeds must be >= 0 and jobs >= 1");
  }
  if (!run) return InvalidArgumentError("no run function");
  std::error_code ec;
  std::filesystem::create_directories(options.out_dir, ec);
  if (ec) return InternalError("cannot create " + options.out_dir + ": " + ec.message());

  Results r;
  r.options = options;
  HEARSAY_ASSIGN_OR_RETURN(r.sections, PoolSections(options));
  r.policies = PoolPolicies(options);
  r.seeds = SeedsOf(options);
  const int seconds = static_cast<int>(std::ceil(SlowRunOf(options)));

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
  std::vector<Figures> figures(runs.size());
  std::vector<Status> errors(runs.size());
  std::atomic<size_t> next{0};
  std::mutex mu;
  uint64_t done = 0;
  auto worker = [&] {
    for (size_t i = next++; i < runs.size(); i = next++) {
      Result<SimSummary> s = run(runs[i].config, ProgressFn{});
      if (s.ok()) {
        figures[i] = FiguresOf(r.sections[runs[i].section], *s, seconds);
      } else {
        errors[i] = s.status();
      }
      std::lock_guard<std::mutex> lock(mu);
      ++done;
      if (progress) progress(done, runs.size(), 0, 0);
    }
  };
  const int jobs = std::min<int>(options.jobs, static_cast<int>(std::max<size_t>(1, runs.size())));
  std::vector<std::thread> threads;
  for (int j = 1; j < jobs; ++j) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < runs.size(); ++i) {
    if (errors[i].ok()) continue;
    return Status(errors[i].code(),
                  r.sections[runs[i].section].name + ", " + r.policies[runs[i].policy] + ", seed " +
                      std::to_string(runs[i].config.seed) + ": " + errors[i].message());
  }

  std::ostringstream csv;
  csv << "section,policy,seed,mean_ttft_ms,p50_ttft_ms,p99_ttft_ms,hit_rate,failed,wrong_model";
  for (const HardwareClass& c : kMixed) csv << ",served_" << c.label;
  csv << '\n';
  r.stats.assign(r.sections.size(), std::vector<Agg>(r.policies.size()));
  for (size_t i = 0; i < runs.size(); ++i) {
    const Figures& f = figures[i];
    csv << r.sections[runs[i].section].name << ',' << r.policies[runs[i].policy] << ','
        << runs[i].config.seed << ',' << CsvNumber(f.mean) << ',' << CsvNumber(f.p50) << ','
        << CsvNumber(f.p99) << ',' << CsvNumber(f.hit) << ',' << CsvNumber(f.failed) << ','
        << CsvNumber(f.wrong_model);
    for (double v : f.class_share) csv << ',' << CsvNumber(v);
    csv << '\n';
  }
  // Runs of one (section, policy) are contiguous.
  for (size_t i = 0; i < runs.size(); i += static_cast<size_t>(r.seeds)) {
    std::vector<const Figures*> group;
    for (int k = 0; k < r.seeds; ++k) group.push_back(&figures[i + static_cast<size_t>(k)]);
    r.stats[runs[i].section][runs[i].policy] = Aggregate(group);
  }
  std::ostringstream sections;
  sections << "section,policy,seeds,mean_ttft_ms,mean_ttft_ms_sd,p50_ttft_ms,p99_ttft_ms,"
              "p99_ttft_ms_sd,hit_rate,failed,wrong_model\n";
  for (size_t s = 0; s < r.sections.size(); ++s) {
    for (size_t p = 0; p < r.policies.size(); ++p) {
      const Agg& a = r.stats[s][p];
      sections << r.sections[s].name << ',' << r.policies[p] << ',' << r.seeds << ','
               << CsvNumber(a.mean.mean) << ',' << CsvNumber(a.mean.sd) << ','
               << CsvNumber(a.p50.mean) << ',' << CsvNumber(a.p99.mean) << ','
               << CsvNumber(a.p99.sd) << ',' << CsvNumber(a.hit.mean) << ',' << CsvNumber(a.failed)
               << ',' << CsvNumber(a.wrong_model) << '\n';
    }
  }
  const std::string& dir = options.out_dir;
  HEARSAY_RETURN_IF_ERROR(WriteFile(dir + "/runs.csv", csv.str()));
  HEARSAY_RETURN_IF_ERROR(WriteFile(dir + "/sections.csv", sections.str()));
  HEARSAY_RETURN_IF_ERROR(WritePlots(r));
  return WriteFile(dir + "/report.md", RenderReport(r));
}

}  // namespace hearsay::sim
