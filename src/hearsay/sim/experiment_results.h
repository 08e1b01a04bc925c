// ExperimentResults: the aggregated figures of a paper experiment, and the writers of its files.
//
// RunPaperExperiment (experiment.h) fills an ExperimentResults with one PointStats per
// (point, policy) and hands it to the writers here, which turn it into points.csv, the gnuplot
// tables and script, and report.md. Splitting them keeps the writers testable on made-up numbers.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/sim/experiment.h"

namespace hearsay::sim {

// The metrics aggregated over seeds, in column order.
enum class Metric : size_t {
  kMeanTtft,
  kP50Ttft,
  kP90Ttft,
  kP99Ttft,
  kMeanE2e,
  kHitRate,
  kForwardedFrac,
  kLoadCov,
  kGossipBytes,
  kSpecialistDrift,
  kSpecialistShare,
  kCount,
};
inline constexpr size_t kMetricCount = static_cast<size_t>(Metric::kCount);

// The column name of a metric ("mean_ttft_ms", ...).
const char* MetricName(Metric metric);

// The metric's value in one summary.
double MetricValue(const SimSummary& summary, Metric metric);

// Mean and population standard deviation over seeds.
struct Stat {
  double mean = 0;
  double sd = 0;
};

// The Stat of `values` ({0, 0} when empty).
Stat StatOf(const std::vector<double>& values);

// Invariants: mean/sd are over `seeds` runs, seeds >= 1.
struct PointStats {
  size_t point = 0;  // Index into ExperimentResults::points.
  std::string policy;
  int seeds = 0;
  std::array<Stat, kMetricCount> metrics{};
};

// Invariants: every PointStats::point indexes points; at most one PointStats per (point, policy).
struct ExperimentResults {
  ExperimentOptions options;
  SimConfig base;
  std::vector<ExperimentPoint> points;
  std::vector<std::string> policies;
  std::vector<PointStats> stats;

  // The stats of (factor, level, policy), if that run exists.
  std::optional<PointStats> Find(const std::string& factor, double level,
                                 const std::string& policy) const;
  // The levels of a factor, ascending, as swept.
  std::vector<double> Levels(const std::string& factor) const;
};

// Writes points.csv, plot_*.csv, plots.gp and report.md into options.out_dir.
Status WriteExperimentOutputs(const ExperimentResults& results);

// report.md as a string (what WriteExperimentOutputs writes).
std::string RenderReport(const ExperimentResults& results);

// A number as the CSV files print it: "%.6g", deterministic.
std::string CsvNumber(double value);

}  // namespace hearsay::sim
