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


#include "cli_test_util.h"
#include "twin_check_util.h"

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
  return clitest::TwinMisses(
      {"demo", "--twin", "--json", "--policies", "hearsay,paper", "--requests", "160"}, 110s, 2,
      kMeanGoal + kMeasuredSpread, [](const std::string& policy) {
        return kHitGoal + kMeasuredHitSpread + (policy == "hearsay" ? kHearsayHitSpread : 0.0);
      });
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
