#include "hearsay/upstream/engine_metrics.h"

#include <string>

#include <gtest/gtest.h>

namespace hearsay::upstream {
namespace {

TEST(EngineMetricsTest, ReadsLlamaCppQueueGauges) {
  const std::string page =
      "# HELP llamacpp:requests_processing Number of requests processing.\n"
      "# TYPE llamacpp:requests_processing gauge\n"
      "llamacpp:requests_processing 3\n"
      "# TYPE llamacpp:requests_deferred gauge\n"
      "llamacpp:requests_deferred 5\n"
      "llamacpp:prompt_tokens_total 1234\n";
  Result<EngineQueue> q = ParseEngineQueue(UpstreamFlavor::kLlamaCpp, page);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q.value().running, 3u);
  EXPECT_EQ(q.value().waiting, 5u);
}

TEST(EngineMetricsTest, SumsVllmLabelSetsAndSkipsLookalikes) {
  const std::string page =
      "vllm:num_requests_running{engine=\"0\",model_name=\"a}b\"} 2.0\r\n"
      "vllm:num_requests_running{engine=\"1\",model_name=\"q\\\"x\"} 1.0 1700000000000\n"
      "vllm:num_requests_waiting{engine=\"0\"} 4\n"
      "vllm:num_requests_waiting_total 99\n"
      "vllm:num_requests_waiting{engine=\"1\"} 0\n";
  Result<EngineQueue> q = ParseEngineQueue(UpstreamFlavor::kVllm, page);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q.value().running, 3u);
  EXPECT_EQ(q.value().waiting, 4u);
}

TEST(EngineMetricsTest, ReadsSglangGauges) {
  const std::string page =
      "sglang:num_running_reqs{model_name=\"m\"} 8\nsglang:num_queue_reqs{model_name=\"m\"} 4\n";
  Result<EngineQueue> q = ParseEngineQueue(UpstreamFlavor::kSglang, page);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q.value().running, 8u);
  EXPECT_EQ(q.value().waiting, 4u);
}

TEST(EngineMetricsTest, MissingGaugeIsNotFoundAndGenericHasNone) {
  EXPECT_EQ(ParseEngineQueue(UpstreamFlavor::kLlamaCpp, "llamacpp:requests_processing 1\n")
                .status()
                .code(),
            StatusCode::kNotFound);
  EXPECT_EQ(ParseEngineQueue(UpstreamFlavor::kGeneric, "").status().code(),
            StatusCode::kNotFound);
}

TEST(EngineMetricsTest, RefusesMalformedRequestedLinesWithTheLineNumber) {
  const char* bad[] = {
      "llamacpp:requests_processing\n",                  // no value
      "llamacpp:requests_processing abc\n",              // not a number
      "llamacpp:requests_processing -1\n",               // negative
      "llamacpp:requests_processing NaN\n",              // not finite
      "llamacpp:requests_processing{a=\"1\" 2\n",        // unclosed labels
      "llamacpp:requests_processing{a=\"}\\\"} 2\n",     // the quote never closes
      "llamacpp:requests_processing 1x\n",               // junk after the number
  };
  for (const char* line : bad) {
    const std::string page = std::string("# x\n") + line + "llamacpp:requests_deferred 0\n";
    Result<EngineQueue> q = ParseEngineQueue(UpstreamFlavor::kLlamaCpp, page);
    ASSERT_FALSE(q.ok()) << line;
    EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument) << line;
    EXPECT_NE(q.status().message().find("line 2"), std::string::npos) << q.status().message();
  }
}

TEST(EngineMetricsTest, OtherMetricsMayBeAnything) {
  const std::string page =
      "weird{{{ garbage\nllamacpp:requests_processing 1\nllamacpp:requests_deferred 2\n";
  EXPECT_TRUE(ParseEngineQueue(UpstreamFlavor::kLlamaCpp, page).ok());
}

TEST(EngineMetricsTest, BoundsThePageAndTheCounts) {
  std::string page(kMaxMetricsBytes + 1, '#');
  EXPECT_EQ(ParseEngineQueue(UpstreamFlavor::kLlamaCpp, page).status().code(),
            StatusCode::kInvalidArgument);
  Result<EngineQueue> q = ParseEngineQueue(
      UpstreamFlavor::kLlamaCpp,
      "llamacpp:requests_processing 1e300\nllamacpp:requests_processing 1e300\n"
      "llamacpp:requests_deferred 0\n");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q.value().running, kMaxReportedRequests);
}

}  // namespace
}  // namespace hearsay::upstream
