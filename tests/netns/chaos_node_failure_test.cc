// Chaos on the test bed: one node of 6 fails under a steady open-loop load over every entry point.
//   - kill -9: the others declare it dead (the detection time is printed), then it restarts with
//     a new generation and rejoins;
//   - a gray failure: SIGSTOP (its sockets stay open, nothing answers) for a phase, then SIGCONT.
// Invariants: every request entering at a healthy node gets a complete answer (the failed node
// takes no new client requests: the load leaves it out while it is down, as a load balancer
// would); no node other than the failed one is ever declared dead; the views reconverge within a
// bound after the node is back (the measured times are printed in "chaos:" lines).
#include <csignal>

#include "chaos_watch.h"

namespace hearsay::integration::chaos_node_failure_test {
namespace {

constexpr size_t kNodes = 6;
constexpr size_t kVictim = 5;
constexpr int kBeforeRequests = 20;
constexpr int kFaultRequests = 100;
constexpr int kAfterRequests = 30;
// Bounds with wide slack over the times measured on 2 loaded cores (docs/testbed.md).
constexpr auto kDetectionBound = 40s;
constexpr auto kReconvergeBound = 20s;

std::vector<size_t> Others() {
  std::vector<size_t> out;
  for (size_t i = 0; i < kNodes; ++i) {
    if (i != kVictim) out.push_back(i);
  }
  return out;
}

TEST(ChaosNodeFailureTest, KillNineThenRestartLosesNoRequestAtHealthyEntries) {
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
  load.SetPhase("killed");
  load.Exclude(kVictim, true);
  ASSERT_TRUE(cluster.Kill(kVictim).ok());
  const auto killed = Clock::now();
  Status detected = cluster.WaitForViews({kVictim}, kDetectionBound);
  const long long detection = Millis(Clock::now() - killed);
  EXPECT_TRUE(detected.ok()) << detected.ToString();
  ASSERT_TRUE(testutil::Eventually(
      [&] {
        for (std::string& f : DeadAmong(cluster, Others(), Others())) false_deaths.push_back(f);
        return load.sent_in_phase() >= kFaultRequests;
      },
      120s));

  load.SetPhase("restarted");
  const auto restart = Clock::now();
  Status rejoined = cluster.Restart(kVictim);  // waits until every view lists all alive
  const long long rejoin = Millis(Clock::now() - restart);
  ASSERT_TRUE(rejoined.ok()) << rejoined.ToString();
  load.Exclude(kVictim, false);
  ASSERT_TRUE(testutil::Eventually([&] { return load.sent_in_phase() >= kAfterRequests; }, 60s));
  EXPECT_TRUE(cluster.WaitForViews({}, 10s).ok());
  const std::vector<Outcome> outcomes = load.Finish();
  const std::string figures = CheckOutcomes(outcomes, {"before", "killed", "restarted"}, {kVictim});
  std::printf(
      "chaos: kill -9 of node-%zu of %zu:%s declared dead by all %lld ms after the kill "
      "(bound %lld ms); restarted and all alive in every view %lld ms after the restart\n",
      kVictim, kNodes, figures.c_str(), detection, Millis(kDetectionBound), rejoin);
  Report("kill9-restart", outcomes, {"before", "killed", "restarted"}, rejoin / 1000.0,
         watch.Finish(outcomes));
  EXPECT_TRUE(false_deaths.empty()) << "false death: " << false_deaths.front();
}

TEST(ChaosNodeFailureTest, GrayFailureSigstopThenSigcont) {
  if (Status why = launch::NetnsBed::CheckAvailable(); !why.ok()) {
    GTEST_SKIP() << "SKIPPED: the test bed needs network namespaces: " << why.ToString();
  }
  std::unique_ptr<BedCluster> bc =
      StartBedCluster(kNodes, {"--forward-timeout-ms", kLongForwardTimeoutMs});
  ASSERT_NE(bc, nullptr);
  LocalCluster& cluster = *bc->cluster;
  std::vector<std::string> false_deaths;
  DeadRoutingWatch watch(cluster, bc->records);
  OpenLoopLoad load(Entries(cluster));

  ASSERT_TRUE(testutil::Eventually([&] { return load.sent_in_phase() >= kBeforeRequests; }, 60s));
  load.SetPhase("stopped");
  load.Exclude(kVictim, true);
  ASSERT_TRUE(cluster.Signal(kVictim, SIGSTOP).ok());
  ASSERT_TRUE(testutil::Eventually(
      [&] {
        for (std::string& f : DeadAmong(cluster, Others(), Others())) false_deaths.push_back(f);
        return load.sent_in_phase() >= kFaultRequests;
      },
      120s));
  Result<launch::ClusterView> view0 = cluster.View(0);
  const launch::MemberInfo* seen =
      view0.ok() ? view0->Find(cluster.node(kVictim).node_id) : nullptr;
  const std::string state = seen != nullptr ? seen->state : "unlisted";

  load.SetPhase("resumed");
  ASSERT_TRUE(cluster.Signal(kVictim, SIGCONT).ok());
  const auto resumed = Clock::now();
  Status converged = cluster.WaitForViews({}, kReconvergeBound);
  const long long reconverge = Millis(Clock::now() - resumed);
  EXPECT_TRUE(converged.ok()) << converged.ToString() << "\n" << cluster.AllLogTails(15);
  load.Exclude(kVictim, false);
  ASSERT_TRUE(testutil::Eventually([&] { return load.sent_in_phase() >= kAfterRequests; }, 60s));
  EXPECT_TRUE(cluster.WaitForViews({}, 10s).ok());
  const std::vector<Outcome> outcomes = load.Finish();
  const std::string figures = CheckOutcomes(outcomes, {"before", "stopped", "resumed"}, {kVictim});
  // The stopped node's kernel still takes connections and bytes, and nothing answers: a forward
  // there must be given up at its first-token deadline, not the 30 s forward timeout.
  EXPECT_LT(Slowest(outcomes, "stopped", {kVictim}), kSilentPeerBound);
  std::printf(
      "chaos: SIGSTOP of node-%zu of %zu for %d requests:%s node-0 saw it %s before "
      "SIGCONT; views reconverged %lld ms after SIGCONT (bound %lld ms)\n",
      kVictim, kNodes, kFaultRequests, figures.c_str(), state.c_str(), reconverge,
      Millis(kReconvergeBound));
  Report("sigstop-sigcont", outcomes, {"before", "stopped", "resumed"}, reconverge / 1000.0,
         watch.Finish(outcomes));
  EXPECT_TRUE(false_deaths.empty()) << "false death: " << false_deaths.front();
}

}  // namespace
}  // namespace hearsay::integration::chaos_node_failure_test
