// Chaos on the test bed: one node's link capped at 1 Mbit/s (tc tbf on its interface, egress)
// under a steady open-loop load over every entry point, then uncapped. Invariants: every request
// gets a complete answer, nobody is declared dead (a slow link is not a dead node), and the views
// stay converged. The figures are printed in a "chaos:" line (docs/testbed.md).
#include "chaos_watch.h"

namespace hearsay::integration {
namespace {

constexpr size_t kNodes = 6;
constexpr size_t kCapped = 5;
constexpr int kCapKbit = 1000;
constexpr int kBeforeRequests = 20;
constexpr int kCappedRequests = 100;
constexpr int kAfterRequests = 20;

TEST(ChaosBandwidthTest, OneNodeCappedAtOneMbitLosesNothingAndKillsNobody) {
  if (Status why = launch::NetnsBed::CheckAvailable(); !why.ok()) {
    GTEST_SKIP() << "SKIPPED: the test bed needs network namespaces: " << why.ToString();
  }
  std::unique_ptr<BedCluster> bc = StartBedCluster(kNodes);
  ASSERT_NE(bc, nullptr);
  launch::NetnsBed& bed = *bc->bed;
  LocalCluster& cluster = *bc->cluster;
  std::vector<size_t> all;
  std::vector<std::string> entries;
  for (size_t i = 0; i < kNodes; ++i) {
    all.push_back(i);
    entries.push_back(cluster.node(i).http_address);
  }
  std::vector<std::string> false_deaths;
  DeadRoutingWatch watch(cluster, bc->records);
  OpenLoopLoad load(entries);

  ASSERT_TRUE(testutil::Eventually([&] { return load.sent_in_phase() >= kBeforeRequests; }, 60s));
  load.SetPhase("capped");
  ASSERT_TRUE(bed.CapBandwidth(kCapped, kCapKbit).ok());
  ASSERT_TRUE(testutil::Eventually(
      [&] {
        for (std::string& f : DeadAmong(cluster, all, all)) false_deaths.push_back(f);
        return load.sent_in_phase() >= kCappedRequests;
      },
      120s));
  load.SetPhase("uncapped");
  ASSERT_TRUE(bed.CapBandwidth(kCapped, 0).ok());
  ASSERT_TRUE(testutil::Eventually([&] { return load.sent_in_phase() >= kAfterRequests; }, 60s));
  const auto uncapped = Clock::now();
  EXPECT_TRUE(cluster.WaitForViews({}, 10s).ok());
  const long long reconverge = Millis(Clock::now() - uncapped);
  const std::vector<Outcome> outcomes = load.Finish();
  const std::string figures = CheckOutcomes(outcomes, {"before", "capped", "uncapped"});
  std::printf("chaos: node-%zu capped at %d kbit/s of %zu nodes:%s\n", kCapped, kCapKbit, kNodes,
              figures.c_str());
  Report("cap-1mbit", outcomes, {"before", "capped", "uncapped"}, reconverge / 1000.0,
         watch.Finish(outcomes));
  EXPECT_TRUE(false_deaths.empty()) << "false death: " << false_deaths.front();
}

}  // namespace
}  // namespace hearsay::integration
