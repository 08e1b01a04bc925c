#include "hearsay/api/metrics.h"

#include <gtest/gtest.h>

#include <limits>
#include <thread>

namespace hearsay::api {
namespace {

TEST(MetricsTest, RendersTextFormatExactly) {
  MetricsRegistry registry;
  Counter& local = registry.AddCounter("hearsay_requests_total", "Requests by route decision.",
                                       {{"decision", "local"}});
  Counter& forwarded = registry.AddCounter("hearsay_requests_total", "Requests by route decision.",
                                           {{"decision", "forwarded"}});
  Gauge& peers = registry.AddGauge("hearsay_peers", "Peers by state.\nSecond line \\ here.",
                                   {{"state", "alive"}, {"note", "a \"q\"\\\nb"}});
  Histogram& ttft =
      registry.AddHistogram("hearsay_ttft_seconds", "Time to first token.", {0.005, 0.1, 1});
  Gauge& plain = registry.AddGauge("up", "");
  local.Increment();
  local.Increment(4);
  forwarded.Increment(2);
  peers.Set(3);
  peers.Add(0.5);
  ttft.Observe(0.005);  // on a bound: counts in that bucket (le is inclusive)
  ttft.Observe(0.05);
  ttft.Observe(0.25);
  ttft.Observe(7);
  plain.Set(-std::numeric_limits<double>::infinity());

  EXPECT_EQ(registry.Render(),
            "# HELP hearsay_requests_total Requests by route decision.\n"
            "# TYPE hearsay_requests_total counter\n"
            "hearsay_requests_total{decision=\"local\"} 5\n"
            "hearsay_requests_total{decision=\"forwarded\"} 2\n"
            "# HELP hearsay_peers Peers by state.\\nSecond line \\\\ here.\n"
            "# TYPE hearsay_peers gauge\n"
            "hearsay_peers{state=\"alive\",note=\"a \\\"q\\\"\\\\\\nb\"} 3.5\n"
            "# HELP hearsay_ttft_seconds Time to first token.\n"
            "# TYPE hearsay_ttft_seconds histogram\n"
            "hearsay_ttft_seconds_bucket{le=\"0.005\"} 1\n"
            "hearsay_ttft_seconds_bucket{le=\"0.1\"} 2\n"
            "hearsay_ttft_seconds_bucket{le=\"1\"} 3\n"
            "hearsay_ttft_seconds_bucket{le=\"+Inf\"} 4\n"
            "hearsay_ttft_seconds_sum 7.305\n"
            "hearsay_ttft_seconds_count 4\n"
            "# HELP up \n"
            "# TYPE up gauge\n"
            "up -Inf\n");
}

TEST(MetricsTest, HistogramWithLabelsPutsLeLast) {
  MetricsRegistry registry;
  Histogram& h = registry.AddHistogram("lat", "L.", {1, 2}, {{"peer", "b"}});
  h.Observe(1.5);
  EXPECT_EQ(registry.Render(),
            "# HELP lat L.\n# TYPE lat histogram\n"
            "lat_bucket{peer=\"b\",le=\"1\"} 0\n"
            "lat_bucket{peer=\"b\",le=\"2\"} 1\n"
            "lat_bucket{peer=\"b\",le=\"+Inf\"} 1\n"
            "lat_sum{peer=\"b\"} 1.5\n"
            "lat_count{peer=\"b\"} 1\n");
  EXPECT_EQ(h.CumulativeCount(0), 0u);
  EXPECT_EQ(h.CumulativeCount(1), 1u);
  EXPECT_EQ(h.count(), 1u);
  EXPECT_DOUBLE_EQ(h.sum(), 1.5);
}

TEST(MetricsTest, ExponentialBuckets) {
  EXPECT_EQ(ExponentialBuckets(0.001, 10, 4), (std::vector<double>{0.001, 0.01, 0.1, 1.0}));
}

TEST(MetricsTest, NameValidation) {
  EXPECT_TRUE(IsValidMetricName("hearsay:requests_total"));
  EXPECT_TRUE(IsValidMetricName("_x9"));
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_FALSE(IsValidMetricName("9x"));
  EXPECT_FALSE(IsValidMetricName("a-b"));
  EXPECT_TRUE(IsValidLabelName("decision"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
  EXPECT_FALSE(IsValidLabelName("x y"));
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
        g.Add(1);
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
  EXPECT_EQ(c.value(), uint64_t{kThreads} * kPerThread);
  EXPECT_DOUBLE_EQ(g.value(), double{kThreads} * kPerThread);
  EXPECT_EQ(h.count(), uint64_t{kThreads} * kPerThread);
  EXPECT_EQ(h.CumulativeCount(0), uint64_t{kThreads} * kPerThread / 2);
  EXPECT_DOUBLE_EQ(h.sum(), kThreads * (kPerThread / 2) * 1.25);
}

}  // namespace
}  // namespace hearsay::api
