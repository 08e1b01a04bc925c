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
  EXPECT_GT(j["convergence_p99_s"].get<double>(), 0.0);
  EXPECT_LT(j["convergence_p99_s"].get<double>(), 3.0);
  EXPECT_GT(j["detect_s"].get<double>(), 0.0);
  EXPECT_LT(j["detect_s"].get<double>(), 20.0);
  EXPECT_EQ(j["false_deaths"].get<uint64_t>(), 0u);
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

TEST(GossipExperimentTest, RejectsBadOptions) {
  GossipExperimentOptions o;
  o.nodes = 1;
  EXPECT_TRUE(RunGossipExperiment(o).contains("error"));
  o.nodes = 4;
  o.loss = 1.5;
  EXPECT_TRUE(RunGossipExperiment(o).contains("error"));
}

}  // namespace
}  // namespace hearsay::sim
