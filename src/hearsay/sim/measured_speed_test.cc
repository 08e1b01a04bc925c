// Pricing members by their measured engine speed (node::NodeOptions::price_by_measured_prefill),
// as the daemon does in front of real engines: the router's cost model is the default one, the
// engines are far slower (a CPU llama.cpp), and only the measurements tell.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "hearsay/engine/cost_model.h"
#include "hearsay/node/decision_record.h"
#include "hearsay/node/node.h"
#include "hearsay/sim/sim_cluster.h"
#include "hearsay/sim/test_requests.h"

namespace hearsay::sim {
namespace {

struct FirstTokens final : ResponseSink {
  std::map<uint64_t, uint32_t> cached;  // by request id, once its first token came
  std::map<uint64_t, bool> done;
  void OnFirstToken(uint64_t id, const PeerFirstToken& f) override { cached[id] = f.cached_tokens; }
  void OnComplete(uint64_t id, const PeerUsage&) override { done[id] = true; }
  void OnError(uint64_t id, const Status&, bool) override { done[id] = true; }
};

struct RouteLog final : node::DecisionRecorder {
  std::vector<node::RouteRecord> routes;
  void OnRoute(const node::RouteRecord& r) override { routes.push_back(r); }
  void OnServe(const node::ServeRecord&) override {}
};

// An entry node whose own engine has not answered yet prices it as its measured peers, not at
// the router's default speed (10x faster per token than this engine): it sends a prompt to the peer
// that holds its prefix instead of computing it cold at home.
TEST(MeasuredSpeedTest, AnEngineNotMeasuredYetIsPricedAsItsMeasuredPeers) {
  SimClusterOptions o;
  o.nodes = 3;
  o.seed = 7;
  o.delay_ms = 1;
  o.gossip.gossip_interval = FromMillis(50);
  o.gossip.probe_interval = FromMillis(250);
  o.gossip.probe_timeout = FromMillis(125);
  o.gossip.landmark_stride = 2;
  o.publish_interval = FromMillis(25);
  Result<engine::CostModel> cpu = engine::CostModel::FromPreset("llama-tiny-cpu");
  ASSERT_TRUE(cpu.ok());
  o.engine.cost = cpu->params();
  o.engine.report_preset_speed = false;  // as llama.cpp: no speed until its first answer
  o.price_by_measured_prefill = true;
  RouteLog log;
  o.recorder = &log;
  auto created = SimCluster::Create(o);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  SimCluster& c = **created;
  c.StartAll();
  c.scheduler().RunFor(FromSeconds(3));

  // n1 and n2 serve a prompt each (hop marker set: served there) and so measure their speed.
  FirstTokens sink;
  c.node(1).Submit(test_requests::Req(1, test_requests::Prompt(1, 1024, 1, 40), true), &sink);
  c.node(2).Submit(test_requests::Req(2, test_requests::Prompt(2, 1024, 2, 40), true), &sink);
  for (int i = 0; i < 200 && !(sink.done[1] && sink.done[2]); ++i) {
    c.scheduler().RunFor(FromMillis(100));
  }
  ASSERT_TRUE(sink.done[1] && sink.done[2]);
  c.scheduler().RunFor(FromSeconds(1));                   // their loads and caches gossiped
  ASSERT_EQ(c.engine(0).Load().prefill_ms_per_token, 0);  // n0's engine: not measured

  // A sibling of n1's prompt enters at n0.
  c.node(0).Submit(test_requests::Req(3, test_requests::Prompt(1, 1024, 3, 40), false), &sink);
  for (int i = 0; i < 200 && !sink.done[3]; ++i) c.scheduler().RunFor(FromMillis(100));
  ASSERT_TRUE(sink.done[3]);
  ASSERT_EQ(log.routes.size(), 1u);
  const node::RouteAttempt& a = log.routes[0].attempts.at(0);
  double self_scale = 0;
  double peer_scale = 0;
  for (const node::CandidateRecord& cand : a.candidates) {
    (cand.is_self ? self_scale : peer_scale) = cand.cost_scale;
  }
  EXPECT_GT(peer_scale, 5);  // the measured CPU engines, against the router's model
  EXPECT_DOUBLE_EQ(self_scale, peer_scale);
  EXPECT_EQ(log.routes[0].served_by, "n1");
  EXPECT_GT(sink.cached[3], 900u);
}

}  // namespace
}  // namespace hearsay::sim
