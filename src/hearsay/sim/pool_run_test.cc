// RunSim on pools (SimConfig::cluster): unequal machines, models, and the slowdown fault.
#include <gtest/gtest.h>

#include <string>

#include "hearsay/sim/sim_run.h"

namespace hearsay::sim {
namespace {

SimConfig Pool(const std::string& cluster, const std::string& policy) {
  SimConfig c;
  c.cluster = cluster;
  c.policy = policy;
  c.requests = 800;
  c.warmup_ms = 2000;
  c.record_requests = true;
  return c;
}

TEST(PoolRunTest, TheClusterSpecSetsTheNodesAndTheirSpeedsTheRate) {
  auto fast = RunSim(Pool("h100-llama3-8b:4", "hearsay"));
  ASSERT_TRUE(fast.ok()) << fast.status().ToString();
  EXPECT_EQ(fast->per_node_served.size(), 4u);
  EXPECT_EQ(fast->requests, 800u);
  auto mixed = RunSim(Pool("h100-llama3-8b:2,consumer:2", "hearsay"));
  ASSERT_TRUE(mixed.ok()) << mixed.status().ToString();
  EXPECT_EQ(mixed->per_node_served.size(), 4u);
  EXPECT_EQ(mixed->failed, 0u);
  // Capacity is the sum of the nodes': two consumer cards add far less than two H100s.
  EXPECT_LT(mixed->arrival_rate_per_s, 0.7 * fast->arrival_rate_per_s);
  EXPECT_GT(mixed->arrival_rate_per_s, 0.5 * fast->arrival_rate_per_s);
  // Priced by measured speed, the H100s serve most of the traffic.
  const uint64_t h100 = mixed->per_node_served[0] + mixed->per_node_served[1];
  const uint64_t consumer = mixed->per_node_served[2] + mixed->per_node_served[3];
  EXPECT_GT(h100, 2 * consumer);
}

TEST(PoolRunTest, ASlowedEngineLosesItsShareOfTheTraffic) {
  SimConfig c = Pool("h100-llama3-8b:4", "hearsay");
  c.requests = 3000;
  auto base = RunSim(c);
  c.slow_node = 1;
  c.slow_at_s = 0;
  c.slow_factor = 4;
  auto slow = RunSim(c);
  ASSERT_TRUE(base.ok() && slow.ok());
  EXPECT_LT(slow->per_node_served[1], base->per_node_served[1] / 2);
  EXPECT_GT(slow->mean_ttft_ms, base->mean_ttft_ms);
}

TEST(PoolRunTest, BadPoolConfigsAreRefused) {
  SimConfig c = Pool("h100-llama3-8b:2,nope:1", "hearsay");
  EXPECT_EQ(RunSim(c).status().code(), StatusCode::kNotFound);
  c.cluster = "consumer:0";
  EXPECT_EQ(RunSim(c).status().code(), StatusCode::kInvalidArgument);
  c.cluster = "consumer:2";
  c.slow_node = 2;  // nodes 0 and 1 only
  EXPECT_EQ(RunSim(c).status().code(), StatusCode::kInvalidArgument);
  c.slow_node = 1;
  c.slow_factor = 0;
  EXPECT_EQ(RunSim(c).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hearsay::sim
