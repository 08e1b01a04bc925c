#include "hearsay/sim/gossip_experiment.h"

#include <gtest/gtest.h>

namespace hearsay::sim {
namespace {

TEST(GossipExperimentTest, SmallRunReportsSaneFigures) {
  GossipExperimentOptions o;
  o.nodes = 8;
  o.duration_s = 12;
  o.churn = 200;
  o.cache_blocks = 1024;
  o.accuracy_queries = 400;
  const nlohmann::json j = RunGossipExperiment(o);
  ASSERT_FALSE(j.contains("error")) << j.dump();
  EXPECT_GT(j["convergence_median_s"].get<double>(), 0.0);
  EXPECT_LT(j["convergence_median_s"].get<double>(), 3.0);
  EXPECT_EQ(j["convergence_p99_s"], j["convergence_median_s"]);  // the deprecated name
  EXPECT_GT(j["detect_s"].get<double>(), 0.0);
  EXPECT_LT(j["detect_s"].get<double>(), 20.0);
  EXPECT_EQ(j["false_deaths"].get<uint64_t>(), 0u);
  // Every node knows every other within the warm-up (8 nodes, no loss).
  EXPECT_GT(j["join_s"].get<double>(), 0.0);
  EXPECT_LT(j["join_s"].get<double>(), o.warmup_s);
  EXPECT_GT(j["bytes_per_node_s"].get<double>(), 0.0);
  EXPECT_GT(j["summary_accuracy"].get<double>(), 0.8);
  EXPECT_GT(j["events_per_node_s"].get<double>(), 100.0);
}

TEST(GossipExperimentTest, SameOptionsSameFigures) {
  GossipExperimentOptions o;
  o.nodes = 5;
  o.duration_s = 6;
  o.churn = 100;
  o.cache_blocks = 512;
  o.accuracy_queries = 100;
  EXPECT_EQ(RunGossipExperiment(o).dump(), RunGossipExperiment(o).dump());
}

// Replicas that share their origin's history (what makes N = 1,024 fit in memory) must not
// change the figures: same seed, same JSON but for the flag itself. Under 30% loss, so that
// deltas are lost, cut, re-sent and snapshotted.
TEST(GossipExperimentTest, SharedReplicasGiveTheSameFigures) {
  GossipExperimentOptions o;
  o.nodes = 10;
  o.loss = 0.3;
  o.duration_s = 10;
  o.churn = 400;
  o.cache_blocks = 1024;
  o.accuracy_queries = 400;
  o.share_replicas = false;
  nlohmann::json own = RunGossipExperiment(o);
  ASSERT_FALSE(own["share_replicas"].get<bool>());
  o.share_replicas = true;
  nlohmann::json shared = RunGossipExperiment(o);
  ASSERT_TRUE(shared["share_replicas"].get<bool>());
  shared["share_replicas"] = false;
  EXPECT_GT(own["entries_received"].get<uint64_t>(), 1000u);
  EXPECT_EQ(own.dump(), shared.dump());
}

// The detection timeline adds up: the first accusation comes before every survivor suspects,
// the last verdict is detect_s (to the 50 ms step), and the last decider waited at least the
// minimum suspicion timeout (3 x 1 s below N = 10). Without loss nobody healthy is suspected.
TEST(GossipExperimentTest, DetectionTraceAddsUp) {
  GossipExperimentOptions o;
  o.nodes = 12;
  o.duration_s = 9;
  o.churn = 200;
  o.cache_blocks = 1024;
  o.accuracy_queries = 100;
  const nlohmann::json j = RunGossipExperiment(o);
  ASSERT_FALSE(j.contains("error")) << j.dump();
  const nlohmann::json& t = j["detect_trace"];
  ASSERT_TRUE(t.contains("last_wait_s")) << t.dump();
  const double detect = j["detect_s"].get<double>();
  EXPECT_GT(detect, 0.0);
  EXPECT_LE(t["first_suspect_s"].get<double>(), t["all_suspect_s"].get<double>());
  EXPECT_LE(t["first_dead_s"].get<double>(), t["last_dead_s"].get<double>());
  EXPECT_NEAR(t["last_dead_s"].get<double>(), detect, 0.051);
  EXPECT_GE(t["last_wait_s"].get<double>(), 3.0 - 1e-6);
  EXPECT_LT(detect, 10.0);
  EXPECT_EQ(j["false_suspicions"].get<uint64_t>(), 0u);
}

// `hearsay sim gossip` shares replicas unless told otherwise (N = 1,024 needs it).
TEST(GossipExperimentTest, SharesReplicasByDefault) {
  EXPECT_TRUE(GossipExperimentOptions{}.share_replicas);
}

TEST(GossipExperimentTest, RejectsBadOptions) {
  GossipExperimentOptions o;
  o.nodes = 1;
  EXPECT_TRUE(RunGossipExperiment(o).contains("error"));
  o.nodes = 4;
  o.loss = 1.5;
  EXPECT_TRUE(RunGossipExperiment(o).contains("error"));
  o.loss = 0;
  o.warmup_s = 0.5;
  EXPECT_TRUE(RunGossipExperiment(o).contains("error"));
}

}  // namespace
}  // namespace hearsay::sim
