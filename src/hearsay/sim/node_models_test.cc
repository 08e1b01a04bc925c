// node::Node in a pool of several models, in virtual time on a SimCluster: requests go only to
// members that serve their model, whatever node they enter.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "hearsay/node/node.h"
#include "hearsay/prefix/block_keys.h"
#include "hearsay/sim/sim_cluster.h"

namespace hearsay::node::node_models_test {
namespace {

using sim::SimCluster;
using sim::SimClusterOptions;

struct Recorder final : ResponseSink {
  struct Events {
    bool complete = false;
    bool error = false;
    StatusCode code = StatusCode::kOk;
    std::string message;
    std::string served_by;
    uint32_t cached = 0;
  };
  std::map<uint64_t, Events> by_id;
  void OnFirstToken(uint64_t id, const PeerFirstToken& f) override {
    by_id[id].served_by = f.served_by;
    by_id[id].cached = f.cached_tokens;
  }
  void OnComplete(uint64_t id, const PeerUsage&) override { by_id[id].complete = true; }
  void OnError(uint64_t id, const Status& s, bool) override {
    by_id[id].error = true;
    by_id[id].code = s.code();
    by_id[id].message = s.message();
  }
};

gossip::EngineService Engine(const std::string& model, std::vector<std::string> aliases = {},
                             uint64_t fingerprint = 1) {
  return gossip::EngineService{"sim",       model, std::move(aliases), 8192, {"lora-" + model},
                               fingerprint, 16};
}

std::vector<uint32_t> Prompt(uint32_t seed, uint32_t len) {
  std::vector<uint32_t> p;
  for (uint32_t i = 0; i < len; ++i) p.push_back(2000 + (seed * 7919 + i * 31) % 20000);
  return p;
}

PeerRequest Req(uint64_t id, std::string model, std::vector<uint32_t> prompt) {
  PeerRequest r;
  r.id = id;
  r.model = std::move(model);
  r.prompt = std::move(prompt);
  r.max_output_tokens = 1;
  return r;
}

// Three nodes, each serving `services[i]`, joined and converged.
std::unique_ptr<SimCluster> MakePool(const std::vector<gossip::Service>& services,
                                     const std::string& policy = "hearsay") {
  SimClusterOptions o;
  o.nodes = static_cast<int>(services.size());
  o.seed = 11;
  o.delay_ms = 1;
  o.policy = policy;
  o.gossip.gossip_interval = FromMillis(50);
  o.gossip.probe_interval = FromMillis(250);
  o.gossip.probe_timeout = FromMillis(125);
  o.gossip.landmark_stride = 2;
  o.publish_interval = FromMillis(25);
  auto c = SimCluster::Create(o);
  EXPECT_TRUE(c.ok());
  for (size_t i = 0; i < services.size(); ++i) {
    EXPECT_TRUE((*c)->node(static_cast<int>(i)).SetService(services[i]).ok());
  }
  (*c)->StartAll();
  (*c)->scheduler().RunFor(FromSeconds(3));
  return std::move(*c);
}

// a: M1, b: M2 (alias "m2-chat"), c: M1 + M2.
std::unique_ptr<SimCluster> TwoModelPool(const std::string& policy = "hearsay") {
  return MakePool(
      {gossip::Service{{Engine("M1", {"m1-alias"})}}, gossip::Service{{Engine("M2", {"m2-chat"})}},
       gossip::Service{{Engine("M1", {"m1-alias"}), Engine("M2")}}},
      policy);
}

// True if `node` serves `model` (canonical) with `adapter` (empty: the base model).
bool Serves(SimCluster& c, const std::string& node, const std::string& model,
            const std::string& adapter) {
  for (int i = 0; i < c.size(); ++i) {
    if (SimCluster::Name(i) == node)
      return gossip::ServesModel(c.node(i).service(), model, adapter);
  }
  return false;
}

uint64_t WrongModelForwards(SimCluster& c) {
  uint64_t n = 0;
  for (int i = 0; i < c.size(); ++i) n += c.node(i).stats().forwards_wrong_model;
  return n;
}

TEST(NodeModelsTest, EveryRequestIsServedByANodeServingItsModel) {
  for (const char* policy : {"hearsay", "least-loaded", "round-robin", "local", "random"}) {
    auto c = TwoModelPool(policy);
    Recorder rec;
    uint64_t id = 1;
    // Request -> (canonical model, adapter) it must be served with.
    std::map<uint64_t, std::pair<std::string, std::string>> model_of;
    const std::map<std::string, std::pair<std::string, std::string>> meaning = {
        {"M1", {"M1", ""}},
        {"m1-alias", {"M1", ""}},
        {"M2", {"M2", ""}},
        {"m2-chat", {"M2", ""}},
        {"lora-M2", {"M2", "lora-M2"}}};
    for (int round = 0; round < 4; ++round) {
      for (int entry = 0; entry < c->size(); ++entry) {
        for (const std::string model : {"M1", "M2", "m1-alias", "m2-chat", "lora-M2", ""}) {
          // Shared prefixes per model, so cache affinity pulls toward whoever served it first.
          std::vector<uint32_t> prompt = Prompt(static_cast<uint32_t>(model.size()), 256);
          const std::vector<uint32_t> tail = Prompt(static_cast<uint32_t>(id), 32);
          prompt.insert(prompt.end(), tail.begin(), tail.end());
          model_of[id] = model.empty()
                             ? std::pair<std::string, std::string>{entry == 1 ? "M2" : "M1", ""}
                             : meaning.at(model);
          c->node(entry).Submit(Req(id, model, std::move(prompt)), &rec);
          ++id;
        }
      }
      c->scheduler().RunFor(FromSeconds(1));
    }
    c->scheduler().RunFor(FromSeconds(5));
    for (const auto& [rid, want] : model_of) {
      const Recorder::Events& e = rec.by_id[rid];
      ASSERT_TRUE(e.complete) << policy << " request " << rid << " " << want.first << ": "
                              << e.message;
      EXPECT_TRUE(Serves(*c, e.served_by, want.first, want.second))
          << policy << " " << want.first << "+" << want.second << " at " << e.served_by;
    }
    EXPECT_EQ(WrongModelForwards(*c), 0u) << policy;
    uint64_t forwarded = 0;
    for (int i = 0; i < c->size(); ++i) forwarded += c->node(i).stats().forwarded_out;
    EXPECT_GT(forwarded, 0u) << policy;  // entries that lack a model did forward
  }
}

TEST(NodeModelsTest, AnUnknownModelGetsNotFoundNamingIt) {
  auto c = TwoModelPool();
  Recorder rec;
  c->node(0).Submit(Req(1, "no-such-model", Prompt(1, 64)), &rec);
  c->node(1).Submit(Req(2, "bad\x01name", Prompt(1, 64)), &rec);
  c->scheduler().RunFor(FromSeconds(1));
  EXPECT_EQ(rec.by_id[1].code, StatusCode::kNotFound);
  EXPECT_NE(rec.by_id[1].message.find("'no-such-model'"), std::string::npos);
  EXPECT_EQ(rec.by_id[2].code, StatusCode::kNotFound);
  EXPECT_NE(rec.by_id[2].message.find("'bad?name'"), std::string::npos);
  EXPECT_EQ(c->node(0).stats().models_not_found, 1u);
  EXPECT_EQ(c->node(0).stats().failed, 1u);
}

TEST(NodeModelsTest, AForwardForAModelTheNodeDoesNotServeIsRefused) {
  auto c = TwoModelPool();
  Recorder rec;
  PeerRequest r = Req(1, "M2", Prompt(3, 64));
  r.forwarded = true;
  c->node(0).Submit(std::move(r), &rec);  // a serves M1 only
  c->scheduler().RunFor(FromSeconds(1));
  EXPECT_EQ(rec.by_id[1].code, StatusCode::kNotFound);
  EXPECT_TRUE(rec.by_id[1].served_by.empty());
  EXPECT_EQ(c->node(0).stats().forwards_wrong_model, 1u);
  EXPECT_EQ(c->node(0).stats().served, 0u);
}

TEST(NodeModelsTest, AForwardRefusedForItsModelIsServedByAnotherMemberThatServesIt) {
  auto c = TwoModelPool();
  Recorder rec;
  // b holds a long M2 prefix, so a routes a sibling there...
  PeerRequest warm = Req(1, "M2", Prompt(21, 2048));
  warm.forwarded = true;
  c->node(1).Submit(std::move(warm), &rec);
  c->scheduler().RunFor(FromSeconds(2));
  // ...but b's engine has just been restarted with another model, which a has not heard yet.
  ASSERT_TRUE(c->node(1).SetService(gossip::Service{{Engine("M3")}}).ok());
  std::vector<uint32_t> sibling = Prompt(21, 2048);
  sibling.push_back(7);
  c->node(0).Submit(Req(2, "M2", sibling), &rec);
  c->scheduler().RunFor(FromSeconds(2));
  EXPECT_TRUE(rec.by_id[2].complete) << rec.by_id[2].message;
  EXPECT_EQ(rec.by_id[2].served_by, "n2");
  EXPECT_EQ(c->node(1).stats().forwards_wrong_model, 1u);
  EXPECT_EQ(c->node(1).stats().served, 1u);  // only the warm-up
  EXPECT_EQ(c->node(0).stats().forward_failures, 1u);
}

TEST(NodeModelsTest, WhenTheOnlyServerOfAModelDiesItsRequestsGetNotFound) {
  auto c = MakePool({gossip::Service{{Engine("M1")}}, gossip::Service{{Engine("M2")}},
                     gossip::Service{{Engine("M1")}}});
  Recorder rec;
  c->node(0).Submit(Req(1, "M2", Prompt(4, 64)), &rec);
  c->scheduler().RunFor(FromSeconds(1));
  ASSERT_TRUE(rec.by_id[1].complete);
  EXPECT_EQ(rec.by_id[1].served_by, "n1");
  c->Crash(1);
  c->scheduler().RunFor(FromSeconds(10));
  c->node(0).Submit(Req(2, "M2", Prompt(4, 64)), &rec);
  c->node(2).Submit(Req(3, "M1", Prompt(4, 64)), &rec);
  c->scheduler().RunFor(FromSeconds(1));
  EXPECT_EQ(rec.by_id[2].code, StatusCode::kNotFound);
  EXPECT_NE(rec.by_id[2].message.find("'M2'"), std::string::npos);
  EXPECT_TRUE(rec.by_id[3].complete);
  const std::vector<PoolModel> models = c->node(0).PoolModels();
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].model, "M1");
  EXPECT_EQ(models[0].live_members, 2u);
}

TEST(NodeModelsTest, TheSamePromptUnderTwoModelsSharesNoBlockKey) {
  const std::vector<uint32_t> prompt = Prompt(5, 256);
  const ModelTarget m1{"M1", "", 1, 16};
  std::vector<ModelTarget> others = {
      {"M2", "", 1, 16}, {"M1", "lora-M1", 1, 16}, {"M1", "", 2, 16}, {"M1", "", 1, 32}};
  auto keyer = prefix::BlockKeyer::Create("0123456789abcdef-secret", "", "");
  ASSERT_TRUE(keyer.ok());
  std::vector<prefix::BlockKey> k1;
  prefix::AppendNamespacedKeys(*keyer, ModelNamespace(0, m1), prompt, &k1);
  for (const ModelTarget& t : others) {
    std::vector<prefix::BlockKey> k2;
    prefix::AppendNamespacedKeys(*keyer, ModelNamespace(0, t), prompt, &k2);
    ASSERT_EQ(k1.size(), k2.size());
    for (size_t i = 0; i < k1.size(); ++i) EXPECT_NE(k1[i], k2[i]) << t.model << " block " << i;
  }
  EXPECT_NE(ModelNamespace(0, m1), ModelNamespace(7, m1));  // tenants stay apart too
  // On one engine serving both: the second model finds nothing of the first's prompt cached.
  auto c = TwoModelPool();
  Recorder rec;
  auto serve_at_c = [&](uint64_t id, const std::string& model) {
    PeerRequest r = Req(id, model, prompt);
    r.forwarded = true;
    c->node(2).Submit(std::move(r), &rec);
    c->scheduler().RunFor(FromSeconds(1));
  };
  serve_at_c(1, "M1");
  serve_at_c(2, "M2");
  serve_at_c(3, "m1-alias");
  EXPECT_EQ(rec.by_id[2].cached, 0u);
  EXPECT_GE(rec.by_id[3].cached, 240u);
}

TEST(NodeModelsTest, AFingerprintConflictIsReportedAndNotRoutedAcross) {
  // a and c agree on M1; b claims M1 with another tokenizer; d serves only M2.
  auto c = MakePool({gossip::Service{{Engine("M1", {}, 1)}}, gossip::Service{{Engine("M1", {}, 2)}},
                     gossip::Service{{Engine("M1", {}, 1)}}, gossip::Service{{Engine("M2")}}},
                    "round-robin");
  const std::vector<ServiceConflict> conflicts = c->node(0).ServiceConflicts();
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].peer, "n1");
  EXPECT_EQ(conflicts[0].own_fingerprint, 1u);
  EXPECT_EQ(conflicts[0].peer_fingerprint, 2u);
  EXPECT_GE(c->node(0).stats().service_conflicts, 1u);
  EXPECT_EQ(c->node(1).ServiceConflicts().size(), 2u);
  Recorder rec;
  uint64_t id = 1;
  std::map<uint64_t, int> entry_of;
  for (int round = 0; round < 6; ++round) {
    for (int entry = 0; entry < 4; ++entry) {
      entry_of[id] = entry;
      c->node(entry).Submit(Req(id, "M1", Prompt(static_cast<uint32_t>(id), 64)), &rec);
      ++id;
    }
  }
  c->scheduler().RunFor(FromSeconds(5));
  int a_or_c_served_by_a_and_c = 0;
  for (const auto& [rid, entry] : entry_of) {
    const Recorder::Events& e = rec.by_id[rid];
    ASSERT_TRUE(e.complete) << rid;
    if (entry == 1) {
      EXPECT_EQ(e.served_by, "n1");
    } else if (entry == 3) {
      // d does not serve M1: it keeps to the fingerprint most of M1's servers agree on.
      EXPECT_NE(e.served_by, "n1");
      EXPECT_NE(e.served_by, "n3");
    } else {
      EXPECT_NE(e.served_by, "n1");
      a_or_c_served_by_a_and_c += e.served_by == SimCluster::Name(2 - entry) ? 1 : 0;
    }
  }
  EXPECT_GT(a_or_c_served_by_a_and_c, 0);  // a and c do share M1's requests
}

TEST(NodeModelsTest, PoolModelsListEveryModelWithItsServers) {
  auto c = TwoModelPool();
  for (int i = 0; i < c->size(); ++i) {
    const std::vector<PoolModel> models = c->node(i).PoolModels();
    ASSERT_EQ(models.size(), 2u) << i;
    EXPECT_EQ(models[0].model, "M1");
    EXPECT_EQ(models[0].live_members, 2u);
    EXPECT_EQ(models[0].aliases, std::vector<std::string>{"m1-alias"});
    EXPECT_EQ(models[0].adapters, std::vector<std::string>{"lora-M1"});
    EXPECT_EQ(models[0].context_tokens, 8192u);
    EXPECT_EQ(models[0].served_here, i != 1);
    EXPECT_EQ(models[1].model, "M2");
    EXPECT_EQ(models[1].live_members, 2u);
    EXPECT_EQ(models[1].served_here, i != 0);
  }
  ASSERT_TRUE(c->node(0).MemberService("n1").has_value());
  EXPECT_EQ(c->node(0).MemberService("n1")->engines[0].model, "M2");
  EXPECT_FALSE(c->node(0).MemberService("nobody").has_value());
  // A change of service (b's engine restarted with M3) reaches the others.
  ASSERT_TRUE(c->node(1).SetService(gossip::Service{{Engine("M3")}}).ok());
  c->scheduler().RunFor(FromSeconds(2));
  const std::vector<PoolModel> models = c->node(0).PoolModels();
  ASSERT_EQ(models.size(), 3u);
  EXPECT_EQ(models[1].model, "M2");
  EXPECT_EQ(models[1].live_members, 1u);
  EXPECT_EQ(models[2].model, "M3");
  Recorder rec;
  c->node(0).Submit(Req(1, "M3", Prompt(9, 64)), &rec);
  c->scheduler().RunFor(FromSeconds(1));
  EXPECT_EQ(rec.by_id[1].served_by, "n1");
}

}  // namespace
}  // namespace hearsay::node::node_models_test
