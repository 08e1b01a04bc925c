#include "hearsay/loadgen/summary.h"

#include <gtest/gtest.h>

#include <vector>

namespace hearsay::loadgen {
namespace {

using std::chrono::milliseconds;

RequestResult Ok(uint64_t id, int ttft_ms, int e2e_ms, uint32_t prompt, uint32_t cached,
                 uint32_t completion = 1) {
  RequestResult r;
  r.id = id;
  r.ttft = milliseconds(ttft_ms);
  r.e2e = milliseconds(e2e_ms);
  r.has_usage = true;
  r.prompt_tokens = prompt;
  r.cached_tokens = cached;
  r.completion_tokens = completion;
  return r;
}

TEST(DistributeTest, SortsAndSummarizes) {
  const Distribution d = Distribute({30, 10, 20, 40});
  EXPECT_EQ(d.count, 4u);
  EXPECT_DOUBLE_EQ(d.mean_ms, 25);
  EXPECT_DOUBLE_EQ(d.p50_ms, 25);
  EXPECT_DOUBLE_EQ(d.max_ms, 40);
  EXPECT_DOUBLE_EQ(d.p99_ms, 39.7);
  const Distribution empty = Distribute({});
  EXPECT_EQ(empty.count, 0u);
  EXPECT_EQ(empty.p99_ms, 0);
}

TEST(SummarizeTest, HitRateIsTokenLevelOverRequestsWithUsage) {
  std::vector<RequestResult> results;
  results.push_back(Ok(0, 10, 20, 100, 0));
  results.push_back(Ok(1, 5, 15, 300, 240));
  RequestResult no_usage = Ok(2, 5, 5, 999, 999);
  no_usage.has_usage = false;
  results.push_back(no_usage);
  const BenchSummary s = Summarize(results, std::chrono::seconds(2), 1);
  // (0 + 240) / (100 + 300): weighted by tokens, not the mean of per-request rates (0.4).
  EXPECT_DOUBLE_EQ(s.hit_rate, 0.6);
  EXPECT_EQ(s.prompt_tokens, 400u);
  EXPECT_EQ(s.cached_tokens, 240u);
  EXPECT_EQ(s.missing_usage, 1u);
  EXPECT_EQ(s.completed, 3u);
  EXPECT_DOUBLE_EQ(s.requests_per_s, 1.5);
  EXPECT_EQ(s.ttft.count, 3u);
  EXPECT_DOUBLE_EQ(s.ttft.mean_ms, 20.0 / 3);
}

TEST(SummarizeTest, FailuresAreCountedByKindAndKeptOutOfLatencies) {
  std::vector<RequestResult> results;
  results.push_back(Ok(0, 10, 20, 100, 50, 4));
  RequestResult busy;
  busy.error = ErrorKind::kHttpStatus;
  busy.http_status = 429;
  busy.e2e = milliseconds(1);
  busy.target = 1;
  results.push_back(busy);
  results.push_back(busy);
  RequestResult down;
  down.error = ErrorKind::kConnect;
  down.target = 0;
  results.push_back(down);
  RequestResult skipped;
  skipped.error = ErrorKind::kSkipped;
  skipped.target = 1;
  results.push_back(skipped);
  const BenchSummary s = Summarize(results, std::chrono::seconds(1), 2);
  EXPECT_EQ(s.requests, 5u);
  EXPECT_EQ(s.completed, 1u);
  EXPECT_EQ(s.failed, 4u);
  EXPECT_EQ(s.errors.at("http_429"), 2u);
  EXPECT_EQ(s.errors.at("connect"), 1u);
  EXPECT_EQ(s.errors.at("skipped"), 1u);
  EXPECT_EQ(s.e2e.count, 1u);
  EXPECT_DOUBLE_EQ(s.e2e.max_ms, 20);
  EXPECT_DOUBLE_EQ(s.hit_rate, 0.5);
  EXPECT_DOUBLE_EQ(s.output_tokens_per_s, 4);
  // Skipped requests were never sent to a target.
  EXPECT_EQ(s.per_target, (std::vector<uint64_t>{2, 2}));
}

TEST(SummarizeTest, InterTokenLatencyPoolsAllGaps) {
  RequestResult a = Ok(0, 10, 40, 10, 0, 3);
  a.itl = {milliseconds(10), milliseconds(20)};
  RequestResult b = Ok(1, 10, 40, 10, 0, 2);
  b.itl = {milliseconds(30)};
  const std::vector<RequestResult> results{a, b};
  const BenchSummary s = Summarize(results, std::chrono::seconds(1), 1);
  EXPECT_EQ(s.itl.count, 3u);
  EXPECT_DOUBLE_EQ(s.itl.mean_ms, 20);
  EXPECT_DOUBLE_EQ(s.itl.p50_ms, 20);
}

TEST(SummarizeTest, EmptyRunIsAllZero) {
  const BenchSummary s = Summarize({}, Duration::zero(), 3);
  EXPECT_EQ(s.requests, 0u);
  EXPECT_EQ(s.hit_rate, 0);
  EXPECT_EQ(s.requests_per_s, 0);
  EXPECT_EQ(s.per_target.size(), 3u);
}

TEST(SummaryJsonTest, HasTheDocumentedFields) {
  std::vector<RequestResult> results{Ok(0, 10, 20, 100, 25)};
  const nlohmann::json j = ToJson(Summarize(results, std::chrono::seconds(1), 1));
  for (const char* key : {"requests", "completed", "failed", "errors", "ttft", "itl", "e2e",
                          "requests_per_s", "output_tokens_per_s", "prompt_tokens", "cached_tokens",
                          "hit_rate", "duration_s", "per_target"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_DOUBLE_EQ(j["hit_rate"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(j["ttft"]["p99_ms"].get<double>(), 10);
  const std::string table = RenderTable(Summarize(results, std::chrono::seconds(1), 1));
  EXPECT_NE(table.find("ttft"), std::string::npos);
  EXPECT_NE(table.find("hit rate   0.250"), std::string::npos);
}

TEST(SummaryTableTest, NamesTargetsAndSaysWhyThereIsNoItl) {
  // Non-streaming results: no inter-token gaps.
  std::vector<RequestResult> results{Ok(0, 10, 20, 100, 25), Ok(1, 12, 22, 100, 25)};
  for (RequestResult& r : results) r.itl.clear();
  results[1].target = 1;
  const BenchSummary s = Summarize(results, std::chrono::seconds(1), 2);
  const std::vector<std::string> names = {"http://a:1", "http://b:2"};
  const std::string table = RenderTable(s, names);
  EXPECT_NE(table.find("sent to    http://a:1 1 requests, http://b:2 1 requests"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("(no samples: answers of one token, or not streamed, have no gaps)"),
            std::string::npos)
      << table;
  EXPECT_EQ(table.find("itl               0        0.0"), std::string::npos) << table;
}

}  // namespace
}  // namespace hearsay::loadgen
