// MetricsRegistry: counters, gauges and histograms, exposed in Prometheus text format 0.0.4.
//
// There is no Debian 12 package of prometheus-cpp, and GET /metrics needs only the text format,
// so this is a small registry of our own.
//
// A family is a metric name with its HELP text and TYPE; it holds one series per label set.
// Add*() registers a series and returns a reference that stays valid for the registry's lifetime;
// adding a series to an existing name adds it to that family (same type and help required). Names
// and label names are validated against Prometheus' grammar; an invalid name, a type or help
// mismatch, a repeated label set, a reserved label ("le" on a histogram, "__" prefixes) or
// unsorted/non-finite histogram buckets are programming errors and crash (HEARSAY_CHECK).
//
// Render() lists families in registration order, and series in registration order within a
// family; label values and HELP text are escaped; histograms render cumulative `_bucket{le=...}`
// series ending in le="+Inf", then `_sum` and `_count`.
//
// Thread-safety: Counter, Gauge and Histogram updates are lock-free atomics, safe from any thread
// (the I/O threads and the core thread both update them). Add*() and Render() take the registry's
// mutex and may be called from any thread; Render() reads each value atomically (a render that
// races with updates may mix values from just before and just after them).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hearsay::api {

// Label pairs of one series, in the order they render.
using Labels = std::vector<std::pair<std::string, std::string>>;

// A monotonically increasing count.
class Counter {
 public:
  void Increment(uint64_t delta = 1) { value_.fetch_add(delta, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// A value that goes up and down.
class Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Add(double delta) { value_.fetch_add(delta, std::memory_order_relaxed); }
  void Sub(double delta) { value_.fetch_sub(delta, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Observations counted into fixed buckets by upper bound, with their sum.
// Invariants: bounds_ is strictly increasing and finite; counts_ has bounds_.size() + 1 entries,
// the last counting observations above every bound (or NaN).
class Histogram {
 public:
  // `bounds`: the buckets' upper bounds (inclusive), strictly increasing, finite.
  explicit Histogram(std::vector<double> bounds);

  void Observe(double value);

  std::span<const double> bounds() const { return bounds_; }
  // Observations in bucket i alone: in (bounds()[i-1], bounds()[i]]; i == bounds().size() is
  // the overflow bucket (above every bound).
  uint64_t BucketCount(size_t i) const;
  // Observations <= bounds()[i] (cumulative); i == bounds().size() gives the total count.
  uint64_t CumulativeCount(size_t i) const;
  uint64_t count() const { return CumulativeCount(bounds_.size()); }
  double sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<double> sum_{0};
};

// `count` bounds start, start*factor, start*factor^2, ... (start > 0, factor > 1, count >= 1).
std::vector<double> ExponentialBuckets(double start, double factor, size_t count);

class MetricsRegistry {
 public:
  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  Counter& AddCounter(std::string_view name, std::string_view help, Labels labels = {});
  Gauge& AddGauge(std::string_view name, std::string_view help, Labels labels = {});
  Histogram& AddHistogram(std::string_view name, std::string_view help, std::vector<double> buckets,
                          Labels labels = {});

  // The exposition text (Content-Type: text/plain; version=0.0.4).
  std::string Render() const;

 private:
  struct Family;
  Family& FamilyFor(std::string_view name, std::string_view help, int type, const Labels& labels);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Family>> families_;  // guarded by mu_
};

// Prometheus' grammar: metric names [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]*.
bool IsValidMetricName(std::string_view name);
bool IsValidLabelName(std::string_view name);

}  // namespace hearsay::api
