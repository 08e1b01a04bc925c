// `hearsay bench --json` against a real 2-node cluster: the JSON report has every documented
// field, counts add up, and the cluster's cached-token reports show up as a hit rate.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_test_util.h"
#include "hearsay/launch/local_cluster.h"

namespace hearsay {
namespace {

using namespace std::chrono_literals;

TEST(BenchCliTest, JsonReportAgainstARealCluster) {
  launch::LocalClusterOptions o;
  o.hearsay_binary = HEARSAY_BINARY;
  o.nodes = 2;
  o.debug_faults = false;
  auto cluster = launch::LocalCluster::Start(o);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  const std::string targets =
      (*cluster)->node(0).http_url() + "," + (*cluster)->node(1).http_url() + "/";

  // Zipf 2: a few hot MMLU subjects, so prompts repeat their long prefixes.
  clitest::HearsayRun run({"bench", "--target", targets, "--requests", "30", "--rate", "30",
                           "--zipf", "2", "--seed", "7", "--json"});
  ASSERT_TRUE(run.started());
  ASSERT_TRUE(run.process().Wait(60s).ok()) << run.output();
  ASSERT_EQ(run.process().exit_code(), 0) << run.output();

  const std::string json = clitest::JsonTail(run.output(), '{');
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  ASSERT_TRUE(j.is_object()) << run.output();
  EXPECT_EQ(j["requests"], 30);
  EXPECT_EQ(j["completed"], 30) << j.dump(2);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_TRUE(j["errors"].empty());
  EXPECT_EQ(j["missing_usage"], 0);
  for (const char* d : {"ttft", "itl", "e2e"}) {
    for (const char* k : {"count", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms"}) {
      EXPECT_TRUE(j[d].contains(k)) << d << "." << k;
    }
  }
  EXPECT_EQ(j["ttft"]["count"], 30);
  EXPECT_GT(j["ttft"]["mean_ms"].get<double>(), 0);
  EXPECT_LE(j["ttft"]["p50_ms"].get<double>(), j["ttft"]["p99_ms"].get<double>());
  EXPECT_LE(j["ttft"]["p99_ms"].get<double>(), j["e2e"]["max_ms"].get<double>());
  EXPECT_GT(j["requests_per_s"].get<double>(), 0);
  // MMLU prompts are 250+ tokens; every request reported usage.
  EXPECT_GT(j["prompt_tokens"].get<uint64_t>(), 30u * 250);
  EXPECT_GT(j["completion_tokens"].get<uint64_t>(), 0u);
  const double hit = j["hit_rate"].get<double>();
  EXPECT_GT(hit, 0.1) << "repeated prefixes should hit some cache";
  EXPECT_LE(hit, 1.0);
  EXPECT_EQ(j["cached_tokens"].get<double>() / j["prompt_tokens"].get<double>(), hit);
  ASSERT_EQ(j["per_target"].size(), 2u);
  EXPECT_EQ(j["per_target"][0].get<int>() + j["per_target"][1].get<int>(), 30);
  EXPECT_EQ(j["config"]["targets"].size(), 2u);
  EXPECT_EQ(j["config"]["mode"], "open");
}

TEST(BenchCliTest, ClosedLoopTableAndBadFlags) {
  launch::LocalClusterOptions o;
  o.hearsay_binary = HEARSAY_BINARY;
  o.nodes = 1;
  o.debug_faults = false;
  auto cluster = launch::LocalCluster::Start(o);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  clitest::HearsayRun run({"bench", "--target", (*cluster)->node(0).http_url(), "--concurrency",
                           "4", "--requests", "12", "--workload", "chat"});
  ASSERT_TRUE(run.started());
  ASSERT_TRUE(run.process().Wait(60s).ok()) << run.output();
  ASSERT_EQ(run.process().exit_code(), 0) << run.output();
  const std::string out = run.output();
  EXPECT_NE(out.find("closed loop, concurrency 4"), std::string::npos) << out;
  EXPECT_NE(out.find("12 sent, 12 completed, 0 failed"), std::string::npos) << out;
  EXPECT_NE(out.find("hit rate"), std::string::npos) << out;
  // Progress while it runs (stderr is not a terminal here: plain lines), and the per-target line
  // names its target.
  EXPECT_NE(out.find("bench: 100%  12 done, 0 failed"), std::string::npos) << out;
  EXPECT_NE(out.find("sent to    " + (*cluster)->node(0).http_address + " 12 requests"),
            std::string::npos)
      << out;

  // Nothing listens on the target: every request fails, and the exit status says so.
  clitest::HearsayRun dead({"bench", "--target", "127.0.0.1:1", "--requests", "3", "--json"});
  ASSERT_TRUE(dead.started());
  ASSERT_TRUE(dead.process().Wait(30s).ok()) << dead.output();
  EXPECT_EQ(dead.process().exit_code(), 3) << dead.output();
  const nlohmann::json j =
      nlohmann::json::parse(clitest::JsonTail(dead.output(), '{'), nullptr, false);
  ASSERT_TRUE(j.is_object()) << dead.output();
  EXPECT_EQ(j["errors"]["connect"], 3);

  for (std::vector<std::string> bad : std::vector<std::vector<std::string>>{
           {"bench", "--target", "ftp://x:1"},
           {"bench", "--target", "https://x:1,http://y:1"},
           {"bench", "--target", "a:1", "--tls-insecure"},
           {"bench", "--target", "https://a:1", "--tls-ca", "/nonexistent/ca.crt"},
           {"bench", "--target", "a:1", "--rate", "5", "--concurrency", "2"},
           {"bench", "--target", "a:1", "--workload", "trace"},
           {"bench"}}) {
    clitest::HearsayRun r(bad);
    ASSERT_TRUE(r.started());
    ASSERT_TRUE(r.process().Wait(10s).ok());
    EXPECT_NE(r.process().exit_code(), 0) << r.output();
    EXPECT_FALSE(r.output().empty());
  }
}

}  // namespace
}  // namespace hearsay
