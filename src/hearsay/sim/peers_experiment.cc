#include "hearsay/sim/peers_experiment.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "hearsay/sim/experiment_results.h"
#include "hearsay/sim/parallel_runs.h"

namespace hearsay::sim {
namespace {

constexpr int kReplicas = 3;
// The largest cache an engine gets: 2^20 tokens, ~130 GB of KV for Llama-3-8B (two H100s' worth).
// Only the Mooncake trace, with prompts of 15k tokens on average, reaches it.
constexpr uint64_t kMaxCacheTokens = uint64_t{1} << 20;
constexpr double kGoalDelayMs = 1.0;

int SeedsOf(const PeersOptions& o) { return o.seeds > 0 ? o.seeds : (o.quick ? 1 : 3); }
uint64_t PerNodeOf(const PeersOptions& o) {
  return o.requests_per_node > 0 ? o.requests_per_node : (o.quick ? 40 : 150);
}

// The figures of one run, in column order.
enum M : size_t {
  kMean,
  kP50,
  kP99,
  kHit,
  kCov,
  kFwd,
  kMissedReuse,
  kTtftMissed,
  kTtftReused,
  kMetrics
};
constexpr const char* kMetricNames[kMetrics] = {
    "mean_ttft_ms",   "p50_ttft_ms",       "p99_ttft_ms",          "hit_rate",     "load_cov",
    "forwarded_frac", "missed_reuse_frac", "ttft_missed_reuse_ms", "ttft_other_ms"};
using Figures = std::array<double, kMetrics>;

// A run's figures; the last three from its per-request records: a request "misses reuse" when
// it had at least one block of shareable prefix and its engine found less than half of it cached.
Figures FiguresOf(const SimSummary& s) {
  Figures f{};
  f[kMean] = s.mean_ttft_ms;
  f[kP50] = s.p50_ttft_ms;
  f[kP99] = s.p99_ttft_ms;
  f[kHit] = s.hit_rate;
  f[kCov] = s.load_cov;
  f[kFwd] = s.forwarded_frac;
  double missed = 0, missed_ttft = 0, other = 0, other_ttft = 0;
  for (const RequestRecord& r : s.records) {
    if (r.ttft_ms < 0) continue;
    const bool miss =
        r.shareable_prefix_tokens >= 16 && 2.0 * r.cached_tokens < r.shareable_prefix_tokens;
    (miss ? missed : other) += 1;
    (miss ? missed_ttft : other_ttft) += r.ttft_ms;
  }
  const double n = missed + other;
  f[kMissedReuse] = n > 0 ? missed / n : 0;
  f[kTtftMissed] = missed > 0 ? missed_ttft / missed : 0;
  f[kTtftReused] = other > 0 ? other_ttft / other : 0;
  return f;
}

struct Agg {
  std::array<Stat, kMetrics> m{};
  int seeds = 0;
};

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

std::string PointLabel(const PeersPoint& p) {
  return p.workload + ", " + std::to_string(p.nodes) + " nodes, " + CsvNumber(p.delay_ms) +
         " ms, " + p.pressure + " pressure";
}

// The central routers the goals compare hearsay with: not hearsay, not the cache-blind
// reference and not hearsay's own bound.
bool IsPeer(const PeerSystem& s) {
  return s.label != "hearsay" && s.policy != "round-robin" && s.policy != "oracle";
}

std::string PanelKey(const PeersPoint& p) {
  return p.workload + "_n" + std::to_string(p.nodes) + "_" + p.pressure;
}

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) return InternalError("cannot write " + path);
  out << text;
  return out.good() ? OkStatus() : InternalError("write failed: " + path);
}

// Everything the writers need.
struct Results {
  PeersOptions options;
  std::vector<PeersPoint> points;
  std::vector<PeerSystem> systems;
  // stats[point][system]; seeds == 0 when that system does not run at that point.
  std::vector<std::vector<Agg>> stats;
  int seeds = 0;

  const Agg* At(size_t point, const std::string& label) const {
    for (size_t s = 0; s < systems.size(); ++s) {
      if (systems[s].label == label) return stats[point][s].seeds > 0 ? &stats[point][s] : nullptr;
    }
    return nullptr;
  }
};

std::string MeanSd(const Agg& a, size_t m, const char* fmt) {
  return Fmt(fmt, a.m[m].mean) + " ± " + Fmt(fmt, a.m[m].sd);
}

// hearsay's own bound: the oracle prices members as hearsay does, with exact, instant views.
// Where it too trails a peer, the miss is the price hearsay minimizes, not what gossip delays.
void RenderOracleBound(const Results& r, const std::vector<const PeerSystem*>& central,
                       std::ostream& out) {
  struct Met {
    int mean = 0, p99 = 0;
  };
  Met hearsay, oracle;
  int pairs = 0, mean_both = 0, p99_both = 0;
  std::ostringstream rows;
  for (size_t p = 0; p < r.points.size(); ++p) {
    const Agg* h = r.At(p, "hearsay");
    const Agg* o = r.At(p, "oracle");
    if (h == nullptr || o == nullptr || r.points[p].delay_ms > kGoalDelayMs) continue;
    double best_mean = 0, best_p99 = 0;
    for (const PeerSystem* s : central) {
      const Agg* a = r.At(p, s->label);
      if (a == nullptr) continue;
      const bool hm = h->m[kMean].mean > a->m[kMean].mean, hp = h->m[kP99].mean > a->m[kP99].mean;
      const bool om = o->m[kMean].mean > a->m[kMean].mean, op = o->m[kP99].mean > a->m[kP99].mean;
      ++pairs;
      hearsay.mean += hm ? 0 : 1;
      hearsay.p99 += hp ? 0 : 1;
      oracle.mean += om ? 0 : 1;
      oracle.p99 += op ? 0 : 1;
      mean_both += hm && om ? 1 : 0;
      p99_both += hp && op ? 1 : 0;
      if (best_mean == 0 || a->m[kMean].mean < best_mean) best_mean = a->m[kMean].mean;
      if (best_p99 == 0 || a->m[kP99].mean < best_p99) best_p99 = a->m[kP99].mean;
    }
    if (best_mean == 0) continue;
    rows << "| " << PointLabel(r.points[p]) << " | "
         << Fmt("%.2f", h->m[kMean].mean / o->m[kMean].mean) << " ("
         << Fmt("%.2f", h->m[kP99].mean / o->m[kP99].mean) << ") | "
         << Fmt("%.2f", o->m[kMean].mean / best_mean) << " ("
         << Fmt("%.2f", o->m[kP99].mean / best_p99) << ") |\n";
  }
  if (pairs == 0) return;
  out << "\n## hearsay's own bound: the oracle\n\n"
      << "`oracle` prices every member as hearsay does (expected time to first token) with "
         "exact, instant knowledge of every cache and queue: hearsay without gossip's delay. "
         "Where the oracle too is slower than a peer, the miss comes from the price minimized "
         "(each request's own time to first token), not from what a node cannot see.\n\n"
      << "| against the central peers, delay ≤ 1 ms | mean TTFT ≤ 1.0× | p99 TTFT ≤ 1.0× "
         "|\n|---|---|---|\n"
      << "| hearsay | " << hearsay.mean << " / " << pairs << " | " << hearsay.p99 << " / " << pairs
      << " |\n"
      << "| oracle | " << oracle.mean << " / " << pairs << " | " << oracle.p99 << " / " << pairs
      << " |\n\n"
      << "Of hearsay's " << pairs - hearsay.mean << " mean misses the oracle misses " << mean_both
      << " too; of its " << pairs - hearsay.p99 << " p99 misses, " << p99_both << ".\n\n"
      << "| point | hearsay / oracle, mean (p99) | oracle / the fastest central peer, mean "
         "(p99: the lowest) |\n|---|---|---|\n"
      << rows.str();
}

std::string RenderReport(const Results& r) {
  std::ostringstream out;
  const PeersOptions& o = r.options;
  out << "# hearsay beside the central routers (peers experiment)\n\n"
      << "Generated by `hearsay sim --experiment peers --out DIR" << (o.quick ? " --quick" : "")
      << "` (" << r.seeds << " seed" << (r.seeds == 1 ? "" : "s") << " per point, " << PerNodeOf(o)
      << " requests per node per run, engine `h100-llama3-8b`, rho 0.7, gossip "
      << "200 ms). Every system runs on the same requests, seeds and engines. Figures are means "
      << "over seeds, ± the standard deviation over seeds.\n\n";

  out << "## Systems\n\n| system | policy | where it runs |\n|---|---|---|\n";
  for (const PeerSystem& s : r.systems) {
    out << "| " << s.label << " | `" << s.policy << "` | ";
    if (s.policy == "oracle") {
      out << "on every node, with exact and instant views (hearsay's bound; simulator only)";
    } else if (s.routers == 0) {
      out << "on every node (each request enters at a node, which routes it)";
    } else if (s.routers == 1) {
      out << "one central router";
    } else {
      out << s.routers << " router replicas behind a load balancer, each with its own view"
          << (s.replica_sync ? ", replica sync on" : "");
    }
    out << " |\n";
  }

  out << "\n## Cache sizes\n\nThe reusable working set is the distinct prompt blocks that occur "
         "in at least two requests of the run. Low pressure: each engine's cache holds all of it, "
         "up to 2^20 tokens (~130 GB of KV for Llama-3-8B; only the trace reaches the cap); high: "
         "a quarter of the low-pressure cache. Neither is less than 1.25 × the largest "
         "request.\n\n"
      << "| workload | nodes | reusable working set (tokens) | low pressure cache | high "
         "pressure cache |\n|---|---|---|---|---|\n";
  std::map<std::string, std::pair<uint64_t, uint64_t>> caps;
  std::map<std::string, uint64_t> ws;
  std::vector<std::string> order;
  for (const PeersPoint& p : r.points) {
    const std::string k = p.workload + "|" + std::to_string(p.nodes);
    if (!ws.count(k)) order.push_back(k);
    ws[k] = p.reused_tokens;
    (p.pressure == "low" ? caps[k].first : caps[k].second) = p.config.capacity_tokens;
  }
  for (const std::string& k : order) {
    const size_t bar = k.find('|');
    out << "| " << k.substr(0, bar) << " | " << k.substr(bar + 1) << " | " << ws[k] << " | "
        << caps[k].first << " | " << caps[k].second << " |\n";
  }

  // --- Goals.
  std::vector<const PeerSystem*> central, replicas;
  for (const PeerSystem& s : r.systems) {
    if (IsPeer(s)) (s.multi_replica() ? replicas : central).push_back(&s);
  }
  struct Miss {
    double ratio;
    std::string text;
  };
  int pairs = 0, mean_ok = 0, p99_ok = 0, rep_pairs = 0, rep_ok = 0;
  std::vector<Miss> mean_miss, p99_miss, rep_miss;
  for (size_t p = 0; p < r.points.size(); ++p) {
    const Agg* h = r.At(p, "hearsay");
    if (h == nullptr) continue;
    const PeersPoint& pt = r.points[p];
    for (const PeerSystem* s : central) {
      const Agg* a = r.At(p, s->label);
      if (a == nullptr || pt.delay_ms > kGoalDelayMs) continue;
      ++pairs;
      const double rm = h->m[kMean].mean / a->m[kMean].mean;
      const double rp = h->m[kP99].mean / a->m[kP99].mean;
      if (rm <= 1.0) {
        ++mean_ok;
      } else {
        mean_miss.push_back({rm, PointLabel(pt) + " vs " + s->label});
      }
      if (rp <= 1.0) {
        ++p99_ok;
      } else {
        p99_miss.push_back({rp, PointLabel(pt) + " vs " + s->label});
      }
    }
    for (const PeerSystem* s : replicas) {
      const Agg* a = r.At(p, s->label);
      if (a == nullptr) continue;
      ++rep_pairs;
      const double rm = h->m[kMean].mean / a->m[kMean].mean;
      const double rp = h->m[kP99].mean / a->m[kP99].mean;
      if (rm < 1.0 && rp < 1.0) {
        ++rep_ok;
      } else {
        rep_miss.push_back({std::max(rm, rp), PointLabel(pt) + " vs " + s->label + " (mean " +
                                                  Fmt("%.3f", rm) + "×, p99 " + Fmt("%.3f", rp) +
                                                  "×)"});
      }
    }
  }
  auto list = [&](std::vector<Miss>& v, const char* what) {
    std::sort(v.begin(), v.end(), [](const Miss& a, const Miss& b) { return a.ratio > b.ratio; });
    if (v.empty()) return;
    out << "\n" << what << " (worst first";
    if (v.size() > 15) out << "; the 15 worst of " << v.size();
    out << "):\n\n";
    for (size_t i = 0; i < v.size() && i < 15; ++i) {
      out << "- " << Fmt("%.3f", v[i].ratio) << "×: " << v[i].text << "\n";
    }
  };
  out << "\n## Goals\n\n| goal | met | verdict |\n|---|---|---|\n"
      << "| hearsay ≤ 1.0× the mean TTFT of every central peer, delay ≤ 1 ms | " << mean_ok << " / "
      << pairs << " | " << (mean_ok == pairs ? "**PASS**" : "**MISS**") << " |\n"
      << "| hearsay ≤ 1.0× the p99 TTFT of every central peer, delay ≤ 1 ms | " << p99_ok << " / "
      << pairs << " | " << (p99_ok == pairs ? "**PASS**" : "**MISS**") << " |\n"
      << "| hearsay strictly better (mean and p99) than every multi-replica form, 1 ms | " << rep_ok
      << " / " << rep_pairs << " | " << (rep_ok == rep_pairs ? "**PASS**" : "**MISS**") << " |\n";
  list(mean_miss, "Mean TTFT misses");
  list(p99_miss, "p99 TTFT misses");
  list(rep_miss, "Multi-replica misses");
  RenderOracleBound(r, central, out);

  // --- Ratio tables.
  auto ratio_table = [&](const std::vector<const PeerSystem*>& peers, auto keep,
                         const std::string& title) {
    if (std::none_of(r.points.begin(), r.points.end(), keep)) return;
    out << "\n### " << title << "\n\nhearsay's mean TTFT / the peer's (p99 ratio in "
        << "parentheses); below 1 means hearsay is faster.\n\n| point |";
    for (const PeerSystem* s : peers) out << " " << s->label << " |";
    out << "\n|---|";
    for (size_t i = 0; i < peers.size(); ++i) out << "---|";
    out << "\n";
    for (size_t p = 0; p < r.points.size(); ++p) {
      if (!keep(r.points[p])) continue;
      const Agg* h = r.At(p, "hearsay");
      if (h == nullptr) continue;
      out << "| " << PointLabel(r.points[p]) << " |";
      for (const PeerSystem* s : peers) {
        const Agg* a = r.At(p, s->label);
        if (a == nullptr) {
          out << " – |";
          continue;
        }
        out << " " << Fmt("%.2f", h->m[kMean].mean / a->m[kMean].mean) << " ("
            << Fmt("%.2f", h->m[kP99].mean / a->m[kP99].mean) << ") |";
      }
      out << "\n";
    }
  };
  out << "\n## Ratio tables\n";
  ratio_table(
      central, [](const PeersPoint& p) { return p.delay_ms <= kGoalDelayMs; },
      "hearsay / central peers, delay ≤ 1 ms");
  ratio_table(
      central, [](const PeersPoint& p) { return p.delay_ms > kGoalDelayMs; },
      "hearsay / central peers, delay 5 ms");
  ratio_table(
      replicas, [](const PeersPoint& p) { return p.delay_ms == kGoalDelayMs; },
      "hearsay / multi-replica forms, 1 ms");

  // --- Sanity.
  out << "\n## Sanity: the peers' published directions\n\n"
      << "Precise (KV events) against approximate (own decisions) routing at 1 ms: the "
         "approximate router's mean TTFT and hit rate relative to the precise one's. The peers "
         "report that precise routing wins most under cache pressure and about ties without "
         "it.\n\n| point | pressure | dynamo-kv-approx / dynamo-kv mean TTFT | hit rate "
         "(approx, precise) | sgl-cache-aware / llmd-precise mean TTFT | hit rate (sgl, llm-d) "
         "|\n|---|---|---|---|---|---|\n";
  double gap[2][2] = {{0, 0}, {0, 0}};  // [pressure high?][pair]
  int gap_n[2] = {0, 0};
  for (size_t p = 0; p < r.points.size(); ++p) {
    const PeersPoint& pt = r.points[p];
    if (pt.delay_ms != kGoalDelayMs) continue;
    const Agg* dx = r.At(p, "dynamo-kv");
    const Agg* da = r.At(p, "dynamo-kv-approx");
    const Agg* lp = r.At(p, "llmd-precise");
    const Agg* sg = r.At(p, "sgl-cache-aware");
    if (!dx || !da || !lp || !sg) continue;
    const double r1 = da->m[kMean].mean / dx->m[kMean].mean;
    const double r2 = sg->m[kMean].mean / lp->m[kMean].mean;
    const int hi = pt.pressure == "high" ? 1 : 0;
    gap[hi][0] += r1;
    gap[hi][1] += r2;
    ++gap_n[hi];
    out << "| " << pt.workload << ", " << pt.nodes << " nodes | " << pt.pressure << " | "
        << Fmt("%.3f", r1) << " | " << Fmt("%.3f", da->m[kHit].mean) << ", "
        << Fmt("%.3f", dx->m[kHit].mean) << " | " << Fmt("%.3f", r2) << " | "
        << Fmt("%.3f", sg->m[kHit].mean) << ", " << Fmt("%.3f", lp->m[kHit].mean) << " |\n";
  }
  if (gap_n[0] > 0 && gap_n[1] > 0) {
    const double lo0 = gap[0][0] / gap_n[0], hi0 = gap[1][0] / gap_n[1];
    const double lo1 = gap[0][1] / gap_n[0], hi1 = gap[1][1] / gap_n[1];
    out << "\nMean over points: dynamo-kv-approx / dynamo-kv is " << Fmt("%.3f", lo0)
        << " at low pressure and " << Fmt("%.3f", hi0)
        << " at high pressure: " << (hi0 > lo0 ? "**reproduced**" : "**not reproduced**")
        << " (approximate falls further behind under pressure). sgl-cache-aware / llmd-precise: "
        << Fmt("%.3f", lo1) << " and " << Fmt("%.3f", hi1) << ": "
        << (hi1 > lo1 ? "**reproduced**" : "**not reproduced**") << ".\n";
  }
  out << "\nRouting on cache against round-robin, at 1 ms (hit rate; mean TTFT ratio to "
         "round-robin):\n\n| point |";
  const std::vector<std::string> aware = {"sgl-cache-aware", "dynamo-kv", "dynamo-kv-approx",
                                          "llmd-precise", "hearsay"};
  for (const std::string& s : aware) out << " " << s << " |";
  out << " round-robin hit rate |\n|---|";
  for (size_t i = 0; i <= aware.size(); ++i) out << "---|";
  out << "\n";
  int beat = 0, total = 0;
  for (size_t p = 0; p < r.points.size(); ++p) {
    const PeersPoint& pt = r.points[p];
    const Agg* rr = r.At(p, "round-robin");
    if (pt.delay_ms != kGoalDelayMs || rr == nullptr) continue;
    out << "| " << pt.workload << ", " << pt.nodes << " nodes, " << pt.pressure << " |";
    for (const std::string& s : aware) {
      const Agg* a = r.At(p, s);
      if (a == nullptr) {
        out << " – |";
        continue;
      }
      ++total;
      beat += a->m[kHit].mean > rr->m[kHit].mean ? 1 : 0;
      out << " " << Fmt("%.3f", a->m[kHit].mean) << "; "
          << Fmt("%.2f", a->m[kMean].mean / rr->m[kMean].mean) << " |";
    }
    out << " " << Fmt("%.3f", rr->m[kHit].mean) << " |\n";
  }
  out << "\nA higher hit rate than round-robin in " << beat << " of " << total
      << " cases: " << (beat == total ? "**reproduced**" : "**partly reproduced**") << ".\n";

  // --- Per-point tables at 1 ms.
  out << "\n## Every system at 1 ms\n\nmissed reuse: the share of requests with a shareable "
         "prefix whose engine found less than half of it cached; their mean TTFT beside it.\n";
  for (size_t p = 0; p < r.points.size(); ++p) {
    const PeersPoint& pt = r.points[p];
    if (pt.delay_ms != kGoalDelayMs) continue;
    out << "\n### " << PointLabel(pt) << " (cache " << pt.config.capacity_tokens
        << " tokens)\n\n| system | mean TTFT ms | p50 ms | p99 TTFT ms | hit rate | load CoV | "
           "forwarded | missed reuse | TTFT of misses ms "
           "|\n|---|---|---|---|---|---|---|---|---|\n";
    for (size_t s = 0; s < r.systems.size(); ++s) {
      const Agg& a = r.stats[p][s];
      if (a.seeds == 0) continue;
      out << "| " << r.systems[s].label << " | " << MeanSd(a, kMean, "%.2f") << " | "
          << Fmt("%.2f", a.m[kP50].mean) << " | " << MeanSd(a, kP99, "%.1f") << " | "
          << Fmt("%.3f", a.m[kHit].mean) << " | " << Fmt("%.3f", a.m[kCov].mean) << " | "
          << Fmt("%.3f", a.m[kFwd].mean) << " | " << Fmt("%.3f", a.m[kMissedReuse].mean) << " | "
          << Fmt("%.1f", a.m[kTtftMissed].mean) << " |\n";
    }
  }
  return out.str();
}

Status WritePlots(const Results& r) {
  const std::string& dir = r.options.out_dir;
  // Systems drawn against delay: those that run at every delay.
  std::vector<size_t> lines;
  for (size_t s = 0; s < r.systems.size(); ++s) {
    if (!r.systems[s].multi_replica()) lines.push_back(s);
  }
  std::vector<std::string> panels;
  std::map<std::string, std::vector<size_t>> panel_points;
  for (size_t p = 0; p < r.points.size(); ++p) {
    const std::string k = PanelKey(r.points[p]);
    if (!panel_points.count(k)) panels.push_back(k);
    panel_points[k].push_back(p);
  }
  for (const std::string& k : panels) {
    std::ostringstream csv;
    csv << "delay_ms";
    for (size_t s : lines) {
      const std::string& l = r.systems[s].label;
      csv << ',' << l << "_mean," << l << "_mean_sd," << l << "_p99," << l << "_p99_sd";
    }
    csv << '\n';
    for (size_t p : panel_points[k]) {
      csv << CsvNumber(r.points[p].delay_ms);
      for (size_t s : lines) {
        const Agg& a = r.stats[p][s];
        csv << ',' << CsvNumber(a.m[kMean].mean) << ',' << CsvNumber(a.m[kMean].sd) << ','
            << CsvNumber(a.m[kP99].mean) << ',' << CsvNumber(a.m[kP99].sd);
      }
      csv << '\n';
    }
    HEARSAY_RETURN_IF_ERROR(WriteFile(dir + "/plot_" + k + ".csv", csv.str()));
  }
  // Multi-replica forms at 1 ms: one bar group per (workload, nodes, pressure).
  std::vector<size_t> bars;
  for (size_t s = 0; s < r.systems.size(); ++s) {
    if (r.systems[s].label == "hearsay" || r.systems[s].multi_replica()) bars.push_back(s);
  }
  std::ostringstream rep;
  rep << "point";
  for (size_t s : bars) rep << ',' << r.systems[s].label << ',' << r.systems[s].label << "_sd";
  rep << '\n';
  for (size_t p = 0; p < r.points.size(); ++p) {
    const PeersPoint& pt = r.points[p];
    if (pt.delay_ms != kGoalDelayMs) continue;
    rep << pt.workload << "/" << pt.nodes << "n/" << pt.pressure;
    for (size_t s : bars) {
      const Agg& a = r.stats[p][s];
      rep << ',' << CsvNumber(a.m[kMean].mean) << ',' << CsvNumber(a.m[kMean].sd);
    }
    rep << '\n';
  }
  HEARSAY_RETURN_IF_ERROR(WriteFile(dir + "/plot_replicas.csv", rep.str()));

  std::ostringstream gp;
  gp << "# Draws the peers experiment's PNGs: run `gnuplot plots.gp` in this folder.\n"
        "set datafile separator ','\nset grid\nset key top left font ',8'\n"
        "set logscale x\nset logscale y\nset xtics (0.1, 1, 5)\n";
  std::vector<std::string> workloads;
  std::vector<int> nodes;
  for (const PeersPoint& p : r.points) {
    if (std::find(workloads.begin(), workloads.end(), p.workload) == workloads.end()) {
      workloads.push_back(p.workload);
    }
    if (std::find(nodes.begin(), nodes.end(), p.nodes) == nodes.end()) nodes.push_back(p.nodes);
  }
  const char* pressures[] = {"low", "high"};
  const char* pressure_text[] = {"low cache pressure (cache = reusable working set)",
                                 "high cache pressure (cache = 1/4 of the working set)"};
  for (int metric = 0; metric < 2; ++metric) {
    const char* mname = metric == 0 ? "mean" : "p99";
    const char* mtitle = metric == 0 ? "Mean TTFT" : "p99 TTFT";
    for (int pr = 0; pr < 2; ++pr) {
      gp << "set terminal pngcairo size " << 380 * workloads.size() << ","
         << 60 + 380 * nodes.size() << " noenhanced\nset output '" << mname << "_ttft_"
         << pressures[pr] << ".png'\n"
         << "set multiplot layout " << nodes.size() << "," << workloads.size() << " title \""
         << mtitle << " vs one-way delay, " << pressure_text[pr]
         << "\\nerror bars: stddev over seeds\" font ',12'\n";
      for (int n : nodes) {
        for (const std::string& w : workloads) {
          const std::string k = w + "_n" + std::to_string(n) + "_" + pressures[pr];
          if (!panel_points.count(k)) continue;
          gp << "set title '" << w << ", " << n << " nodes'\nset xlabel 'one-way delay (ms)'\n"
             << "set ylabel '" << mtitle << " (ms)'\nplot ";
          for (size_t i = 0; i < lines.size(); ++i) {
            const size_t col = 2 + 4 * i + (metric == 0 ? 0 : 2);
            gp << (i ? ", " : "") << "'plot_" << k << ".csv' using 1:" << col << ":" << col + 1
               << " with yerrorlines title '" << r.systems[lines[i]].label << "'";
          }
          gp << "\n";
        }
      }
      gp << "unset multiplot\n";
    }
  }
  // Bars at explicit positions (group g, bar i at g × (bars + 1) + i), on a log scale: the trace's
  // TTFTs are ~100× the others'.
  const size_t nb = bars.size();
  gp << "unset logscale\nset logscale y\nset yrange [5:*]\nset datafile columnheaders\n"
        "unset xtics\nset xtics rotate by -30 font ',9'\nset offsets 1, 1, 0, 0\n"
        "set terminal pngcairo size 1500,650 noenhanced\n"
        "set output 'replicas_mean_ttft.png'\n"
        "set title 'Mean TTFT at 1 ms one-way delay: hearsay against the peers with 3 router "
        "replicas (log scale); error bars: stddev over seeds'\n"
        "set boxwidth 0.9\nset style fill solid 0.6 border -1\nset key top left\n"
        "set xlabel 'workload / nodes / cache pressure'\nset ylabel 'mean TTFT (ms)'\nplot "
     << "'plot_replicas.csv' using ($0*" << nb + 1 << "+" << CsvNumber((nb - 1) / 2.0)
     << "):(NaN):xtic(1) notitle";
  for (size_t i = 0; i < nb; ++i) {
    gp << ", 'plot_replicas.csv' using ($0*" << nb + 1 << "+" << i << "):" << 2 + 2 * i << ":"
       << 3 + 2 * i << " with boxerrorbars title '" << r.systems[bars[i]].label << "'";
  }
  gp << "\n";
  return WriteFile(dir + "/plots.gp", gp.str());
}

}  // namespace

std::vector<PeerSystem> PeerSystems() {
  std::vector<PeerSystem> s = {{"hearsay", "hearsay", 0, false},
                               {"oracle", "oracle", 0, false},
                               {"round-robin", "round-robin", 1, false}};
  const char* peers[] = {"sgl-cache-aware", "dynamo-kv", "dynamo-kv-approx", "llmd-precise"};
  for (const char* p : peers) s.push_back({p, p, 1, false});
  for (const char* p : peers) {
    s.push_back({std::string(p) + "/" + std::to_string(kReplicas), p, kReplicas, false});
    if (std::string(p) == "dynamo-kv") {
      s.push_back({std::string(p) + "/" + std::to_string(kReplicas) + "+sync", p, kReplicas, true});
    }
  }
  return s;
}

bool RunsAt(const PeerSystem& system, const PeersPoint& point) {
  return !system.multi_replica() || point.delay_ms == kGoalDelayMs;
}

Result<std::vector<PeersPoint>> PeersGrid(const PeersOptions& o) {
  struct Workload {
    std::string label;
    std::string kind;
    double zipf;
  };
  std::vector<Workload> workloads;
  if (o.quick) {
    workloads = {{"mmlu-z1", "mmlu", 1.0}, {"chat", "chat", 1.0}};
  } else {
    workloads = {{"mmlu-z0.8", "mmlu", 0.8}, {"mmlu-z1", "mmlu", 1.0}, {"mmlu-z1.2", "mmlu", 1.2}};
    if (!o.trace_path.empty()) workloads.push_back({"trace", "trace", 1.0});
    workloads.push_back({"chat", "chat", 1.0});
  }
  const std::vector<int> nodes = o.quick ? std::vector<int>{8} : std::vector<int>{8, 32};
  const std::vector<double> delays =
      o.quick ? std::vector<double>{1} : std::vector<double>{0.1, 1, 5};
  std::vector<PeersPoint> points;
  for (const Workload& w : workloads) {
    for (int n : nodes) {
      // The trace's 15k-token prompts make a 32-node run ~20× as slow as an MMLU one: the trace
      // runs at 8 nodes only, which keeps the whole grid near 10 minutes on 2 cores.
      if (w.kind == "trace" && n > 8) continue;
      SimConfig c;
      c.workload = w.kind;
      c.zipf = w.zipf;
      c.nodes = n;
      c.rho = 0.7;
      c.gossip_ms = 200;
      c.requests = PerNodeOf(o) * static_cast<uint64_t>(n);
      c.seed = o.base_seed;
      c.record_requests = true;
      if (w.kind == "trace") {
        c.trace_path = o.trace_path;
        c.arrivals = "poisson";
      }
      HEARSAY_ASSIGN_OR_RETURN(WorkloadFootprint f, MeasureWorkload(c));
      const uint64_t floor =
          std::max<uint64_t>(1024, f.max_request_tokens + f.max_request_tokens / 4);
      const uint64_t low = std::max(floor, std::min(f.reused_tokens, kMaxCacheTokens));
      for (const char* pressure : {"low", "high"}) {
        const uint64_t want = std::string(pressure) == "low" ? low : low / 4;
        for (double d : delays) {
          PeersPoint p;
          p.workload = w.label;
          p.nodes = n;
          p.delay_ms = d;
          p.pressure = pressure;
          p.reused_tokens = f.reused_tokens;
          p.config = c;
          p.config.delay_ms = d;
          p.config.capacity_tokens = std::max(floor, want);
          points.push_back(std::move(p));
        }
      }
    }
  }
  return points;
}

Status RunPeersExperiment(const PeersOptions& options, const SimRunFn& run,
                          const ExperimentProgressFn& progress) {
  HEARSAY_RETURN_IF_ERROR(
      PrepareRuns(options.out_dir, options.seeds, options.jobs, static_cast<bool>(run)));

  Results r;
  r.options = options;
  HEARSAY_ASSIGN_OR_RETURN(r.points, PeersGrid(options));
  r.systems = PeerSystems();
  r.seeds = SeedsOf(options);

  struct Run {
    size_t point, system;
    SimConfig config;
  };
  std::vector<Run> runs;
  for (size_t p = 0; p < r.points.size(); ++p) {
    for (size_t s = 0; s < r.systems.size(); ++s) {
      if (!RunsAt(r.systems[s], r.points[p])) continue;
      for (int k = 0; k < r.seeds; ++k) {
        SimConfig c = r.points[p].config;
        c.policy = r.systems[s].policy;
        c.routers = r.systems[s].routers;
        c.replica_sync = r.systems[s].replica_sync;
        c.seed = options.base_seed + static_cast<uint64_t>(k);
        runs.push_back({p, s, std::move(c)});
      }
    }
  }
  std::vector<Figures> figures(runs.size());
  const std::optional<RunFailure> failed = RunParallel(
      runs.size(), options.jobs,
      [&](size_t i) {
        Result<SimSummary> s = run(runs[i].config, ProgressFn{});
        if (!s.ok()) return s.status();
        figures[i] = FiguresOf(*s);
        return Status();
      },
      [&](uint64_t done, uint64_t total) {
        if (progress) progress(done, total, 0, 0);
      });
  if (failed) {
    const size_t i = failed->index;
    return Status(failed->status.code(), PointLabel(r.points[runs[i].point]) + ", " +
                                             r.systems[runs[i].system].label + ", seed " +
                                             std::to_string(runs[i].config.seed) + ": " +
                                             failed->status.message());
  }

  // runs.csv and the aggregates (runs of one (point, system) are contiguous).
  std::ostringstream csv;
  csv << "workload,nodes,delay_ms,pressure,capacity_tokens,system,seed";
  for (const char* m : kMetricNames) csv << ',' << m;
  csv << '\n';
  r.stats.assign(r.points.size(), std::vector<Agg>(r.systems.size()));
  for (size_t i = 0; i < runs.size(); ++i) {
    const PeersPoint& pt = r.points[runs[i].point];
    csv << pt.workload << ',' << pt.nodes << ',' << CsvNumber(pt.delay_ms) << ',' << pt.pressure
        << ',' << pt.config.capacity_tokens << ',' << r.systems[runs[i].system].label << ','
        << runs[i].config.seed;
    for (double v : figures[i]) csv << ',' << CsvNumber(v);
    csv << '\n';
  }
  for (size_t i = 0; i < runs.size(); i += static_cast<size_t>(r.seeds)) {
    Agg& a = r.stats[runs[i].point][runs[i].system];
    a.seeds = r.seeds;
    for (size_t m = 0; m < kMetrics; ++m) {
      double sum = 0, sq = 0;
      for (int k = 0; k < r.seeds; ++k) {
        const double v = figures[i + static_cast<size_t>(k)][m];
        sum += v;
        sq += v * v;
      }
      const double mean = sum / r.seeds;
      a.m[m] = {mean, std::sqrt(std::max(0.0, sq / r.seeds - mean * mean))};
    }
  }
  std::ostringstream points;
  points << "workload,nodes,delay_ms,pressure,capacity_tokens,system,seeds";
  for (const char* m : kMetricNames) points << ',' << m << ',' << m << "_sd";
  points << '\n';
  for (size_t p = 0; p < r.points.size(); ++p) {
    const PeersPoint& pt = r.points[p];
    for (size_t s = 0; s < r.systems.size(); ++s) {
      const Agg& a = r.stats[p][s];
      if (a.seeds == 0) continue;
      points << pt.workload << ',' << pt.nodes << ',' << CsvNumber(pt.delay_ms) << ','
             << pt.pressure << ',' << pt.config.capacity_tokens << ',' << r.systems[s].label << ','
             << a.seeds;
      for (const Stat& st : a.m) points << ',' << CsvNumber(st.mean) << ',' << CsvNumber(st.sd);
      points << '\n';
    }
  }
  const std::string& dir = options.out_dir;
  HEARSAY_RETURN_IF_ERROR(WriteFile(dir + "/runs.csv", csv.str()));
  HEARSAY_RETURN_IF_ERROR(WriteFile(dir + "/points.csv", points.str()));
  HEARSAY_RETURN_IF_ERROR(WritePlots(r));
  return WriteFile(dir + "/report.md", RenderReport(r));
}

}  // namespace hearsay::sim
