// Parsing of the Prometheus text exposition format (version 0.0.4), so tests can assert on a
// node's /metrics counters. Comment and HELP/TYPE lines are skipped; each sample line becomes a
// MetricSample. Malformed lines are an error naming the line, never a crash.
//
// Thread-safety: free functions over values.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/common/status.h"

namespace hearsay::testkit {

using MetricLabels = std::map<std::string, std::string>;

struct MetricSample {
  std::string name;
  MetricLabels labels;
  double value = 0;
};

// Every sample of `text`, in order.
Result<std::vector<MetricSample>> ParsePrometheusText(std::string_view text);

// The sum of the samples called `name` whose labels include every pair of `match` (0 if none).
double SumMetric(const std::vector<MetricSample>& samples, std::string_view name,
                 const MetricLabels& match = {});

// The value of the one sample called `name` with exactly the labels `labels`, if present.
std::optional<double> FindMetric(const std::vector<MetricSample>& samples, std::string_view name,
                                 const MetricLabels& labels = {});

}  // namespace hearsay::testkit
