// MetricsRegistry: counters, gauges and histograms, exposed in Prometheus text format 0.0.4.
//
// A thin layer over prometheus-cpp's core library (its Registry, Family, Counter, Gauge and
// Histogram, and its TextSerializer); the daemon serves GET /metrics itself, so the library's
// pull server is not used. The layer adds what the library leaves out: registration mistakes
// crash instead of throwing, and HELP text must not need escaping (the library writes it raw).
//
// A family is a metric name with its HELP text and TYPE; it holds one series per label set.
// Add*() registers a series and returns a reference that stays valid for the registry's lifetime;
// adding a series to an existing name adds it to that family (same type and help required). An
// invalid metric or label name, a type or help mismatch, a repeated label set, a reserved label
// ("le" on a histogram, "__" prefixes), HELP text with a newline or backslash, and unsorted or
// non-finite histogram buckets are programming errors and crash (HEARSAY_CHECK).
//
// Render() groups families by type (counters, gauges, histograms), orders a series' labels by
// name, and renders a histogram as `_count`, `_sum`, then cumulative `_bucket{le=...}` series
// ending in le="+Inf". The order of families and of series within a family is not part of the
// contract; the set of series is.
//
// Thread-safety: updates are safe from any thread (the I/O threads and the core thread both
// update them): Counter and Gauge are atomics, Histogram::Observe takes the histogram's own mutex.
// Add*() and Render() may be called from any thread; a render that races with updates may mix
// values from just before and just after them.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/labels.h>
#include <prometheus/registry.h>

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace hearsay::api {

// Label pairs of one series (rendered sorted by name).
using Labels = prometheus::Labels;
// A monotonically increasing count: Increment(), Increment(delta >= 0), Value().
using Counter = prometheus::Counter;
// A value that goes up and down: Set(), Increment(delta), Decrement(delta), Value().
using Gauge = prometheus::Gauge;
// Observations counted into fixed buckets by upper bound (inclusive), with their sum: Observe().
using Histogram = prometheus::Histogram;

// `count` bounds start, start*factor, start*factor^2, ... (start > 0, factor > 1, count >= 1).
std::vector<double> ExponentialBuckets(double start, double factor, size_t count);

class MetricsRegistry {
 public:
  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  Counter& AddCounter(std::string_view name, std::string_view help, const Labels& labels = {});
  Gauge& AddGauge(std::string_view name, std::string_view help, const Labels& labels = {});
  // `buckets`: the upper bounds, strictly increasing and finite (+Inf is implied).
  Histogram& AddHistogram(std::string_view name, std::string_view help,
                          const std::vector<double>& buckets, const Labels& labels = {});

  // The exposition text (Content-Type: text/plain; version=0.0.4).
  std::string Render() const;

 private:
  // The family `name`, created on first use; checks the name, help, type and labels.
  template <typename T>
  prometheus::Family<T>& FamilyFor(std::string_view name, std::string_view help,
                                   const Labels& labels);

  std::mutex mu_;  // serializes Add*() so each check and its registration are one step
  struct Known {
    prometheus::MetricType type;
    std::string help;
  };
  std::map<std::string, Known, std::less<>> known_;  // guarded by mu_
  prometheus::Registry registry_;
};

}  // namespace hearsay::api
