#include "hearsay/sim/central_router.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "hearsay/sim/sim_run.h"

namespace hearsay::sim {
namespace {

SimConfig Central(const std::string& policy, int routers = 1) {
  SimConfig c;
  c.nodes = 4;
  c.policy = policy;
  c.routers = routers;
  c.requests = 1500;
  c.warmup_ms = 1000;
  c.zipf = 1.0;
  c.delay_ms = 2.0;
  c.record_requests = true;
  return c;
}

TEST(CentralRouterTest, EveryRequestCrossesTheNetworkBothWays) {
  for (const std::string policy : {"round-robin", "sgl-cache-aware", "dynamo-kv", "llmd-precise"}) {
    auto r = RunSim(Central(policy));
    ASSERT_TRUE(r.ok()) << policy << ": " << r.status().ToString();
    EXPECT_EQ(r->requests, 1500u) << policy;
    EXPECT_EQ(r->failed, 0u) << policy;
    EXPECT_EQ(r->forwarded_frac, 1.0) << policy;
    double min_ttft = 1e9;
    for (const RequestRecord& rec : r->records) min_ttft = std::min(min_ttft, rec.ttft_ms);
    // Router -> engine and back: at least 2 × the one-way delay on every request.
    EXPECT_GE(min_ttft, 2 * 2.0) << policy;
  }
}

TEST(CentralRouterTest, CentralPoliciesNeedARouterAndTheOracleNeedsTheNodes) {
  SimConfig c = Central("dynamo-kv", 0);
  EXPECT_EQ(RunSim(c).status().code(), StatusCode::kInvalidArgument);
  c = Central("oracle", 1);
  EXPECT_EQ(RunSim(c).status().code(), StatusCode::kInvalidArgument);
  c = Central("dynamo-kv", -1);
  EXPECT_EQ(EffectiveRouters(c), 1);
  c.policy = "hearsay";
  EXPECT_EQ(EffectiveRouters(c), 0);
}

TEST(CentralRouterTest, RoutingOnCacheBeatsRoundRobinOnSharedPrefixes) {
  auto rr = RunSim(Central("round-robin"));
  ASSERT_TRUE(rr.ok());
  for (const std::string policy : {"sgl-cache-aware", "dynamo-kv", "llmd-precise"}) {
    auto r = RunSim(Central(policy));
    ASSERT_TRUE(r.ok());
    EXPECT_GT(r->hit_rate, rr->hit_rate) << policy;
  }
}

TEST(CentralRouterTest, SameSeedSameSummary) {
  SimConfig c = Central("dynamo-kv", 3);
  c.replica_sync = true;
  c.record_requests = false;
  auto a = RunSim(c);
  auto b = RunSim(c);
  ASSERT_TRUE(a.ok() && b.ok());
  nlohmann::json ja = ToJson(*a), jb = ToJson(*b);
  for (auto* j : {&ja, &jb}) {
    j->erase("sim_requests_per_wall_s");
    j->erase("wall_seconds");
  }
  EXPECT_EQ(ja, jb);
}

TEST(CentralRouterTest, ReplicasWithOwnViewsMatchLessThanOneRouter) {
  // The gateway's tree sees only its own decisions: four replicas each see a quarter.
  auto one = RunSim(Central("sgl-cache-aware", 1));
  auto four = RunSim(Central("sgl-cache-aware", 4));
  ASSERT_TRUE(one.ok() && four.ok());
  EXPECT_GT(one->hit_rate, four->hit_rate);
  // Dynamo without events predicts from decisions; replica sync shares them.
  SimConfig c = Central("dynamo-kv-approx", 4);
  auto alone = RunSim(c);
  c.replica_sync = true;
  auto synced = RunSim(c);
  ASSERT_TRUE(alone.ok() && synced.ok());
  EXPECT_GT(synced->hit_rate, alone->hit_rate);
}

// A router fed by KV events sends a prompt it has seen served to the engine that served it, once
// that engine's events have reached it.
TEST(CentralRouterTest, TheEventIndexFollowsTheEngines) {
  SimClusterOptions co;
  co.nodes = 4;
  co.delay_ms = 1.0;
  co.policy = "local";
  RouterTier* tier_ptr = nullptr;
  int events = 0;
  co.cache_events = [&](int n, std::span<const prefix::BlockEvent> e) {
    events += static_cast<int>(e.size());
    if (tier_ptr != nullptr) tier_ptr->OnCacheEvents(n, e);
  };
  auto cluster = SimCluster::Create(co);
  ASSERT_TRUE(cluster.ok());
  RouterTierOptions to;
  to.policy = "llmd-precise";
  auto tier = RouterTier::Create(**cluster, to);
  ASSERT_TRUE(tier.ok());
  tier_ptr = tier->get();
  (*cluster)->StartAll();
  (*tier)->Start();
  (*cluster)->scheduler().RunFor(FromMillis(500));

  struct Sink final : ResponseSink {
    void OnFirstToken(uint64_t, const PeerFirstToken& f) override { served.push_back(f.served_by); }
    void OnComplete(uint64_t, const PeerUsage&) override { ++done; }
    void OnError(uint64_t, const Status&, bool) override { ++done; }
    std::vector<NodeId> served;
    int done = 0;
  } sink;
  uint64_t id = 1;
  for (uint32_t family = 0; family < 6; ++family) {
    std::vector<uint32_t> prompt(512);
    for (uint32_t t = 0; t < prompt.size(); ++t) prompt[t] = family * 100000 + t;
    for (int copy = 0; copy < 2; ++copy) {
      PeerRequest r;
      r.id = id++;
      r.prompt = prompt;
      r.max_output_tokens = 4;
      (*tier)->Submit(family, std::move(r), &sink);
      // Drain: the request completes and its events reach the router.
      (*cluster)->scheduler().RunFor(FromMillis(2000));
    }
  }
  ASSERT_EQ(sink.served.size(), 12u);
  EXPECT_GT(events, 0);
  for (size_t i = 0; i < sink.served.size(); i += 2) {
    EXPECT_EQ(sink.served[i + 1], sink.served[i]) << "family " << i / 2;
  }
}

}  // namespace
}  // namespace hearsay::sim
