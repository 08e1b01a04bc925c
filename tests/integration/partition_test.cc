// A partition between two halves of a 4-node cluster (gossip blocked both ways with
// POST /debug/faults) makes each half declare the other dead; healed, the views reconverge to
// four alive members, and what one half learned during the partition (a cache summary) reaches
// the other.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "hearsay/gossip/config.h"
#include "hearsay/gossip/suspicion.h"
#include "integration_env.h"

namespace hearsay::integration {
namespace {

using Clock = std::chrono::steady_clock;

// How long a 2|2 split may take to be declared on both sides: n probe intervals to suspect, plus
// Lifeguard's longest suspicion timeout (24 s for n = 4): in a 2|2 split a node's suspicion is
// often started by its one same-side peer's accusation, and then no independent confirmation can
// arrive to shorten it; plus 1 s of slack. Lifeguard also stretches a node's probe interval by its
// local-health multiplier (score + 1, up to max_local_health + 1) while its probes fail, which in
// a partition half of them do, and more so on a loaded machine whose acks come late: so the probe
// intervals count at the highest multiplier any node reported while the test waited.
std::chrono::milliseconds PartitionDetectionBound(size_t n, int highest_local_health) {
  const gossip::Config config;
  const gossip::SuspicionBounds bounds = gossip::ComputeSuspicionBounds(
      config.suspicion_mult, config.suspicion_max_mult, n, config.probe_interval);
  const int multiplier = 1 + std::clamp(highest_local_health, 0, config.max_local_health);
  return std::chrono::duration_cast<std::chrono::milliseconds>(
      config.probe_interval * static_cast<int64_t>(n) * multiplier + bounds.max +
      std::chrono::seconds(1));
}

// The highest Lifeguard local-health score (hearsay_gossip_local_health) of any node now; nodes
// that do not answer count as 0.
int HighestLocalHealth(LocalCluster& cluster) {
  int highest = 0;
  for (size_t i = 0; i < cluster.size(); ++i) {
    Result<std::vector<testkit::MetricSample>> m = Metrics(cluster.node(i).http_address);
    if (!m.ok()) continue;
    const std::optional<double> h = testkit::FindMetric(*m, "hearsay_gossip_local_health");
    if (h) highest = std::max(highest, static_cast<int>(*h));
  }
  return highest;
}

// Every node of `side` sees every node of `other` as dead (or left), and its own side alive.
Status HalfSeesOtherDead(LocalCluster& cluster, const std::vector<size_t>& side,
                         const std::vector<size_t>& other) {
  for (size_t i : side) {
    Result<launch::ClusterView> view = cluster.View(i);
    if (!view.ok()) return view.status();
    for (size_t j : other) {
      const launch::MemberInfo* m = view->Find(cluster.node(j).node_id);
      if (m != nullptr && m->state != "dead" && m->state != "left") {
        return UnavailableError(cluster.node(i).node_id + " sees " + m->node_id + " " + m->state);
      }
    }
    for (size_t j : side) {
      const launch::MemberInfo* m = view->Find(cluster.node(j).node_id);
      if (j != i && (m == nullptr || m->state != "alive")) {
        return UnavailableError(cluster.node(i).node_id + " lost its own side's " +
                                cluster.node(j).node_id);
      }
    }
  }
  return OkStatus();
}

Status WaitFor(const std::function<Status()>& check, std::chrono::milliseconds timeout) {
  Status last;
  (void)testutil::Eventually(
      [&] {
        last = check();
        return last.ok();
      },
      timeout);
  return last;
}

TEST(PartitionTest, HalvesSplitThenHealAndReconverge) {
  std::unique_ptr<LocalCluster> cluster = StartCluster(ClusterOptions(4));
  ASSERT_NE(cluster, nullptr);
  const std::vector<size_t> left = {0, 1};
  const std::vector<size_t> right = {2, 3};
  for (size_t i : left) ASSERT_TRUE(cluster->Block(i, right).ok());
  for (size_t i : right) ASSERT_TRUE(cluster->Block(i, left).ok());

  // Each half declares the other dead, within PartitionDetectionBound at the local health the
  // nodes reached meanwhile (sampled with every check).
  const auto blocked_at = Clock::now();
  int highest_health = 0;
  Status split;
  // Polls until the views split, or the detection bound at the health reached so far passes (the
  // outer bound only stops a runaway wait).
  (void)testutil::Eventually(
      [&] {
        highest_health = std::max(highest_health, HighestLocalHealth(*cluster));
        split = HalfSeesOtherDead(*cluster, left, right);
        if (split.ok()) split = HalfSeesOtherDead(*cluster, right, left);
        return split.ok() ||
               Clock::now() - blocked_at > PartitionDetectionBound(cluster->size(), highest_health);
      },
      2min);
  const auto split_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - blocked_at).count();
  ASSERT_TRUE(split.ok()) << "the partition did not split the views within "
                          << PartitionDetectionBound(cluster->size(), highest_health).count()
                          << " ms (highest local health " << highest_health
                          << "): " << split.ToString() << "\n"
                          << cluster->AllLogTails();
  std::printf(
      "partition split: both halves declared the other dead %lld ms after blocking "
      "(highest local health %d, bound %lld ms)\n",
      static_cast<long long>(split_ms), highest_health,
      static_cast<long long>(PartitionDetectionBound(cluster->size(), highest_health).count()));
  // Both halves keep serving their own clients meanwhile.
  for (size_t i = 0; i < cluster->size(); ++i) {
    Result<HttpResponse> r =
        PostCompletion(cluster->node(i).http_address, CompletionBody("during the partition", 2));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200) << r->body;
  }
  // The right half learns a new cache entry while the left cannot hear about it.
  const std::string prefix = Words("partitioned", 400);
  Result<HttpResponse> planted =
      PostCompletion(cluster->node(2).http_address, CompletionBody(prefix + " x", 2));
  ASSERT_TRUE(planted.ok() && planted->status == 200);

  // Heal: every node unblocks; views reconverge (the gossip layer pushes-pulls with dead members
  // every reconnect interval, 2 s, to find healed partitions).
  for (size_t i = 0; i < cluster->size(); ++i) ASSERT_TRUE(cluster->Block(i, {}).ok());
  const auto healed_at = Clock::now();
  Status healed = cluster->WaitForViews({}, 30s);
  ASSERT_TRUE(healed.ok()) << healed.ToString() << "\n" << cluster->AllLogTails();
  std::printf(
      "partition healed: views reconverged %lld ms after unblocking\n",
      static_cast<long long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - healed_at).count()));
  // The cache summary planted during the partition reaches the left half.
  Status learned = WaitFor(
      [&]() -> Status {
        for (size_t i : left) {
          Result<launch::ClusterView> view = cluster->View(i);
          if (!view.ok()) return view.status();
          bool any = false;
          for (size_t j : right) {
            const launch::MemberInfo* m = view->Find(cluster->node(j).node_id);
            any = any || (m != nullptr && m->cache_keys > 0);
          }
          if (!any)
            return UnavailableError(cluster->node(i).node_id +
                                    " has no summary of the right half's cache");
        }
        return OkStatus();
      },
      15s);
  EXPECT_TRUE(learned.ok()) << learned.ToString();
}

}  // namespace
}  // namespace hearsay::integration
