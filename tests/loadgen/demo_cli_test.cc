// `hearsay demo` end to end: it prints one JSON object per policy with sane numbers, runs
// repeated rounds in mirrored order, and it leaves no `hearsay node` process behind, whether it
// finishes, is interrupted (SIGINT), or is killed outright (SIGKILL: the nodes' parent-death
// signal).
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli_test_util.h"

namespace hearsay {
namespace {

using namespace std::chrono_literals;

// Runs `hearsay demo` with `args` to its end and returns the JSON it printed (not an array if
// none), having checked that it exited 0 and left no node running.
nlohmann::json DemoJson(std::vector<std::string> args) {
  clitest::HearsayRun run(std::move(args));
  if (!run.started()) {
    ADD_FAILURE() << "hearsay demo did not start";
    return nullptr;
  }
  if (!run.process().Wait(120s).ok()) {
    ADD_FAILURE() << "hearsay demo did not end: " << run.output();
    return nullptr;
  }
  EXPECT_EQ(run.process().exit_code(), 0) << run.output();
  EXPECT_TRUE(run.Children().empty()) << "hearsay node processes left behind";
  nlohmann::json j = nlohmann::json::parse(clitest::JsonTail(run.output(), '['), nullptr, false);
  EXPECT_TRUE(j.is_array()) << run.output();
  return j;
}

TEST(DemoCliTest, JsonHasFourPoliciesAndNothingIsLeftRunning) {
  const nlohmann::json j = DemoJson({"demo", "--json", "--requests", "24", "--rate", "16"});
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 4u) << j.dump(2);
  const std::vector<std::string> policies = {"hearsay", "paper", "least-loaded", "random"};
  for (size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& row = j[i];
    EXPECT_EQ(row["policy"], policies[i]);
    const double mean = row["mean_ttft_ms"].get<double>();
    const double p99 = row["p99_ttft_ms"].get<double>();
    const double hit = row["hit_rate"].get<double>();
    EXPECT_GT(mean, 0) << row.dump();
    EXPECT_LT(mean, 60'000) << row.dump();
    EXPECT_GE(p99, row["p50_ttft_ms"].get<double>()) << row.dump();
    EXPECT_GE(hit, 0) << row.dump();
    EXPECT_LE(hit, 1) << row.dump();
    EXPECT_EQ(row["completed"], 24) << row.dump();
    EXPECT_EQ(row["failed"], 0) << row.dump();
  }
}

// --rounds 2: each policy runs twice, the second round in reverse order (the records show the
// order the runs happened in), and each policy's figures are over both runs' requests.
TEST(DemoCliTest, RoundsRunEveryPolicyAgainInMirroredOrder) {
  auto dir = launch::TempDir::Create("hearsay-demo-rounds-");
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  const std::string records = dir.value()->File("records.jsonl");
  const nlohmann::json j =
      DemoJson({"demo", "--json", "--requests", "12", "--rate", "16", "--policies",
                "hearsay,random", "--rounds", "2", "--records", records});
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u) << j.dump(2);
  for (const nlohmann::json& row : j) {
    EXPECT_EQ(row["completed"], 24) << row.dump();
    ASSERT_EQ(row["runs"].size(), 2u) << row.dump();
    for (const nlohmann::json& one : row["runs"]) EXPECT_GT(one["mean_ttft_ms"], 0) << row.dump();
  }

  // The runs in the order the records were written: (policy, round) at each change.
  std::vector<std::pair<std::string, int>> order;
  std::ifstream in(records);
  std::string line;
  while (std::getline(in, line)) {
    const nlohmann::json r = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(r.is_discarded()) << line;
    const std::pair<std::string, int> at = {r["run"].get<std::string>(), r["round"].get<int>()};
    if (order.empty() || order.back() != at) order.push_back(at);
  }
  const std::vector<std::pair<std::string, int>> mirrored = {
      {"hearsay", 1}, {"random", 1}, {"random", 2}, {"hearsay", 2}};
  EXPECT_EQ(order, mirrored);
}

// A number of rounds out of range is refused with the range, before any node starts.
TEST(DemoCliTest, RoundsOutOfRangeAreRefused) {
  for (const char* rounds : {"0", "21"}) {
    clitest::HearsayRun run({"demo", "--rounds", rounds});
    ASSERT_TRUE(run.started());
    ASSERT_TRUE(run.process().Wait(30s).ok()) << run.output();
    EXPECT_NE(run.process().exit_code(), 0) << run.output();
    EXPECT_NE(run.output().find("not in range 1 to 20"), std::string::npos) << run.output();
    EXPECT_TRUE(run.Children().empty()) << run.output();
  }
}

TEST(DemoCliTest, SigintStopsEveryNode) {
  clitest::HearsayRun run({"demo", "--requests", "100000", "--rate", "5"});
  ASSERT_TRUE(run.started());
  ASSERT_TRUE(clitest::Eventually([&] { return run.Children().size() == 4; }, 30s)) << run.output();
  run.process().Signal(SIGINT);
  ASSERT_TRUE(run.process().Wait(30s).ok()) << run.output();
  EXPECT_EQ(run.process().exit_code(), 130) << run.output();
  EXPECT_TRUE(run.Children().empty()) << run.output();
  EXPECT_NE(run.output().find("interrupted"), std::string::npos) << run.output();
}

TEST(DemoCliTest, SigkillOfTheDemoTakesTheNodesDown) {
  clitest::HearsayRun run({"demo", "--requests", "100000", "--rate", "5"});
  ASSERT_TRUE(run.started());
  ASSERT_TRUE(clitest::Eventually([&] { return run.Children().size() == 4; }, 30s)) << run.output();
  run.process().Kill();
  EXPECT_TRUE(clitest::Eventually([&] { return run.Children().empty(); }, 10s))
      << "nodes survived their parent";
}

// The twin's llama settings describe llama-servers: with the simulated engine they are refused
// before any node starts.
TEST(DemoCliTest, TheLlamaTwinsSettingsNeedTheLlamaEngine) {
  for (const char* flag : {"--twin-host-cores", "--twin-engine-preset"}) {
    clitest::HearsayRun run(
        {"demo", "--twin", flag, std::string(flag) == "--twin-host-cores" ? "2" : "consumer"});
    ASSERT_TRUE(run.started());
    ASSERT_TRUE(run.process().Wait(30s).ok()) << run.output();
    EXPECT_EQ(run.process().exit_code(), 1) << run.output();
    EXPECT_NE(run.output().find("are for --engine llama"), std::string::npos) << run.output();
    EXPECT_TRUE(run.Children().empty()) << run.output();
  }
}

}  // namespace
}  // namespace hearsay
