// The twin of `hearsay demo --engine llama`: the simulator run it builds from the llama demo's
// nodes (launch::SetUpLlamaDemoNodes) and servers (launch::LlamaDemoServerOptions).
#include <gtest/gtest.h>

#include "hearsay/launch/llama_servers.h"
#include "hearsay/launch/local_cluster.h"
#include "hearsay/sim/sim_run.h"
#include "hearsay/twin/twin_config.h"

namespace hearsay::twin {
namespace {

// The cluster `hearsay demo --engine llama` starts: every node in front of its own llama-server.
launch::LocalClusterOptions LlamaDemoCluster(size_t nodes, const std::string& policy) {
  launch::LocalClusterOptions o;
  o.hearsay_binary = "/bin/hearsay";
  o.nodes = nodes;
  o.policy = policy;
  o.debug_faults = false;
  launch::SetUpLlamaDemoNodes(o);
  for (size_t i = 0; i < nodes; ++i) {
    o.per_node_flags.push_back({"--upstream", "http://127.0.0.1:" + std::to_string(9000 + i)});
  }
  return o;
}

// The llama demo's workload (its defaults: 120 requests at 2 req/s).
loadgen::WorkloadSpec LlamaDemoWorkload(uint32_t nodes) {
  loadgen::WorkloadSpec w;
  w.workload = "mmlu";
  w.requests = 120;
  w.rate_per_s = 2;
  w.zipf = 1.0;
  w.targets = nodes;
  w.seed = 3;
  return w;
}

Result<sim::SimConfig> LlamaTwin(const launch::LocalClusterOptions& cluster,
                                 const std::optional<TwinUpstream>& upstream) {
  HEARSAY_ASSIGN_OR_RETURN(std::vector<net::DaemonConfig> nodes, LocalClusterNodeConfigs(cluster));
  return TwinSimConfig(nodes, LlamaDemoWorkload(static_cast<uint32_t>(cluster.nodes)),
                       TwinNetwork{}, upstream);
}

TEST(LlamaTwinTest, TheServersAreModelledInNodeTokensWithTheirSlots) {
  // The servers the demo starts: their cache is what the nodes are configured with.
  const launch::LlamaServerOptions servers = launch::LlamaDemoServerOptions(4, "/tmp");
  EXPECT_EQ(servers.servers, 4u);
  EXPECT_EQ(servers.slots, launch::kLlamaDemoSlots);
  EXPECT_EQ(servers.cache_ram_mib, launch::kLlamaDemoCacheRamMib);
  // 4 KiB of KV per token of the small model.
  EXPECT_EQ(launch::kLlamaDemoCapacityTokens * 4096,
            static_cast<uint64_t>(launch::kLlamaDemoCacheRamMib) << 20);

  const launch::LocalClusterOptions cluster = LlamaDemoCluster(4, "paper");
  Result<std::vector<net::DaemonConfig>> nodes = LocalClusterNodeConfigs(cluster);
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  for (const net::DaemonConfig& n : *nodes) {
    EXPECT_EQ(n.engine, "openai");
    EXPECT_EQ(n.upstream_flavor, "llamacpp");
    EXPECT_EQ(n.capacity_tokens, launch::kLlamaDemoCapacityTokens);
    EXPECT_EQ(n.engine_preset, launch::kLlamaDemoEnginePreset);  // priced as the twin's engines
    EXPECT_EQ(n.tokenizer, "bytes");
  }

  // The four servers share the demo machine's cores (say two).
  Result<sim::SimConfig> c = LlamaTwin(cluster, LlamaDemoUpstream("", 2));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->nodes, 4);
  EXPECT_EQ(c->policy, "paper");
  EXPECT_EQ(c->engine_preset, "llama-tiny-cpu");
  // 16,384 llama tokens hold 7,282 node tokens (2.25 llama tokens per node token).
  EXPECT_EQ(c->capacity_tokens, 7282u);
  EXPECT_EQ(c->max_running, static_cast<uint32_t>(servers.slots));
  EXPECT_EQ(c->engine_cache, "slots");  // whole sequences in slots and the host cache
  EXPECT_EQ(c->host_cores, 2.0);
  EXPECT_EQ(c->block_tokens, nodes->front().block_size);
  EXPECT_EQ(c->model, nodes->front().model);
  EXPECT_EQ(c->requests, 120u);
  EXPECT_EQ(c->rate_per_s, 2.0);
  EXPECT_EQ(c->seed, 3u);
  EXPECT_EQ(c->signatures, "modeled");
  EXPECT_EQ(c->delay_ms, kLoopbackOneWayDelayMs);
  // In front of upstream engines the daemon gives forwards no first-token deadline.
  EXPECT_EQ(c->forward_deadline_factor, 0);

  // The printed command reproduces it, slots included.
  const std::string cmd = SimCommandLine(*c);
  for (const char* part : {"--engine-preset llama-tiny-cpu", "--capacity-tokens 7282",
                           "--max-running 4", "--engine-cache slots", "--host-cores 2", "--rate 2",
                           "--requests 120", "--seed 3", "--forward-deadline-factor 0"}) {
    EXPECT_NE(cmd.find(part), std::string::npos) << part << " not in " << cmd;
  }
}

TEST(LlamaTwinTest, CalibratedSpeedsReplaceThePreset) {
  // What `hearsay calibrate` prints for a server.
  const std::string calibrated = "t0=2.5,a=0.41,b=0,d1=4,d2=0";
  Result<sim::SimConfig> c =
      LlamaTwin(LlamaDemoCluster(4, "hearsay"), LlamaDemoUpstream(calibrated));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->engine_preset, calibrated);
  EXPECT_NE(SimCommandLine(*c).find("--engine-preset " + calibrated), std::string::npos);
  // The simulator runs it.
  c->requests = 20;
  Result<sim::SimSummary> run = sim::RunSim(*c);
  ASSERT_TRUE(run.ok()) << run.status().ToString();

  EXPECT_EQ(
      LlamaTwin(LlamaDemoCluster(4, "hearsay"), LlamaDemoUpstream("t0=1,a=2")).status().code(),
      StatusCode::kInvalidArgument);
  EXPECT_EQ(LlamaTwin(LlamaDemoCluster(4, "hearsay"), LlamaDemoUpstream("no-such-preset"))
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST(LlamaTwinTest, WhatTheTwinCannotKnowOfAnUpstreamIsRefused) {
  // Without the servers' description, no node configuration says their speed or slots.
  EXPECT_EQ(LlamaTwin(LlamaDemoCluster(4, "hearsay"), std::nullopt).status().code(),
            StatusCode::kUnimplemented);
  // Keyed with the engine's tokenizer, the nodes count tokens the simulator's requests do not.
  launch::LocalClusterOptions engine_tokens = LlamaDemoCluster(4, "hearsay");
  engine_tokens.extra_flags.insert(engine_tokens.extra_flags.end(), {"--tokenizer", "engine"});
  EXPECT_EQ(LlamaTwin(engine_tokens, LlamaDemoUpstream()).status().code(),
            StatusCode::kUnimplemented);
  TwinUpstream bad = LlamaDemoUpstream();
  bad.engine_tokens_per_node_token = 0;
  EXPECT_EQ(LlamaTwin(LlamaDemoCluster(4, "hearsay"), bad).status().code(),
            StatusCode::kInvalidArgument);
  bad = LlamaDemoUpstream("", -1);
  EXPECT_EQ(LlamaTwin(LlamaDemoCluster(4, "hearsay"), bad).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hearsay::twin
