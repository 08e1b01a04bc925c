#include "hearsay/api/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <thread>
#include <vector>

namespace hearsay::api {
namespace {

// The lines of `text`, sorted: series order within a family is not part of the contract.
std::vector<std::string> SortedLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end - start));
    start = end == std::string::npos ? text.size() : end + 1;
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

TEST(MetricsTest, RendersTextFormatExactly) {
  MetricsRegistry registry;
  Histogram& ttft =
      registry.AddHistogram("hearsay_ttft_seconds", "Time to first token.", {0.005, 0.1, 1});
  Counter& local = registry.AddCounter("hearsay_requests_total", "Requests by route decision.",
                                       {{"decision", "local"}});
  Gauge& peers = registry.AddGauge("hearsay_peers", "Peers by state.",
                                   {{"state", "alive"}, {"note", "a \"q\"\\\nb"}});
  Gauge& plain = registry.AddGauge("up", "");
  local.Increment();
  local.Increment(4);
  peers.Set(3);
  peers.Increment(0.5);
  ttft.Observe(0.005);  // on a bound: counts in that bucket (le is inclusive)
  ttft.Observe(0.05);
  ttft.Observe(0.25);
  ttft.Observe(7);
  plain.Set(-std::numeric_limits<double>::infinity());

  // Counters, then gauges, then histograms; labels sorted by name; no HELP line for empty help.
  EXPECT_EQ(registry.Render(),
            "# HELP hearsay_requests_total Requests by route decision.\n"
            "# TYPE hearsay_requests_total counter\n"
            "hearsay_requests_total{decision=\"local\"} 5\n"
            "# HELP hearsay_peers Peers by state.\n"
            "# TYPE hearsay_peers gauge\n"
            "hearsay_peers{note=\"a \\\"q\\\"\\\\\\nb\",state=\"alive\"} 3.5\n"
            "# TYPE up gauge\n"
            "up -Inf\n"
            "# HELP hearsay_ttft_seconds Time to first token.\n"
            "# TYPE hearsay_ttft_seconds histogram\n"
            "hearsay_ttft_seconds_count 4\n"
            "hearsay_ttft_seconds_sum 7.305\n"
            "hearsay_ttft_seconds_bucket{le=\"0.005\"} 1\n"
            "hearsay_ttft_seconds_bucket{le=\"0.1\"} 2\n"
            "hearsay_ttft_seconds_bucket{le=\"1\"} 3\n"
            "hearsay_ttft_seconds_bucket{le=\"+Inf\"} 4\n");
}

TEST(MetricsTest, SeriesOfOneFamilyShareItsHeader) {
  MetricsRegistry registry;
  registry.AddCounter("req", "R.", {{"decision", "local"}}).Increment(5);
  registry.AddCounter("req", "R.", {{"decision", "forwarded"}}).Increment(2);
  registry.AddCounter("big", "B.").Increment(123456789012345);
  EXPECT_EQ(
      SortedLines(registry.Render()),
      (std::vector<std::string>{"# HELP big B.", "# HELP req R.", "# TYPE big counter",
                                "# TYPE req counter", "big 123456789012345",
                                "req{decision=\"forwarded\"} 2", "req{decision=\"local\"} 5"}));
}

TEST(MetricsTest, HistogramWithLabelsPutsLeLast) {
  MetricsRegistry registry;
  Histogram& h = registry.AddHistogram("lat", "L.", {1, 2}, {{"peer", "b"}});
  h.Observe(1.5);
  EXPECT_EQ(registry.Render(),
            "# HELP lat L.\n# TYPE lat histogram\n"
            "lat_count{peer=\"b\"} 1\n"
            "lat_sum{peer=\"b\"} 1.5\n"
            "lat_bucket{peer=\"b\",le=\"1\"} 0\n"
            "lat_bucket{peer=\"b\",le=\"2\"} 1\n"
            "lat_bucket{peer=\"b\",le=\"+Inf\"} 1\n");
}

TEST(MetricsTest, ExponentialBuckets) {
  EXPECT_EQ(ExponentialBuckets(0.001, 10, 4), (std::vector<double>{0.001, 0.01, 0.1, 1.0}));
}

TEST(MetricsDeathTest, ProgrammerErrorsCrash) {
  EXPECT_DEATH(
      {
        MetricsRegistry r;
        r.AddCounter("bad-name", "x");
      },
      "invalid metric name");
  EXPECT_DEATH(
      {
        MetricsRegistry r;
        r.AddCounter("c", "x", {{"l", "1"}});
        r.AddCounter("c", "x", {{"l", "1"}});
      },
      "same labels");
  EXPECT_DEATH(
      {
        MetricsRegistry r;
        r.AddCounter("c", "x");
        r.AddGauge("c", "x");
      },
      "another type");
  EXPECT_DEATH(
      {
        MetricsRegistry r;
        r.AddHistogram("h", "x", {1}, {{"le", "1"}});
      },
      "label le");
  EXPECT_DEATH(
      {
        MetricsRegistry r;
        r.AddHistogram("h", "x", {2, 1});
      },
      "strictly increasing");
  EXPECT_DEATH(
      {
        MetricsRegistry r;
        r.AddCounter("c", "x", {{"__reserved", "1"}});
      },
      "invalid label name");
  EXPECT_DEATH(
      {
        MetricsRegistry r;
        r.AddCounter("c", "x", {{"a:b", "1"}});
      },
      "invalid label name");
  EXPECT_DEATH(
      {
        MetricsRegistry r;
        r.AddCounter("c", "x");
        r.AddCounter("c", "y", {{"l", "1"}});
      },
      "another type or help");
  EXPECT_DEATH(
      {
        MetricsRegistry r;
        r.AddCounter("c", "line\nbreak");
      },
      "needs escaping");
  EXPECT_DEATH(
      {
        MetricsRegistry r;
        r.AddHistogram("h", "x", {1, std::numeric_limits<double>::infinity()});
      },
      "finite");
}

// Updates from several threads are not lost (tests may start threads; the library does not).
TEST(MetricsTest, ConcurrentUpdatesAreCounted) {
  MetricsRegistry registry;
  Counter& c = registry.AddCounter("c", "x");
  Gauge& g = registry.AddGauge("g", "x");
  Histogram& h = registry.AddHistogram("h", "x", {0.5});
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        c.Increment();
        g.Increment(1);
        h.Observe(i % 2 == 0 ? 0.25 : 1.0);
      }
    });
  }
  // Renders concurrently with the updates, and registers more series meanwhile.
  for (int i = 0; i < 20; ++i) {
    EXPECT_FALSE(registry.Render().empty());
    registry.AddCounter("late", "x", {{"i", std::to_string(i)}});
  }
  for (auto& t : threads) t.join();
  EXPECT_DOUBLE_EQ(c.Value(), double{kThreads} * kPerThread);
  EXPECT_DOUBLE_EQ(g.Value(), double{kThreads} * kPerThread);
  const prometheus::ClientMetric::Histogram got = h.Collect().histogram;
  EXPECT_EQ(got.sample_count, uint64_t{kThreads} * kPerThread);
  ASSERT_EQ(got.bucket.size(), 2u);
  EXPECT_EQ(got.bucket[0].cumulative_count, uint64_t{kThreads} * kPerThread / 2);
  EXPECT_DOUBLE_EQ(got.sample_sum, kThreads * (kPerThread / 2) * 1.25);
}

}  // namespace
}  // namespace hearsay::api
