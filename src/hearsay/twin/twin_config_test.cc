#include "hearsay/twin/twin_config.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>

#include "hearsay/node/node.h"
#include "hearsay/sim/sim_run.h"
#include "hearsay/workload/workload.h"

namespace hearsay::twin {
namespace {

// The cluster `hearsay demo` starts by default.
launch::LocalClusterOptions DemoCluster(size_t nodes, const std::string& policy) {
  launch::LocalClusterOptions o;
  o.hearsay_binary = "/bin/hearsay";
  o.nodes = nodes;
  o.policy = policy;
  o.debug_faults = false;
  o.engine_preset = "consumer";
  o.capacity_tokens = 8192;
  return o;
}

loadgen::WorkloadSpec DemoWorkload(uint32_t nodes) {
  loadgen::WorkloadSpec w;
  w.workload = "mmlu";
  w.requests = 300;
  w.rate_per_s = 12.5;
  w.zipf = 1.0;
  w.targets = nodes;
  w.seed = 7;
  return w;
}

sim::SimConfig TwinOf(const launch::LocalClusterOptions& cluster,
                      const loadgen::WorkloadSpec& workload) {
  Result<std::vector<net::DaemonConfig>> nodes = LocalClusterNodeConfigs(cluster);
  EXPECT_TRUE(nodes.ok()) << nodes.status().ToString();
  Result<sim::SimConfig> c = TwinSimConfig(*nodes, workload, TwinNetwork{});
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : sim::SimConfig{};
}

TEST(TwinConfigTest, TheNodesSettingsReachTheSimulator) {
  launch::LocalClusterOptions cluster = DemoCluster(4, "paper");
  cluster.extra_flags = {"--block-size", "32"};
  const sim::SimConfig c = TwinOf(cluster, DemoWorkload(4));
  // What each node runs, parsed from its command line as `hearsay node` parses it.
  Result<std::vector<net::DaemonConfig>> nodes = LocalClusterNodeConfigs(cluster);
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 4u);
  for (const net::DaemonConfig& n : *nodes) {
    EXPECT_EQ(n.policy, "paper");
    EXPECT_EQ(n.engine, "sim");
    EXPECT_EQ(n.engine_preset, "consumer");
    EXPECT_EQ(n.capacity_tokens, 8192u);
    EXPECT_EQ(n.block_size, 32u);
  }
  EXPECT_EQ(c.nodes, 4);
  EXPECT_EQ(c.policy, nodes->front().policy);
  EXPECT_EQ(c.engine_preset, nodes->front().engine_preset);
  EXPECT_EQ(c.capacity_tokens, nodes->front().capacity_tokens);
  EXPECT_EQ(c.block_tokens, nodes->front().block_size);
  // The model the nodes serve: the simulated nodes key its prompts in its cache namespace.
  EXPECT_EQ(c.model, nodes->front().model);
  EXPECT_FALSE(c.model.empty());
  EXPECT_EQ(c.delay_ms, kLoopbackOneWayDelayMs);
  EXPECT_EQ(c.loss, 0);
  // In front of its simulated engine the daemon gives each forward a first-token deadline.
  EXPECT_EQ(c.forward_deadline_factor, double(nodes->front().forward_deadline_factor));
  EXPECT_GT(c.forward_deadline_factor, 0);
}

TEST(TwinConfigTest, TheSimulatedNodesGossipAsTheDaemonDoes) {
  const sim::SimConfig c = TwinOf(DemoCluster(4, "hearsay"), DemoWorkload(4));
  // The daemon leaves node::NodeOptions' gossip settings at their defaults.
  const node::NodeOptions daemon;
  const gossip::Config sim = sim::GossipConfigOf(c);
  EXPECT_EQ(sim.gossip_interval, daemon.gossip.gossip_interval);
  EXPECT_EQ(sim.probe_interval, daemon.gossip.probe_interval);
  EXPECT_EQ(sim.probe_timeout, daemon.gossip.probe_timeout);
  EXPECT_EQ(sim.landmark_stride, daemon.gossip.landmark_stride);
  EXPECT_EQ(sim.gossip_fanout, daemon.gossip.gossip_fanout);
  EXPECT_EQ(sim::PublishIntervalOf(c), daemon.publish_interval);
  // The daemon signs its state by default (net::Daemon::ConfigureSigning): published once per
  // sign interval, which the simulator models without the crypto.
  EXPECT_EQ(sim.signatures, gossip::SignatureMode::kModeled);
  EXPECT_EQ(sim.sign_interval, gossip::Config{}.sign_interval);
}

// The simulator issues exactly the requests the load generator sends: same prompts, arrival
// times and entry nodes (6 nodes: the simulator's own default would draw from 96 clients).
TEST(TwinConfigTest, TheSimulatorIssuesTheLoadGeneratorsRequests) {
  for (uint32_t nodes : {4u, 6u}) {
    for (workload::EntryMode entry :
         {workload::EntryMode::kUniform, workload::EntryMode::kSticky}) {
      loadgen::WorkloadSpec spec = DemoWorkload(nodes);
      spec.entry = entry;
      const sim::SimConfig c = TwinOf(DemoCluster(nodes, "hearsay"), spec);
      Result<std::unique_ptr<workload::Workload>> simulated = sim::MakeRunWorkload(c);
      ASSERT_TRUE(simulated.ok()) << simulated.status().ToString();
      Result<loadgen::RequestSource> sent = loadgen::RequestSource::Create(spec);
      ASSERT_TRUE(sent.ok());
      uint64_t n = 0;
      while (std::optional<loadgen::LoadRequest> real = sent->Next()) {
        std::optional<workload::Request> sim = (*simulated)->Next();
        ASSERT_TRUE(sim.has_value()) << "request " << n;
        EXPECT_EQ(sim->arrival, real->arrival) << "request " << n;
        EXPECT_EQ(sim->entry_node, real->target) << "request " << n;
        EXPECT_EQ(sim->prompt.size(), real->prompt_tokens) << "request " << n;
        EXPECT_NE(real->body.find(workload::RenderAsText(sim->prompt)), std::string::npos);
        ++n;
      }
      EXPECT_EQ(n, spec.requests);
    }
  }
}

TEST(TwinConfigTest, NodesConfiguredUnlikeEachOtherAreRefused) {
  launch::LocalClusterOptions cluster = DemoCluster(3, "hearsay");
  cluster.per_node_flags = {{}, {"--engine-preset", "h100-llama3-8b"}};
  Result<std::vector<net::DaemonConfig>> nodes = LocalClusterNodeConfigs(cluster);
  ASSERT_TRUE(nodes.ok());
  Result<sim::SimConfig> c = TwinSimConfig(*nodes, DemoWorkload(3), TwinNetwork{});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("engine preset"), std::string::npos);
}

TEST(TwinConfigTest, WhatTheSimulatorCannotModelIsRefused) {
  launch::LocalClusterOptions upstream = DemoCluster(2, "hearsay");
  upstream.engine = "openai";
  Result<std::vector<net::DaemonConfig>> nodes = LocalClusterNodeConfigs(upstream);
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ(TwinSimConfig(*nodes, DemoWorkload(2), TwinNetwork{}).status().code(),
            StatusCode::kUnimplemented);

  nodes = LocalClusterNodeConfigs(DemoCluster(2, "hearsay"));
  ASSERT_TRUE(nodes.ok());
  loadgen::WorkloadSpec chat = DemoWorkload(2);
  chat.workload = "chat";
  EXPECT_EQ(TwinSimConfig(*nodes, chat, TwinNetwork{}).status().code(), StatusCode::kUnimplemented);
  chat.api = loadgen::ApiKind::kCompletions;
  EXPECT_TRUE(TwinSimConfig(*nodes, chat, TwinNetwork{}).ok());
  EXPECT_EQ(TwinSimConfig(*nodes, DemoWorkload(3), TwinNetwork{}).status().code(),
            StatusCode::kInvalidArgument);
  TwinNetwork bad;
  bad.one_way_delay_ms = -1;
  EXPECT_EQ(TwinSimConfig(*nodes, DemoWorkload(2), bad).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(TwinConfigTest, ParsesACommandLineAsTheNodeCommandDoes) {
  Result<net::DaemonConfig> c = ParseNodeCommandLine(
      {"ip", "netns", "exec", "node", "/bin/hearsay", "node", "--policy=least-loaded",
       "--debug-faults", "--capacity-tokens", "4096", "--engine-preset", "consumer"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->policy, "least-loaded");
  EXPECT_TRUE(c->debug_faults);
  EXPECT_EQ(c->capacity_tokens, 4096u);
  EXPECT_EQ(c->engine_preset, "consumer");

  EXPECT_FALSE(ParseNodeCommandLine({"hearsay", "node", "--no-such-flag", "1"}).ok());
  EXPECT_FALSE(ParseNodeCommandLine({"hearsay", "node", "--capacity-tokens"}).ok());
  EXPECT_FALSE(ParseNodeCommandLine({"hearsay", "node", "stray"}).ok());
  EXPECT_FALSE(ParseNodeCommandLine({"hearsay", "bench"}).ok());
}

TEST(TwinConfigTest, TheSimCommandLineNamesTheTwinsSettings) {
  const sim::SimConfig c = TwinOf(DemoCluster(4, "paper"), DemoWorkload(4));
  const std::string cmd = SimCommandLine(c);
  for (const char* part :
       {"--nodes 4", "--policy paper", "--engine-preset consumer", "--capacity-tokens 8192",
        "--signatures modeled", "--rate 12.5", "--clients 64", "--seed 7", "--model hearsay-sim"}) {
    EXPECT_NE(cmd.find(part), std::string::npos) << part << " not in " << cmd;
  }
  // The loopback's jitter is the simulator's default; another is named.
  EXPECT_EQ(cmd.find("--delay-jitter"), std::string::npos) << cmd;
  TwinNetwork bed;
  bed.one_way_delay_ms = 20.1;
  bed.jitter = 0.0005;
  Result<std::vector<net::DaemonConfig>> nodes = LocalClusterNodeConfigs(DemoCluster(4, "paper"));
  ASSERT_TRUE(nodes.ok());
  Result<sim::SimConfig> on_bed = TwinSimConfig(*nodes, DemoWorkload(4), bed);
  ASSERT_TRUE(on_bed.ok());
  EXPECT_NE(SimCommandLine(*on_bed).find("--delay-ms 20.1 --delay-jitter 0.0005"),
            std::string::npos)
      << SimCommandLine(*on_bed);
}

}  // namespace
}  // namespace hearsay::twin
