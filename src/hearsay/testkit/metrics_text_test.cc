#include "hearsay/testkit/metrics_text.h"

#include <gtest/gtest.h>

#include <cmath>

namespace hearsay::testkit {
namespace {

TEST(MetricsTextTest, ParsesSamplesLabelsAndSpecialValues) {
  const char* text =
      "# HELP hearsay_requests_total Requests by route decision.\n"
      "# TYPE hearsay_requests_total counter\n"
      "hearsay_requests_total{decision=\"local\"} 3\n"
      "hearsay_requests_total{decision=\"forwarded\",peer=\"node-1\"} 4\n"
      "hearsay_requests_total{decision=\"forwarded\",peer=\"node-2\"} 5 1700000000000\n"
      "hearsay_ttft_seconds_bucket{le=\"+Inf\"} 12\n"
      "hearsay_view_age_seconds 1.5e-3\n"
      "weird{v=\"a\\\"b\\\\c\\nd\"} +Inf\n";
  Result<std::vector<MetricSample>> r = ParsePrometheusText(text);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 6u);
  EXPECT_EQ(SumMetric(*r, "hearsay_requests_total"), 12);
  EXPECT_EQ(SumMetric(*r, "hearsay_requests_total", {{"decision", "forwarded"}}), 9);
  EXPECT_EQ(SumMetric(*r, "hearsay_requests_total", {{"decision", "retried"}}), 0);
  EXPECT_EQ(FindMetric(*r, "hearsay_requests_total", {{"decision", "local"}}), 3);
  EXPECT_FALSE(FindMetric(*r, "hearsay_requests_total").has_value());
  EXPECT_DOUBLE_EQ(FindMetric(*r, "hearsay_view_age_seconds").value_or(0), 1.5e-3);
  EXPECT_EQ((*r)[5].labels.at("v"), "a\"b\\c\nd");
  EXPECT_TRUE(std::isinf((*r)[5].value));
}

TEST(MetricsTextTest, RejectsMalformedLinesWithTheLineNumber) {
  for (const char* bad : {"m{a=\"x} 1\n", "m{a=x} 1\n", "m 1x\n", "{a=\"b\"} 1\n", "m\n"}) {
    Result<std::vector<MetricSample>> r = ParsePrometheusText(std::string("ok 1\n") + bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("line 2"), std::string::npos) << r.status().ToString();
  }
}

}  // namespace
}  // namespace hearsay::testkit
