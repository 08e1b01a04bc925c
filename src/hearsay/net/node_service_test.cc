#include "hearsay/net/node_service.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "hearsay/net/daemon.h"

namespace hearsay::net {
namespace {

std::string Numbered(const char* prefix, int i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

DaemonConfig Openai(std::string flavor) {
  DaemonConfig c;
  c.engine = "openai";
  c.upstream = "http://127.0.0.1:1";
  c.upstream_flavor = std::move(flavor);
  c.model = "llama3";
  c.model_aliases = {"meta-llama/Llama-3.1-8B"};
  c.context_tokens = 8192;
  c.block_size = 16;
  return c;
}

TEST(NodeServiceTest, TheSimulatedEngineServesTheConfiguredModel) {
  DaemonConfig c;
  c.model_aliases = {"sim"};
  const gossip::Service s = BuildNodeService(c, std::nullopt).service;
  ASSERT_EQ(s.engines.size(), 1u);
  EXPECT_EQ(s.engines[0].kind, "sim");
  EXPECT_EQ(s.engines[0].model, "hearsay-sim");
  EXPECT_EQ(s.engines[0].aliases, (std::vector<std::string>{"sim"}));
  EXPECT_EQ(s.engines[0].context_tokens, c.context_tokens);
  EXPECT_EQ(s.engines[0].block_tokens, 16u);
  EXPECT_NE(s.engines[0].tokenizer_fingerprint, 0u);
  EXPECT_TRUE(s.host_group.empty());
  EXPECT_TRUE(gossip::ValidateService(s).ok());
  c.host_group = "box-1";
  EXPECT_EQ(BuildNodeService(c, std::nullopt).service.host_group, "box-1");
}

TEST(NodeServiceTest, WhatTheEngineListsAddsAliasesAdaptersAndModels) {
  upstream::ServedModels served;
  served.models = {{"Meta-Llama-3.1-8B", 4096, {"sql-lora", "chat-lora"}}, {"qwen", 0, {}}};
  const gossip::Service s = BuildNodeService(Openai("vllm"), served).service;
  ASSERT_EQ(s.engines.size(), 2u);
  EXPECT_EQ(s.engines[0].kind, "vllm");
  EXPECT_EQ(s.engines[0].model, "llama3");
  EXPECT_EQ(s.engines[0].aliases,
            (std::vector<std::string>{"meta-llama/Llama-3.1-8B", "Meta-Llama-3.1-8B"}));
  EXPECT_EQ(s.engines[0].adapters, (std::vector<std::string>{"sql-lora", "chat-lora"}));
  EXPECT_EQ(s.engines[0].context_tokens, 4096u) << "the engine's, smaller than the node's limit";
  EXPECT_EQ(s.engines[1].model, "qwen");
  EXPECT_EQ(s.engines[1].context_tokens, 8192u);
  // With one name sent upstream for every request, the other models are out of reach.
  DaemonConfig rewrite = Openai("vllm");
  rewrite.upstream_model = "Meta-Llama-3.1-8B";
  EXPECT_EQ(BuildNodeService(rewrite, served).service.engines.size(), 1u);
}

TEST(NodeServiceTest, SeveralEnginesAdvertiseEachOneAndTellWhichServesWhat) {
  DaemonConfig a = Openai("vllm");
  a.model = "model-a";
  a.model_aliases = {};
  DaemonConfig b = Openai("llamacpp");
  b.model = "model-b";
  b.model_aliases = {"b"};
  DaemonConfig replica = a;
  replica.upstream = "http://127.0.0.1:2";
  for (DaemonConfig* c : {&a, &b, &replica}) c->host_group = "box-1";
  const std::vector<DaemonConfig> configs = {a, b, replica};
  upstream::ServedModels listed;
  listed.models = {{"model-b", 2048, {"lora-b"}}, {"model-c", 0, {}}};
  const std::vector<std::optional<upstream::ServedModels>> served = {std::nullopt, listed,
                                                                     std::nullopt};
  std::vector<std::vector<std::string>> models;
  const NodeServiceResult r = BuildNodeService(configs, served, &models);
  ASSERT_EQ(r.service.engines.size(), 3u) << gossip::ServiceSummary(r.service);
  EXPECT_EQ(r.service.engines[0].kind, "vllm");
  EXPECT_EQ(r.service.engines[0].model, "model-a");
  EXPECT_EQ(r.service.engines[1].kind, "llamacpp");
  EXPECT_EQ(r.service.engines[1].model, "model-b");
  EXPECT_EQ(r.service.engines[1].adapters, (std::vector<std::string>{"lora-b"}));
  EXPECT_EQ(r.service.engines[1].context_tokens, 2048u);
  EXPECT_EQ(r.service.engines[2].model, "model-c");
  EXPECT_EQ(models, (std::vector<std::vector<std::string>>{
                        {"model-a"}, {"model-b", "model-c"}, {"model-a"}}));
  EXPECT_EQ(r.names_left_out, 0u);
  EXPECT_EQ(r.service.host_group, "box-1");
}

TEST(NodeServiceTest, EnginesPastTheGossipLimitAreLeftOutAndCounted) {
  std::vector<DaemonConfig> configs;
  for (int i = 0; i < 10; ++i) {
    configs.push_back(Openai("vllm"));
    configs.back().model = Numbered("m", i);
    configs.back().model_aliases = {};
  }
  const std::vector<std::optional<upstream::ServedModels>> served(configs.size());
  const NodeServiceResult r = BuildNodeService(configs, served, nullptr);
  EXPECT_EQ(r.service.engines.size(), gossip::kMaxServiceEngines);
  EXPECT_EQ(r.names_left_out, 2u);
  EXPECT_TRUE(gossip::ValidateService(r.service).ok());
}

TEST(NodeServiceTest, TheFingerprintFollowsTheTokenizerNotTheNamespace) {
  DaemonConfig a = Openai("llamacpp");
  DaemonConfig b = a;
  b.key_namespace = "tenant-x";
  b.block_size = 32;
  EXPECT_EQ(TokenizerFingerprint(a, "m"), TokenizerFingerprint(b, "m"));
  b.tokenizer = "engine";
  EXPECT_NE(TokenizerFingerprint(a, "m"), TokenizerFingerprint(b, "m"));
  EXPECT_NE(TokenizerFingerprint(b, "m"), TokenizerFingerprint(b, "other"));
  EXPECT_EQ(TokenizerFingerprint(a, "m"), TokenizerFingerprint(a, "other"))
      << "the built-in tokenizer is the same for every model";
}

TEST(NodeServiceTest, ThousandsOfAdaptersAndOddNamesAreBoundedAndCounted) {
  upstream::ServedModels served;
  served.models.push_back({"base", 0, {}});
  for (int i = 0; i < 3000; ++i) served.models[0].adapters.push_back(Numbered("lora-", i));
  for (int i = 0; i < 20; ++i) served.models.push_back({Numbered("m", i), 0, {}});
  DaemonConfig c = Openai("vllm");
  NodeServiceResult r = BuildNodeService(c, served);
  EXPECT_TRUE(gossip::ValidateService(r.service).ok());
  EXPECT_EQ(r.service.engines.size(), gossip::kMaxServiceEngines);
  EXPECT_LE(r.service.engines[0].adapters.size(), gossip::kMaxServiceAdapters);
  EXPECT_EQ(r.names_left_out,
            3000 - r.service.engines[0].adapters.size() + 20 - (gossip::kMaxServiceEngines - 1));
}

TEST(NodeServiceTest, PoolModelsRenderAsAnOpenAiListWithAdaptersUnderTheirModel) {
  std::vector<node::PoolModel> pool(2);
  pool[0] = {"m1", {"alias"}, {"lora"}, 4096, 2, true};
  pool[1] = {"m2", {}, {}, 0, 1, false};
  const nlohmann::json j = nlohmann::json::parse(RenderPoolModels(pool, 7));
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 3u);
  EXPECT_EQ(j["data"][0]["id"], "m1");
  EXPECT_EQ(j["data"][0]["live_nodes"], 2);
  EXPECT_EQ(j["data"][0]["context_length"], 4096);
  EXPECT_EQ(j["data"][0]["aliases"][0], "alias");
  EXPECT_EQ(j["data"][1]["id"], "lora");
  EXPECT_EQ(j["data"][1]["parent"], "m1");
  EXPECT_EQ(j["data"][2]["id"], "m2");
  EXPECT_TRUE(j["data"][2]["context_length"].is_null());
  EXPECT_EQ(j["data"][2]["served_here"], false);
}

}  // namespace
}  // namespace hearsay::net
