// The digital twin on loopback: `hearsay demo --twin --json` on the simulated engine, and the
// twin's predicted mean TTFT and hit rate held to the measured ones (docs/twin.md).
//
// The goals are 10% on mean TTFT and 0.03 on hit rate. One measured run is itself one draw: on
// this configuration (hearsay and paper, 160 requests each) repeated runs of the same seed spread
// by up to kMeasuredSpread around their mean TTFT and kMeasuredHitSpread around their hit rate
// (docs/twin.md, "Run-to-run spread"), so the test allows the goal plus that spread, and a miss
// must repeat in a second run (a host stall can throw one run further). A twin that models the
// nodes wrongly (another cache size, a 100 ms network, the wrong policy) misses by far more than
// that, so the check can fail.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "cli_test_util.h"

namespace hearsay {
namespace {

using namespace std::chrono_literals;

constexpr double kMeanGoal = 0.10;
constexpr double kHitGoal = 0.03;
constexpr double kMeasuredSpread = 0.10;
constexpr double kMeasuredHitSpread = 0.03;
// Hearsay's hit rate moves most with host stalls (a stalled node's queue makes its peers bounce
// and re-route): with the twin keying prompts in the model's namespace as the daemon does
// (docs/twin.md), four runs at load average 5-6 measured errors of -0.011 to +0.055 against
// -0.008 to -0.004 for paper. Allowed for hearsay on top of the goal and the spread.
constexpr double kHearsayHitSpread = 0.02;

// One demo run with --twin: "" if every policy's twin is within the bounds, else what missed.
std::string RunOnce() {
  clitest::HearsayRun run(
      {"demo", "--twin", "--json", "--policies", "hearsay,paper", "--requests", "160"});
  if (!run.started()) return "the demo did not start";
  if (!run.process().Wait(110s).ok()) return "the demo did not finish: " + run.output();
  if (run.process().exit_code() != 0) return "the demo failed: " + run.output();
  if (!run.Children().empty()) return "hearsay node processes left behind";
  const nlohmann::json j =
      nlohmann::json::parse(clitest::JsonTail(run.output(), '['), nullptr, false);
  if (!j.is_array() || j.size() != 2) return "not two policies: " + run.output();
  std::string misses;
  for (const nlohmann::json& row : j) {
    if (!row.contains("twin_mean_ttft_ms") || !row.contains("twin_p99_ttft_ms") ||
        !row.contains("twin_hit_rate") || row["failed"] != 0) {
      return "a row without the twin's figures or with failures: " + row.dump();
    }
    const double mean = row["mean_ttft_ms"].get<double>();
    const double twin_mean = row["twin_mean_ttft_ms"].get<double>();
    const double error = std::abs(twin_mean - mean) / mean;
    const double hit_error =
        std::abs(row["twin_hit_rate"].get<double>() - row["hit_rate"].get<double>());
    std::printf("%-8s mean TTFT %.1f ms, twin %.1f ms (error %.1f%%); hit rate %.3f, twin %.3f\n",
                row["policy"].get<std::string>().c_str(), mean, twin_mean, 100 * error,
                row["hit_rate"].get<double>(), row["twin_hit_rate"].get<double>());
    const double hit_bound =
        kHitGoal + kMeasuredHitSpread + (row["policy"] == "hearsay" ? kHearsayHitSpread : 0.0);
    if (error > kMeanGoal + kMeasuredSpread || hit_error > hit_bound ||
        row["twin_p99_ttft_ms"].get<double>() <= twin_mean) {
      misses += row.dump() + "\n";
    }
  }
  return misses;
}

// A measured run is one draw, and a host stall can throw one far (docs/twin.md): the twin
// misses only if a second run misses too.
TEST(TwinCliTest, TheTwinPredictsTheLoopbackDemo) {
  if (clitest::kSanitizedBuild) {
    // A sanitized node is several times slower per request than the one the twin models.
    GTEST_SKIP() << "\n\n*** SKIPPED: a sanitizer build's timing says nothing about the twin ***\n";
  }
  const std::string first = RunOnce();
  if (first.empty()) return;
  std::printf("first run missed, running again:\n%s", first.c_str());
  const std::string second = RunOnce();
  EXPECT_EQ(second, "") << "the twin missed twice; first run:\n" << first;
}

}  // namespace
}  // namespace hearsay
