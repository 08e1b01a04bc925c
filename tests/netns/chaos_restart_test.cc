// Chaos on the test bed, 8 nodes under a steady open-loop load over every entry point:
//   - two nodes killed at once (kill -9), declared dead, then restarted with new generations;
//   - a rolling restart of every node in turn (SIGTERM, restart, next).
// Invariants: every request entering at a running node gets a complete answer (a node being
// killed or restarted takes no new client requests: the load leaves it out while it is down, as
// a load balancer would); no node is ever declared dead or left except the ones the scenario
// stops; the views reconverge within a bound after each restart (the measured times are printed
// in "chaos:" lines, which docs/testbed.md quotes).
#include "chaos_watch.h"

namespace hearsay::integration::chaos_restart_test {
namespace {

constexpr size_t kNodes = 8;
constexpr int kBeforeRequests = 20;
constexpr int kAfterRequests = 20;
// Bounds with wide slack over the times measured on 2 loaded cores (docs/testbed.md).
constexpr auto kDetectionBound = 40s;
// Requests sent after each node of a rolling restart is back, before the next one goes.
constexpr int kRequestsPerStep = 10;

TEST(ChaosRestartTest, TwoKilledAtOnceRestartWithNewGenerations) {
  if (Status why = launch::NetnsBed::CheckAvailable(); !why.ok()) {
    GTEST_SKIP() << "SKIPPED: the test bed needs network namespaces: " << why.ToString();
  }
  constexpr int kKilledRequests = 60;
  const std::set<size_t> victims = {6, 7};
  const std::vector<size_t> others = AllBut(kNodes, victims);
  std::unique_ptr<BedCluster> bc = StartBedCluster(kNodes);
  ASSERT_NE(bc, nullptr);
  LocalCluster& cluster = *bc->cluster;
  std::vector<std::string> false_deaths;
  DeadRoutingWatch watch(cluster, bc->records);
  OpenLoopLoad load(Entries(cluster));

  ASSERT_TRUE(testutil::Eventually([&] { return load.sent_in_phase() >= kBeforeRequests; }, 60s));
  load.SetPhase("killed");
  for (size_t v : victims) load.Exclude(v, true);
  for (size_t v : victims) ASSERT_TRUE(cluster.Kill(v).ok());
  const auto killed = Clock::now();
  Status detected = cluster.WaitForViews({victims.begin(), victims.end()}, kDetectionBound);
  const long long detection = Millis(Clock::now() - killed);
  EXPECT_TRUE(detected.ok()) << detected.ToString();
  ASSERT_TRUE(testutil::Eventually(
      [&] {
        for (std::string& f : DeadAmong(cluster, others, others)) false_deaths.push_back(f);
        return load.sent_in_phase() >= kKilledRequests;
      },
      120s));

  load.SetPhase("restarted");
  const auto restart = Clock::now();
  for (size_t v : victims) {
    Status rejoined = cluster.Restart(v);  // waits until every view lists every running node
    ASSERT_TRUE(rejoined.ok()) << rejoined.ToString();
    load.Exclude(v, false);
  }
  const long long rejoin = Millis(Clock::now() - restart);
  ASSERT_TRUE(testutil::Eventually([&] { return load.sent_in_phase() >= kAfterRequests; }, 60s));
  EXPECT_TRUE(cluster.WaitForViews({}, 10s).ok());
  const std::vector<Outcome> outcomes = load.Finish();
  const std::string figures = CheckOutcomes(outcomes, {"before", "killed", "restarted"}, victims);
  std::printf(
      "chaos: kill -9 of node-6 and node-7 of %zu at once:%s both declared dead by all %lld ms "
      "after the kill (bound %lld ms); both restarted and all alive in every view %lld ms after "
      "the first restart began\n",
      kNodes, figures.c_str(), detection, Millis(kDetectionBound), rejoin);
  Report("kill9-two-restart", outcomes, {"before", "killed", "restarted"}, rejoin / 1000.0,
         watch.Finish(outcomes));
  EXPECT_TRUE(false_deaths.empty()) << "false death: " << false_deaths.front();
}

TEST(ChaosRestartTest, RollingRestartOfEveryNodeLosesNoRequest) {
  if (Status why = launch::NetnsBed::CheckAvailable(); !why.ok()) {
    GTEST_SKIP() << "SKIPPED: the test bed needs network namespaces: " << why.ToString();
  }
  std::unique_ptr<BedCluster> bc = StartBedCluster(kNodes);
  ASSERT_NE(bc, nullptr);
  LocalCluster& cluster = *bc->cluster;
  std::vector<std::string> false_deaths;
  DeadRoutingWatch watch(cluster, bc->records);
  OpenLoopLoad load(Entries(cluster));

  ASSERT_TRUE(testutil::Eventually([&] { return load.sent_in_phase() >= kBeforeRequests; }, 60s));
  load.SetPhase("rolling");
  const auto rolling = Clock::now();
  long long slowest_step = 0;
  for (size_t i = 0; i < kNodes; ++i) {
    const auto step = Clock::now();
    load.Exclude(i, true);
    Status stopped = cluster.Stop(i);  // SIGTERM: a graceful leave and drain
    EXPECT_TRUE(stopped.ok()) << stopped.ToString();
    for (std::string& f : DeadAmong(cluster, AllBut(kNodes, {i}), AllBut(kNodes, {i}))) {
      false_deaths.push_back(f);
    }
    Status rejoined = cluster.Restart(i);  // waits until every view lists every node alive
    ASSERT_TRUE(rejoined.ok()) << rejoined.ToString();
    load.Exclude(i, false);
    slowest_step = std::max(slowest_step, Millis(Clock::now() - step));
    // The next node goes only once the load has run over the new one for a while, as an
    // operator's rolling restart waits for each node to take traffic again.
    const int sent = load.sent_in_phase();
    ASSERT_TRUE(
        testutil::Eventually([&] { return load.sent_in_phase() >= sent + kRequestsPerStep; }, 60s));
  }
  const long long total = Millis(Clock::now() - rolling);
  load.SetPhase("after");
  ASSERT_TRUE(testutil::Eventually([&] { return load.sent_in_phase() >= kAfterRequests; }, 60s));
  EXPECT_TRUE(cluster.WaitForViews({}, 10s).ok());
  const std::vector<Outcome> outcomes = load.Finish();
  const std::string figures = CheckOutcomes(outcomes, {"before", "rolling", "after"});
  std::printf(
      "chaos: rolling restart (SIGTERM, restart, next) of all %zu nodes:%s %lld ms in all, the "
      "slowest step (stop, restart, every view all alive) %lld ms; %d requests between steps\n",
      kNodes, figures.c_str(), total, slowest_step, kRequestsPerStep);
  Report("rolling-restart", outcomes, {"before", "rolling", "after"}, slowest_step / 1000.0,
         watch.Finish(outcomes));
  EXPECT_TRUE(false_deaths.empty()) << "false death: " << false_deaths.front();
}

}  // namespace
}  // namespace hearsay::integration::chaos_restart_test
