// The pool experiment's aggregated results and the writers of its report and plots
// (pool_experiment.h runs the sections; this splits the files it writes from the runs, as
// experiment_results.h does for the paper experiment).
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/sim/experiment_results.h"
#include "hearsay/sim/pool_experiment.h"

namespace hearsay::sim::pool {

inline constexpr int kNodes = 8;
// The slowdown section: the slowed node, when (virtual seconds after the first arrival) and for
// how long the run lasts; the goal's window.
inline constexpr int kSlowNode = 3;
inline constexpr double kSlowFactor = 2;
inline constexpr double kSlowWindowS = 10;
// A node's load "fell" once its share of arrivals over kFallSpanS seconds is below this fraction
// of its share in the kSlowWindowS before the slowdown.
inline constexpr double kFallFraction = 0.75;
inline constexpr int kFallSpanS = 2;

inline double SlowAtOf(const PoolOptions& o) { return o.quick ? 4 : 30; }
inline double SlowRunOf(const PoolOptions& o) { return o.quick ? 10 : 60; }
inline uint64_t PerNodeOf(const PoolOptions& o) { return o.quick ? 40 : 500; }

// The hardware groups of the mixed section, in node order.
struct HardwareClass {
  const char* preset;
  const char* label;
  int count;
};
inline constexpr HardwareClass kMixed[] = {
    {"h100-llama3-8b", "H100", 2}, {"a100-llama3-8b", "A100", 2}, {"consumer", "consumer", 4}};
inline constexpr size_t kClasses = std::size(kMixed);

// One section and policy's figures over its seeds.
struct Agg {
  Stat mean, p50, p99, hit;
  double failed = 0, wrong_model = 0;  // sums over seeds
  double class_share[kClasses] = {};   // means over seeds
  std::vector<double> slow_share;      // means over seeds
};

// Everything the writers need.
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

// How the slowed node's load changed: its share in the kSlowWindowS before the slowdown, over the
// second half of the time after it, and the seconds after the slowdown until its share over
// kFallSpanS seconds fell below kFallFraction of before (-1 never).
struct Fall {
  double before = 0;
  double after = 0;
  double seconds = -1;
};

// The slowed node's share of arrivals before, after and how fast it fell, from its per-second
// `share`, for a slowdown at `at` seconds in a run of `end` seconds.
Fall FallOf(const std::vector<double>& share, double at, double end);

// report.md as a string: the goals (met or missed, by how much) and each section's tables.
std::string RenderReport(const Results& results);

// plot_ttft.csv, slow_share.csv and plots.gp in results.options.out_dir.
Status WritePlots(const Results& results);

// Writes `text` to `path`; INTERNAL if it cannot.
Status WriteFile(const std::string& path, const std::string& text);

}  // namespace hearsay::sim::pool
