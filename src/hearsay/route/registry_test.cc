#include "hearsay/route/registry.h"

#include <gtest/gtest.h>

#include <string>

namespace hearsay::route {
namespace {

TEST(Registry, BuildsEveryPolicyByItsName) {
  const std::string want[] = {"local",
                              "random",
                              "round-robin",
                              "least-loaded",
                              "p2c",
                              "paper",
                              "oracle",
                              "hearsay",
                              "sgl-cache-aware",
                              "dynamo-kv",
                              "dynamo-kv-approx",
                              "llmd-precise"};
  ASSERT_EQ(Policies().size(), std::size(want));
  for (size_t i = 0; i < std::size(want); ++i) {
    EXPECT_EQ(Policies()[i].name, want[i]);
    EXPECT_FALSE(Policies()[i].summary.empty());
    auto policy = MakePolicy(want[i], PolicyOptions{});
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    EXPECT_EQ((*policy)->name(), want[i]);
  }
  EXPECT_EQ(PolicyNames(),
            "local, random, round-robin, least-loaded, p2c, paper, oracle, hearsay, "
            "sgl-cache-aware, dynamo-kv, dynamo-kv-approx, llmd-precise");
}

TEST(Registry, UnknownNameListsTheValidOnes) {
  auto policy = MakePolicy("fastest", PolicyOptions{});
  ASSERT_FALSE(policy.ok());
  EXPECT_EQ(policy.status().code(), StatusCode::kNotFound);
  EXPECT_NE(policy.status().message().find("\"fastest\""), std::string::npos);
  EXPECT_NE(policy.status().message().find(PolicyNames()), std::string::npos);
  EXPECT_FALSE(MakePolicy("", PolicyOptions{}).ok());
  EXPECT_FALSE(MakePolicy("Hearsay", PolicyOptions{}).ok());  // names are exact
}

TEST(Registry, OracleIsSimulatorOnlyAndTheDaemonRefusesIt) {
  for (const PolicyInfo& info : Policies()) {
    EXPECT_EQ(info.simulator_only, info.name == "oracle" || info.central) << info.name;
    EXPECT_EQ(FindPolicy(info.name), &info);
  }
  EXPECT_EQ(FindPolicy("nope"), nullptr);
  PolicyOptions daemon;
  daemon.host = Host::kDaemon;
  auto oracle = MakePolicy("oracle", daemon);
  ASSERT_FALSE(oracle.ok());
  EXPECT_EQ(oracle.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(MakePolicy("hearsay", daemon).ok());
  EXPECT_TRUE(MakePolicy("oracle", PolicyOptions{}).ok());
  for (const char* peer : {"sgl-cache-aware", "dynamo-kv", "dynamo-kv-approx", "llmd-precise"}) {
    EXPECT_TRUE(FindPolicy(peer)->central) << peer;
    EXPECT_EQ(MakePolicy(peer, daemon).status().code(), StatusCode::kFailedPrecondition) << peer;
  }
}

TEST(Registry, InvalidOptionsAreRejected) {
  PolicyOptions bad;
  bad.cost.a_ms_per_token = -0.1;
  EXPECT_EQ(MakePolicy("hearsay", bad).status().code(), StatusCode::kInvalidArgument);
  bad = {};
  bad.hearsay.learning_rate = 2;
  EXPECT_EQ(MakePolicy("hearsay", bad).status().code(), StatusCode::kInvalidArgument);
  bad = {};
  bad.hearsay.lease_capacity_log2 = 40;
  EXPECT_EQ(MakePolicy("hearsay", bad).status().code(), StatusCode::kInvalidArgument);
  bad = {};
  bad.hearsay.stale_half_life = Duration::zero();
  EXPECT_EQ(MakePolicy("paper", bad).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hearsay::route
