#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hearsay/sim/experiment_results.h"

namespace hearsay::sim {
namespace {

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

std::string Ms(double v) { return Fmt(v < 100 ? "%.2f" : "%.1f", v); }

const char* FactorTitle(const std::string& factor) {
  if (factor == "delay_ms") return "one-way network delay (ms)";
  if (factor == "zipf") return "Zipf exponent s of subject popularity";
  if (factor == "nodes") return "number of nodes";
  if (factor == "gossip_ms") return "gossip interval (ms)";
  if (factor == "capacity_tokens") return "KV cache capacity per node (tokens)";
  return "trace";
}

// A plotted metric's axis label, in words and units.
const char* MetricAxisTitle(Metric m) {
  switch (m) {
    case Metric::kMeanTtft:
      return "mean time to first token (ms)";
    case Metric::kP99Ttft:
      return "p99 time to first token (ms)";
    case Metric::kHitRate:
      return "token cache hit rate (cached / prompt tokens)";
    case Metric::kLoadCov:
      return "load imbalance (CoV of per-node prefill work)";
    default:
      return MetricName(m);
  }
}

// A plot's title: the metric against the factor, in words ("Mean time to first token by
// one-way network delay").
std::string PlotTitle(Metric m, const std::string& factor) {
  std::string metric = MetricAxisTitle(m);
  metric = metric.substr(0, metric.find(" ("));
  metric[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(metric[0])));
  std::string by = FactorTitle(factor);
  by = by.substr(0, by.find(" ("));
  return metric + " by " + by;
}

const char* kFactors[] = {"delay_ms", "zipf", "nodes", "gossip_ms", "capacity_tokens"};

struct TableMetric {
  Metric metric;
  const char* title;
  bool percent;
};
const TableMetric kTableMetrics[] = {
    {Metric::kMeanTtft, "mean TTFT (ms), mean ± sd over seeds", false},
    {Metric::kP99Ttft, "p99 TTFT (ms)", false},
    {Metric::kHitRate, "token cache hit rate (%)", true},
    {Metric::kLoadCov, "load CoV (stddev/mean of per-node prefill work)", false},
};

std::string Cell(const Stat& s, bool percent, bool with_sd) {
  if (percent) return Fmt("%.1f", 100 * s.mean);
  std::string out = Ms(s.mean);
  if (with_sd) out += " ± " + Ms(s.sd);
  return out;
}

std::string Verdict(std::optional<bool> pass) {
  if (!pass) return "n/a";
  return *pass ? "**PASS**" : "**MISS**";
}

std::optional<double> Get(const ExperimentResults& r, const std::string& factor, double level,
                          const std::string& policy, Metric m) {
  auto s = r.Find(factor, level, policy);
  if (!s) return std::nullopt;
  return s->metrics[static_cast<size_t>(m)].mean;
}

std::string Opt(std::optional<double> v) { return v ? Ms(*v) : "–"; }

void FactorTables(const ExperimentResults& r, const std::string& factor, std::ostream& out) {
  out << "### " << FactorTitle(factor) << "\n\n";
  for (const TableMetric& tm : kTableMetrics) {
    out << "*" << tm.title << "*\n\n| " << factor << " |";
    for (const auto& p : r.policies) out << ' ' << p << " |";
    out << "\n|---|";
    for (size_t i = 0; i < r.policies.size(); ++i) out << "---|";
    out << '\n';
    for (double level : r.Levels(factor)) {
      out << "| " << CsvNumber(level) << " |";
      for (const auto& p : r.policies) {
        auto s = r.Find(factor, level, p);
        out << ' '
            << (s ? Cell(s->metrics[static_cast<size_t>(tm.metric)], tm.percent,
                         tm.metric == Metric::kMeanTtft)
                  : "–")
            << " |";
      }
      out << '\n';
    }
    out << '\n';
  }
}

// Claims (1) and (2): paper against local, random and least-loaded across delay.
void DelayClaims(const ExperimentResults& r, std::ostream& out) {
  out << "### Claims 1 and 2: routing gain against network delay\n\n"
         "Gain = (best of local, random, least-loaded − paper) / best, on mean TTFT; positive "
         "means `paper` wins.\n\n"
         "| delay (ms) | paper | local | random | least-loaded | gain of paper | paper beats all "
         "three |\n|---|---|---|---|---|---|---|\n";
  std::optional<double> low_gain;
  std::optional<double> high_gain;
  std::optional<bool> claim1;
  for (double d : r.Levels("delay_ms")) {
    auto pa = Get(r, "delay_ms", d, "paper", Metric::kMeanTtft);
    auto lo = Get(r, "delay_ms", d, "local", Metric::kMeanTtft);
    auto ra = Get(r, "delay_ms", d, "random", Metric::kMeanTtft);
    auto ll = Get(r, "delay_ms", d, "least-loaded", Metric::kMeanTtft);
    std::optional<double> gain;
    std::optional<bool> beats;
    if (pa && lo && ra && ll) {
      const double best = std::min({*lo, *ra, *ll});
      gain = (best - *pa) / best;
      beats = *pa < best;
      if (d <= 1.0) {
        claim1 = claim1.value_or(true) && *beats;
        low_gain = low_gain ? std::max(*low_gain, *gain) : *gain;
      }
      high_gain = gain;  // Levels ascend: ends at the highest delay.
    }
    out << "| " << CsvNumber(d) << " | " << Opt(pa) << " | " << Opt(lo) << " | " << Opt(ra) << " | "
        << Opt(ll) << " | " << (gain ? Fmt("%+.1f%%", 100 * *gain) : "–") << " | "
        << (beats ? (*beats ? "yes" : "no") : "–") << " |\n";
  }
  out << "\n- Claim 1 (at delay ≤ 1 ms with skewed prefixes, `paper` beats local, random and "
         "least-loaded): "
      << (claim1 ? (*claim1 ? "**reproduced**" : "**refuted**") : "n/a") << ".\n";
  out << "- Claim 2 (at high delay the gain disappears or reverses): ";
  if (low_gain && high_gain) {
    const bool gone = *high_gain <= 0.02 || *high_gain < 0.5 * *low_gain;
    out << (gone ? "**reproduced**" : "**refuted**") << " (gain " << Fmt("%+.1f%%", 100 * *low_gain)
        << " at ≤ 1 ms, " << Fmt("%+.1f%%", 100 * *high_gain) << " at the highest delay).\n\n";
  } else {
    out << "n/a.\n\n";
  }
}

// Claim (3): affinity hotspots, in load CoV and p99, against least-loaded.
void HotspotClaim(const ExperimentResults& r, std::ostream& out) {
  out << "### Claim 3: affinity creates hotspots\n\n"
         "| zipf | paper load CoV | least-loaded load CoV | hearsay load CoV | paper p99 | "
         "least-loaded p99 | hearsay p99 |\n|---|---|---|---|---|---|---|\n";
  std::optional<bool> hot;
  for (double z : r.Levels("zipf")) {
    auto pc = Get(r, "zipf", z, "paper", Metric::kLoadCov);
    auto lc = Get(r, "zipf", z, "least-loaded", Metric::kLoadCov);
    auto hc = Get(r, "zipf", z, "hearsay", Metric::kLoadCov);
    auto pp = Get(r, "zipf", z, "paper", Metric::kP99Ttft);
    auto lp = Get(r, "zipf", z, "least-loaded", Metric::kP99Ttft);
    auto hp = Get(r, "zipf", z, "hearsay", Metric::kP99Ttft);
    auto cov = [](std::optional<double> v) { return v ? Fmt("%.3f", *v) : "–"; };
    out << "| " << CsvNumber(z) << " | " << cov(pc) << " | " << cov(lc) << " | " << cov(hc) << " | "
        << Opt(pp) << " | " << Opt(lp) << " | " << Opt(hp) << " |\n";
    if (z >= 1.0 && pc && lc && pp && lp) {
      hot = hot.value_or(true) && *pc > *lc && *pp > *lp;
    }
  }
  out << "\n- Claim 3 (at Zipf ≥ 1, `paper` has a higher load CoV and a higher p99 than "
         "least-loaded): "
      << (hot ? (*hot ? "**reproduced**" : "**refuted**") : "n/a") << ".\n\n";
}

// Claim (4): specialist drift against cache capacity.
void DriftClaim(const ExperimentResults& r, std::ostream& out) {
  out << "### Claim 4: eviction makes specialists drift\n\n"
         "Drift: the fraction of consecutive "
      << CsvNumber(kDriftWindowMs / 1000)
      << " s windows in which a subject's specialist (the node serving most of its requests) "
         "changes; share: the fraction of a subject's requests its specialist serves (1 / N = "
         "no specialization).\n\n"
         "| capacity (tokens) | paper drift | paper share | hearsay drift | hearsay share | "
         "least-loaded share |\n|---|---|---|---|---|---|\n";
  std::optional<double> small_drift, large_drift;
  for (double cap : r.Levels("capacity_tokens")) {
    auto pd = Get(r, "capacity_tokens", cap, "paper", Metric::kSpecialistDrift);
    auto ps = Get(r, "capacity_tokens", cap, "paper", Metric::kSpecialistShare);
    auto hd = Get(r, "capacity_tokens", cap, "hearsay", Metric::kSpecialistDrift);
    auto hs = Get(r, "capacity_tokens", cap, "hearsay", Metric::kSpecialistShare);
    auto ls = Get(r, "capacity_tokens", cap, "least-loaded", Metric::kSpecialistShare);
    auto f = [](std::optional<double> v) { return v ? Fmt("%.3f", *v) : "–"; };
    out << "| " << CsvNumber(cap) << " | " << f(pd) << " | " << f(ps) << " | " << f(hd) << " | "
        << f(hs) << " | " << f(ls) << " |\n";
    if (pd && !small_drift) small_drift = pd;
    if (pd) large_drift = pd;
  }
  std::optional<bool> drifts;
  if (small_drift && large_drift) drifts = *small_drift > *large_drift;
  out << "\n- Claim 4 (with less cache, `paper`'s specialists drift more): "
      << (drifts ? (*drifts ? "**reproduced**" : "**refuted**") : "n/a") << ".\n\n";
}

// hearsay's goals on one factor's levels; returns rows appended to `out`.
void GoalRows(const ExperimentResults& r, const std::string& factor, double level,
              const std::string& where, bool check_oracle, std::ostream& out) {
  auto h = Get(r, factor, level, "hearsay", Metric::kMeanTtft);
  if (check_oracle) {
    auto o = Get(r, factor, level, "oracle", Metric::kMeanTtft);
    std::optional<bool> pass;
    if (h && o) pass = *h <= 1.05 * *o;
    out << "| mean TTFT within 5% of oracle | " << where << " | " << Opt(h) << " | oracle "
        << Opt(o) << " (" << (h && o ? Fmt("%+.1f%%", 100 * (*h / *o - 1)) : "–") << ") | "
        << Verdict(pass) << " |\n";
  }
  auto lo = Get(r, factor, level, "local", Metric::kMeanTtft);
  auto ll = Get(r, factor, level, "least-loaded", Metric::kMeanTtft);
  std::optional<bool> pass;
  std::string ref = "–";
  if (h && lo && ll) {
    const double best = std::min(*lo, *ll);
    pass = *h <= 1.02 * best;
    ref = std::string(*lo <= *ll ? "local " : "least-loaded ") + Ms(best) + " (" +
          Fmt("%+.1f%%", 100 * (*h / best - 1)) + ")";
  }
  out << "| mean TTFT ≤ 1.02 × min(local, least-loaded) | " << where << " | " << Opt(h) << " | "
      << ref << " | " << Verdict(pass) << " |\n";
}

void Goals(const ExperimentResults& r, std::ostream& out) {
  out << "### hearsay's goals\n\n| goal | where | hearsay | reference | verdict |\n"
         "|---|---|---|---|---|\n";
  for (double d : r.Levels("delay_ms")) {
    GoalRows(r, "delay_ms", d, "delay " + CsvNumber(d) + " ms", d <= 1.0, out);
  }
  const std::vector<double> zl = r.Levels("zipf");
  for (double z : zl) {
    if (std::abs(z - 1.2) > 1e-9) continue;
    auto h = Get(r, "zipf", z, "hearsay", Metric::kP99Ttft);
    auto ll = Get(r, "zipf", z, "least-loaded", Metric::kP99Ttft);
    std::optional<bool> pass;
    if (h && ll) pass = *h <= 1.5 * *ll;
    out << "| p99 TTFT ≤ 1.5 × least-loaded | Zipf 1.2 | " << Opt(h) << " | least-loaded "
        << Opt(ll) << (h && ll ? " (" + Fmt("%.2f×", *h / *ll) + ")" : "") << " | " << Verdict(pass)
        << " |\n";
  }
  out << '\n';
}

void TraceSection(const ExperimentResults& r, std::ostream& out) {
  if (r.Levels("trace").empty()) return;
  out << "## Trace: " << std::filesystem::path(r.options.trace_path).filename().string()
      << "\n\nWorkload `trace` (Mooncake format), Poisson arrivals at the base rho, other "
         "knobs at the base point.\n\n| policy | mean TTFT (ms) | p50 | p99 | hit rate (%) | "
         "forwarded (%) | load CoV |\n|---|---|---|---|---|---|---|\n";
  for (const auto& p : r.policies) {
    auto s = r.Find("trace", 0, p);
    if (!s) continue;
    auto m = [&](Metric k) { return s->metrics[static_cast<size_t>(k)]; };
    out << "| " << p << " | " << Cell(m(Metric::kMeanTtft), false, true) << " | "
        << Ms(m(Metric::kP50Ttft).mean) << " | " << Ms(m(Metric::kP99Ttft).mean) << " | "
        << Fmt("%.1f", 100 * m(Metric::kHitRate).mean) << " | "
        << Fmt("%.1f", 100 * m(Metric::kForwardedFrac).mean) << " | "
        << Fmt("%.3f", m(Metric::kLoadCov).mean) << " |\n";
  }
  out << "\n| goal | where | hearsay | reference | verdict |\n|---|---|---|---|---|\n";
  GoalRows(r, "trace", 0, "trace, delay " + CsvNumber(r.base.delay_ms) + " ms",
           r.base.delay_ms <= 1.0, out);
  out << '\n';
}

std::string PlotCsvName(const std::string& factor, Metric m) {
  return "plot_" + factor + "_" + MetricName(m) + ".csv";
}

}  // namespace

const char* MetricName(Metric metric) {
  switch (metric) {
    case Metric::kMeanTtft:
      return "mean_ttft_ms";
    case Metric::kP50Ttft:
      return "p50_ttft_ms";
    case Metric::kP90Ttft:
      return "p90_ttft_ms";
    case Metric::kP99Ttft:
      return "p99_ttft_ms";
    case Metric::kMeanE2e:
      return "mean_e2e_ms";
    case Metric::kHitRate:
      return "hit_rate";
    case Metric::kForwardedFrac:
      return "forwarded_frac";
    case Metric::kLoadCov:
      return "load_cov";
    case Metric::kGossipBytes:
      return "gossip_bytes_per_node_s";
    case Metric::kSpecialistDrift:
      return "specialist_drift";
    case Metric::kSpecialistShare:
      return "specialist_share";
    case Metric::kCount:
      break;
  }
  return "?";
}

Stat StatOf(const std::vector<double>& values) {
  double sum = 0, sq = 0;
  for (double x : values) {
    sum += x;
    sq += x * x;
  }
  const double n = static_cast<double>(values.size());
  const double mean = n > 0 ? sum / n : 0;
  return {mean, n > 0 ? std::sqrt(std::max(0.0, sq / n - mean * mean)) : 0};
}

double MetricValue(const SimSummary& s, Metric metric) {
  switch (metric) {
    case Metric::kMeanTtft:
      return s.mean_ttft_ms;
    case Metric::kP50Ttft:
      return s.p50_ttft_ms;
    case Metric::kP90Ttft:
      return s.p90_ttft_ms;
    case Metric::kP99Ttft:
      return s.p99_ttft_ms;
    case Metric::kMeanE2e:
      return s.mean_e2e_ms;
    case Metric::kHitRate:
      return s.hit_rate;
    case Metric::kForwardedFrac:
      return s.forwarded_frac;
    case Metric::kLoadCov:
      return s.load_cov;
    case Metric::kGossipBytes:
      return s.gossip_bytes_per_node_s;
    case Metric::kSpecialistDrift:
      return s.specialist_drift;
    case Metric::kSpecialistShare:
      return s.specialist_share;
    case Metric::kCount:
      break;
  }
  return 0;
}

std::string CsvNumber(double value) { return Fmt("%.6g", value); }

std::optional<PointStats> ExperimentResults::Find(const std::string& factor, double level,
                                                  const std::string& policy) const {
  for (const PointStats& s : stats) {
    const ExperimentPoint& p = points[s.point];
    if (p.factor == factor && p.level == level && s.policy == policy) return s;
  }
  return std::nullopt;
}

std::vector<double> ExperimentResults::Levels(const std::string& factor) const {
  std::vector<double> out;
  for (const ExperimentPoint& p : points) {
    if (p.factor == factor) out.push_back(p.level);
  }
  return out;
}

std::string RenderReport(const ExperimentResults& r) {
  std::ostringstream out;
  const SimConfig& b = r.base;
  int seeds = r.stats.empty() ? 0 : r.stats.front().seeds;
  out << "# Paper reproduction: decentralized prefix-aware routing\n\n"
      << "Generated by `hearsay sim --experiment paper" << (r.options.quick ? " --quick" : "")
      << "`. Every number is a mean over " << seeds << " seed(s) (seeds " << r.options.base_seed
      << ".." << r.options.base_seed + static_cast<uint64_t>(std::max(seeds, 1)) - 1
      << "); runs.csv has every run, points.csv the mean and sd of every metric.\n\n"
      << "## Base point\n\nOne factor is swept at a time around: workload `" << b.workload
      << "` (57 subjects, ~500-token 5-shot prefixes, Zipf s = " << CsvNumber(b.zipf)
      << " over subjects), " << b.nodes << " nodes, one-way delay " << CsvNumber(b.delay_ms)
      << " ms (jitter " << CsvNumber(100 * b.delay_jitter) << "%), rho " << CsvNumber(b.rho)
      << ", gossip every " << CsvNumber(b.gossip_ms) << " ms, " << b.requests
      << " requests per run, engine `" << b.engine_preset << "`.\n\n"
      << "Cache capacity " << b.capacity_tokens
      << " tokens per node: the prefix working set is about 57 × 500 ≈ 28,500 tokens (plus "
         "in-flight suffixes), so one node holds roughly half of it, while the cluster ("
      << b.nodes << " × " << b.capacity_tokens
      << ") can hold all of it if nodes specialize. That is the regime where routing can pay.\n\n";

  out << "## The paper's claims\n\n";
  DelayClaims(r, out);
  HotspotClaim(r, out);
  DriftClaim(r, out);
  Goals(r, out);
  TraceSection(r, out);
  out << "## Sweeps\n\nPlots: `*.png` (drawn by `gnuplot plots.gp` from `plot_*.csv`).\n\n";
  for (const char* f : kFactors) {
    if (!r.Levels(f).empty()) FactorTables(r, f, out);
  }
  return out.str();
}

Status WriteExperimentOutputs(const ExperimentResults& r) {
  const std::string dir = r.options.out_dir;
  auto write = [&](const std::string& name, const std::string& text) -> Status {
    std::ofstream out(dir + "/" + name, std::ios::binary);
    if (!out) return InternalError("cannot write " + dir + "/" + name);
    out << text;
    return out.good() ? OkStatus() : InternalError("write failed: " + dir + "/" + name);
  };

  std::ostringstream points;
  points << "factor,level,policy,seeds";
  for (size_t m = 0; m < kMetricCount; ++m) {
    points << ',' << MetricName(static_cast<Metric>(m)) << ',' << MetricName(static_cast<Metric>(m))
           << "_sd";
  }
  points << '\n';
  for (const PointStats& s : r.stats) {
    const ExperimentPoint& p = r.points[s.point];
    points << p.factor << ',' << CsvNumber(p.level) << ',' << s.policy << ',' << s.seeds;
    for (const Stat& st : s.metrics) points << ',' << CsvNumber(st.mean) << ',' << CsvNumber(st.sd);
    points << '\n';
  }
  HEARSAY_RETURN_IF_ERROR(write("points.csv", points.str()));

  const Metric plotted[] = {Metric::kMeanTtft, Metric::kP99Ttft, Metric::kHitRate,
                            Metric::kLoadCov};
  std::ostringstream gp;
  gp << "# Draws the experiment's PNGs: run `gnuplot plots.gp` in this folder.\n"
        "set datafile separator ','\nset terminal pngcairo size 900,560 noenhanced\n"
        "set key outside right\nset grid\n";
  const int seeds = r.stats.empty() ? 0 : static_cast<int>(r.stats.front().seeds);
  for (const char* f : kFactors) {
    const std::vector<double> levels = r.Levels(f);
    // A sweep of one level (a --quick run's nodes and gossip interval) is a point, not a curve.
    if (levels.size() < 2) {
      if (!levels.empty()) gp << "# " << f << ": one level only, not plotted\n";
      continue;
    }
    for (Metric m : plotted) {
      // Per policy: its mean and its standard deviation over seeds (the error bar).
      std::ostringstream csv;
      csv << f;
      for (const auto& p : r.policies) csv << ',' << p << ',' << p << "_sd";
      csv << '\n';
      for (double level : levels) {
        csv << CsvNumber(level);
        for (const auto& p : r.policies) {
          auto s = r.Find(f, level, p);
          csv << ',' << (s ? CsvNumber(s->metrics[static_cast<size_t>(m)].mean) : "NaN") << ','
              << (s ? CsvNumber(s->metrics[static_cast<size_t>(m)].sd) : "NaN");
        }
        csv << '\n';
      }
      HEARSAY_RETURN_IF_ERROR(write(PlotCsvName(f, m), csv.str()));
      const bool logx = std::string(f) != "zipf" && levels.size() > 1 && levels.front() > 0;
      gp << "set output '" << f << "_" << MetricName(m) << ".png'\n"
         << (logx ? "set logscale x\n" : "unset logscale x\n")
         << (m == Metric::kMeanTtft || m == Metric::kP99Ttft ? "set logscale y\n"
                                                             : "unset logscale y\n")
         << "set xlabel '" << FactorTitle(f) << "'\nset ylabel '" << MetricAxisTitle(m) << "'\n"
         << "set title '" << PlotTitle(m, f) << " (mean of " << seeds
         << " seed(s); bars: ± 1 sd over seeds)'\n"
         << "set key title 'routing policy'\n"
         << "plot for [i=0:" << r.policies.size() - 1 << "] '" << PlotCsvName(f, m)
         << "' using 1:(column(2+2*i)):(column(3+2*i)) with yerrorlines title "
            "columnheader(2+2*i)\n";
    }
  }
  HEARSAY_RETURN_IF_ERROR(write("plots.gp", gp.str()));
  return write("report.md", RenderReport(r));
}

}  // namespace hearsay::sim
