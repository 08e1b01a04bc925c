// Chaos on the test bed, 8 nodes under a steady open-loop load over every entry point, with one
// node degraded but up:
//   - 20% loss on everything node-7 sends (netem where the kernel has it, else the node's own
//     fault setting: gossip datagrams lost, POST /debug/faults; the output says which);
//   - node-7's engine stalls (the sim engine's slowdown fault, 1000x: an iteration takes
//     seconds) while its node, gossip and HTTP stay up. node-7 routes with the `local` policy, so
//     it serves what enters there and holds prefixes the others route to; and it holds one long
//     prefix of its own, which requests sent to the other entries during the stall share.
// Invariants: every request entering at another node gets a complete answer (a forward to the
// stalled engine is given up at its first-token deadline and retried elsewhere), and some were
// forwarded to the stalled engine; no node but node-7 is ever declared dead; every view lists
// every node alive again within a bound after the fault ends. The figures are printed in
// "chaos:" lines, which docs/testbed.md quotes.
#include "chaos_watch.h"

namespace hearsay::integration::chaos_degraded_test {
namespace {

constexpr size_t kNodes = 8;
constexpr size_t kFaulted = 7;
constexpr int kBeforeRequests = 20;
constexpr int kFaultRequests = 100;
constexpr int kAfterRequests = 30;
constexpr auto kReconvergeBound = 20s;

// The state node-0 gives node-7 now ("alive", "suspect", ...).
std::string StateSeenByNodeZero(LocalCluster& cluster) {
  Result<launch::ClusterView> view = cluster.View(0);
  const launch::MemberInfo* m = view.ok() ? view->Find(cluster.node(kFaulted).node_id) : nullptr;
  return m != nullptr ? m->state : "unlisted";
}

// True when every other node's view lists node `holder` with at least the cache summary entries
// it lists for itself now.
bool OthersKnowWhatItHolds(LocalCluster& cluster, size_t holder) {
  Result<launch::ClusterView> own = cluster.View(holder);
  const launch::MemberInfo* self = own.ok() ? own->Find(cluster.node(holder).node_id) : nullptr;
  if (self == nullptr || self->cache_keys == 0) return false;
  for (size_t i = 0; i < cluster.size(); ++i) {
    if (i == holder) continue;
    Result<launch::ClusterView> view = cluster.View(i);
    const launch::MemberInfo* m = view.ok() ? view->Find(self->node_id) : nullptr;
    if (m == nullptr || m->cache_keys < self->cache_keys) return false;
  }
  return true;
}

// Routing attempts in the decision records, by entries other than `member`, that chose `member`
// within [from_ms, to_ms] (the steady clock of SteadyMs).
size_t AttemptsSentTo(const std::vector<std::string>& records, const std::string& member,
                      double from_ms, double to_ms) {
  size_t n = 0;
  for (const std::string& file : records) {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
      Result<std::vector<launch::Routing>> routings = launch::RoutingsOfRecordLine(line);
      if (!routings.ok()) continue;
      for (const launch::Routing& r : *routings) {
        if (r.entry != member && r.member == member && r.earliest_ms >= from_ms &&
            r.earliest_ms <= to_ms) {
          ++n;
        }
      }
    }
  }
  return n;
}

TEST(ChaosDegradedTest, OneNodeWithTwentyPercentLossLosesNothingAndKillsNobody) {
  if (Status why = launch::NetnsBed::CheckAvailable(); !why.ok()) {
    GTEST_SKIP() << "SKIPPED: the test bed needs network namespaces: " << why.ToString();
  }
  std::unique_ptr<BedCluster> bc = StartBedCluster(kNodes);
  ASSERT_NE(bc, nullptr);
  LocalCluster& cluster = *bc->cluster;
  const std::vector<size_t> all = AllBut(kNodes, {});
  std::vector<std::string> deaths;
  std::set<std::string> states_of_faulted;
  DeadRoutingWatch watch(cluster, bc->records);
  OpenLoopLoad load(Entries(cluster));

  ASSERT_TRUE(testutil::Eventually([&] { return load.sent_in_phase() >= kBeforeRequests; }, 60s));
  load.SetPhase("lossy");
  ASSERT_TRUE(bc->DelayAndLose(kFaulted, 0, 0.2).ok());
  ASSERT_TRUE(testutil::Eventually(
      [&] {
        for (std::string& f : DeadAmong(cluster, all, all)) deaths.push_back(f);
        states_of_faulted.insert(StateSeenByNodeZero(cluster));
        return load.sent_in_phase() >= kFaultRequests;
      },
      120s));
  load.SetPhase("after");
  ASSERT_TRUE(bc->DelayAndLose(kFaulted, 0, 0).ok());
  const auto healed = Clock::now();
  Status converged = cluster.WaitForViews({}, kReconvergeBound);
  const long long reconverge = Millis(Clock::now() - healed);
  EXPECT_TRUE(converged.ok()) << converged.ToString();
  ASSERT_TRUE(testutil::Eventually([&] { return load.sent_in_phase() >= kAfterRequests; }, 60s));
  const std::vector<Outcome> outcomes = load.Finish();
  const std::string figures = CheckOutcomes(outcomes, {"before", "lossy", "after"});
  std::string states;
  for (const std::string& s : states_of_faulted) states += " " + s;
  std::printf(
      "chaos: 20%% loss on node-%zu of %zu (%s):%s node-0 saw it:%s; all alive in every view "
      "%lld ms after the loss ended (bound %lld ms)\n",
      kFaulted, kNodes, bc->injection(), figures.c_str(), states.c_str(), reconverge,
      Millis(kReconvergeBound));
  Report("loss-20pct", outcomes, {"before", "lossy", "after"}, reconverge / 1000.0,
         watch.Finish(outcomes));
  // 20% loss must not cost a death: SWIM's indirect probes and Lifeguard's refutation cover it.
  EXPECT_TRUE(deaths.empty()) << "declared dead under 20% loss: " << deaths.front();
}

TEST(ChaosDegradedTest, AStalledEngineBehindALiveNodeCostsOnlyItsOwnEntry) {
  if (Status why = launch::NetnsBed::CheckAvailable(); !why.ok()) {
    GTEST_SKIP() << "SKIPPED: the test bed needs network namespaces: " << why.ToString();
  }
  LocalClusterOptions options = ClusterOptions(kNodes);
  options.per_node_flags.resize(kNodes);
  options.per_node_flags[kFaulted] = {"--policy", "local"};
  std::unique_ptr<BedCluster> bc = StartBedCluster(std::move(options));
  ASSERT_NE(bc, nullptr);
  LocalCluster& cluster = *bc->cluster;
  const std::vector<size_t> all = AllBut(kNodes, {});
  std::vector<std::string> deaths;
  DeadRoutingWatch watch(cluster, bc->records);
  OpenLoopLoad load(Entries(cluster));

  // node-7 serves a long prompt of its own, and every node learns that it holds it.
  const std::string held = Words("stalled-holder", 1024);
  const Outcome warm =
      StreamOne(cluster.node(kFaulted).http_address, kFaulted, "before", held + " q0", 1);
  ASSERT_EQ(warm.failure, "");
  ASSERT_EQ(warm.served_by, cluster.node(kFaulted).node_id);
  ASSERT_TRUE(testutil::Eventually([&] { return OthersKnowWhatItHolds(cluster, kFaulted); }, 30s));
  ASSERT_TRUE(testutil::Eventually([&] { return load.sent_in_phase() >= kBeforeRequests; }, 60s));

  load.SetPhase("stalled");
  ASSERT_TRUE(cluster.SlowEngine(kFaulted, 1000).ok());
  const double stalled_ms = SteadyMs(Clock::now());
  // Requests for node-7's prefix at every other entry: their best holder's engine is stalled.
  std::vector<Outcome> to_holder;
  for (size_t i = 0; i < kFaulted; ++i) {
    to_holder.push_back(
        StreamOne(cluster.node(i).http_address, i, "stalled", held + " q" + std::to_string(i + 1)));
  }
  ASSERT_TRUE(testutil::Eventually(
      [&] {
        // The node is up: nobody may declare anyone dead, node-7 included.
        for (std::string& f : DeadAmong(cluster, all, all)) deaths.push_back(f);
        return load.sent_in_phase() >= kFaultRequests;
      },
      120s));
  load.SetPhase("after");
  ASSERT_TRUE(cluster.SlowEngine(kFaulted, 1).ok());
  const auto restored = Clock::now();
  const double restored_ms = SteadyMs(restored);
  Status converged = cluster.WaitForViews({}, kReconvergeBound);
  const long long reconverge = Millis(Clock::now() - restored);
  EXPECT_TRUE(converged.ok()) << converged.ToString();
  ASSERT_TRUE(testutil::Eventually([&] { return load.sent_in_phase() >= kAfterRequests; }, 60s));
  const std::vector<Outcome> outcomes = load.Finish();
  // Requests entering at node-7 and served by its own engine wait for it: they may fail (the
  // client gives up after 20 s); every other entry's requests must complete.
  const std::string figures = CheckOutcomes(outcomes, {"before", "stalled", "after"}, {kFaulted});
  std::printf(
      "chaos: node-%zu's engine stalled (1000x slower) behind a live node, of %zu:%s slowest at "
      "a healthy entry while stalled %lld ms\n",
      kFaulted, kNodes, figures.c_str(),
      static_cast<long long>(Slowest(outcomes, "stalled", {kFaulted}).count()));
  Report("engine-stall", outcomes, {"before", "stalled", "after"}, reconverge / 1000.0,
         watch.Finish(outcomes));
  EXPECT_LT(Slowest(outcomes, "stalled", {kFaulted}), kSilentPeerBound);
  EXPECT_TRUE(deaths.empty()) << "false death: " << deaths.front();
  // The requests for node-7's prefix: each answered in full by another node, and some were sent
  // to the stalled engine first (the scenario exercises the first-token deadline).
  std::chrono::milliseconds slowest{0};
  for (const Outcome& o : to_holder) {
    EXPECT_EQ(o.failure, "") << "a request for node-7's prefix via node-" << o.entry;
    EXPECT_NE(o.served_by, cluster.node(kFaulted).node_id);
    slowest = std::max(slowest, o.latency);
  }
  EXPECT_LT(slowest, kSilentPeerBound);
  const size_t sent_to_stalled =
      AttemptsSentTo(bc->records, cluster.node(kFaulted).node_id, stalled_ms, restored_ms);
  EXPECT_GT(sent_to_stalled, 0u) << "no request for node-7's prefix was sent to it";
  std::printf(
      "chaos: %zu requests for the stalled node's prefix at the other entries, answered elsewhere "
      "(slowest %lld ms); %zu routing attempts sent to the stalled node while it stalled\n",
      to_holder.size(), static_cast<long long>(slowest.count()), sent_to_stalled);
}

}  // namespace
}  // namespace hearsay::integration::chaos_degraded_test
