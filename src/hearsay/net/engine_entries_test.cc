#include "hearsay/net/engine_entries.h"

#include <gtest/gtest.h>

#include <string>

#include "hearsay/net/daemon_config.h"

namespace hearsay::net {
namespace {

constexpr const char* kTwoEngines = R"(
[node]
model = "unused-top-level"

[[engine]]
model = "model-a"
aliases = ["a", "alpha"]
upstream = "http://127.0.0.1:9001"
flavor = "vllm"
preset = "a100-llama3-8b"
capacity_tokens = 100000

[[engine]]
model = "model-b"
upstream = "http://127.0.0.1:9002"
upstream_model = "org/model-b"
upstream_slots_authoritative = true
)";

// The configuration of `toml` (insecure), or the error of loading or validating it.
Result<DaemonConfig> Load(const std::string& toml) {
  DaemonConfig c;
  c.insecure = true;
  HEARSAY_RETURN_IF_ERROR(c.ApplyToml(toml, "node.toml"));
  HEARSAY_RETURN_IF_ERROR(c.Validate());
  return c;
}

std::string ErrorOf(const std::string& toml) {
  Result<DaemonConfig> c = Load(toml);
  EXPECT_FALSE(c.ok());
  return c.ok() ? "" : c.status().message();
}

std::string Entry(const std::string& model, const std::string& upstream,
                  const std::string& extra = "") {
  std::string out = "[[engine]]\nmodel = \"";
  out.append(model).append("\"\nupstream = \"").append(upstream).append("\"\n");
  out.append(extra).append("\n");
  return out;
}

TEST(EngineEntriesTest, EachEntryIsOneEngineOverTheTopLevelSettings) {
  Result<DaemonConfig> c = Load(kTwoEngines);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->engines.size(), 2u);
  std::vector<DaemonConfig> e = c->EngineConfigs();
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].engine, "openai");
  EXPECT_EQ(e[0].model, "model-a");
  EXPECT_EQ(e[0].model_aliases, (std::vector<std::string>{"a", "alpha"}));
  EXPECT_EQ(e[0].upstream, "http://127.0.0.1:9001");
  EXPECT_EQ(e[0].upstream_flavor, "vllm");
  EXPECT_EQ(e[0].engine_preset, "a100-llama3-8b");
  EXPECT_EQ(e[0].capacity_tokens, 100000u);
  EXPECT_EQ(e[1].model, "model-b");
  EXPECT_EQ(e[1].upstream_model, "org/model-b");
  EXPECT_TRUE(e[1].upstream_slots_authoritative);
  // What an entry does not set comes from the top level.
  EXPECT_EQ(e[1].upstream_flavor, "generic");
  EXPECT_EQ(e[1].engine_preset, c->engine_preset);
  EXPECT_TRUE(e[1].engines.empty());
  EXPECT_NE(c->Describe().find("engine[1].upstream-model=org/model-b"), std::string::npos);
}

TEST(EngineEntriesTest, WithoutEntriesTheNodeHasItsOneEngine) {
  DaemonConfig c;
  c.insecure = true;
  ASSERT_TRUE(c.ApplyToml("[engine]\nkind = \"sim\"\n", "node.toml").ok());
  ASSERT_TRUE(c.Validate().ok());
  EXPECT_TRUE(c.engines.empty());
  ASSERT_EQ(c.EngineConfigs().size(), 1u);
  EXPECT_EQ(c.EngineConfigs()[0].model, c.model);
}

TEST(EngineEntriesTest, ASimEntryNeedsNoUpstream) {
  Result<DaemonConfig> c = Load("[[engine]]\nkind = \"sim\"\nmodel = \"m\"\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->EngineConfigs()[0].engine, "sim");
}

TEST(EngineEntriesTest, EntriesNeedNoTopLevelUpstreamUnderEngineOpenai) {
  DaemonConfig c;
  c.insecure = true;
  c.engine = "openai";  // as `--engine openai` sets it
  ASSERT_TRUE(c.ApplyToml(Entry("m", "http://127.0.0.1:9001"), "node.toml").ok());
  EXPECT_TRUE(c.Validate().ok()) << c.Validate().ToString();
  c.engines.clear();
  EXPECT_FALSE(c.Validate().ok());  // one engine of its own: it needs its URL
}

TEST(EngineEntriesTest, AnEntryWithoutUpstreamOrModelIsRefused) {
  EXPECT_NE(ErrorOf("[[engine]]\nmodel = \"m\"\n").find("engine[0] (model m): no upstream"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[[engine]]\nupstream = \"http://127.0.0.1:1\"\n").find("no model"),
            std::string::npos);
}

TEST(EngineEntriesTest, TwoEnginesClaimingOneModelDifferentlyAreRefused) {
  std::string e = ErrorOf(Entry("m", "http://127.0.0.1:1", "flavor = \"vllm\"") +
                          Entry("m", "http://127.0.0.1:2", "flavor = \"sglang\""));
  EXPECT_NE(e.find("engine[0] (model m) and engine[1] (model m) both claim model name 'm'"),
            std::string::npos)
      << e;
  // An alias counts as a claim too.
  e = ErrorOf(Entry("m", "http://127.0.0.1:1") +
              Entry("n", "http://127.0.0.1:2", "aliases = [\"m\"]"));
  EXPECT_NE(e.find("both claim model name 'm'"), std::string::npos) << e;
  // Replicas that differ only in where they are: accepted.
  Result<DaemonConfig> c = Load(Entry("m", "http://127.0.0.1:1", "flavor = \"vllm\"") +
                                Entry("m", "http://127.0.0.1:2", "flavor = \"vllm\""));
  EXPECT_TRUE(c.ok()) << c.status().ToString();
}

TEST(EngineEntriesTest, AtMostTheGossipLimitOfEngines) {
  std::string toml;
  for (int i = 0; i < 9; ++i) {
    std::string model = "m", url = "http://127.0.0.1:";
    model.append(std::to_string(i));
    url.append(std::to_string(9000 + i));
    toml += Entry(model, url);
  }
  EXPECT_NE(ErrorOf(toml).find("at most 8 [[engine]] entries"), std::string::npos);
}

TEST(EngineEntriesTest, EntryErrorsNameTheEntryAndKey) {
  EXPECT_NE(ErrorOf(Entry("m", "http://127.0.0.1:1", "colour = \"red\""))
                .find("engine[0]: unknown key 'colour'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Entry("m", "http://127.0.0.1:1", "capacity_tokens = \"lots\""))
                .find("engine[0]: key 'capacity_tokens'"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf(Entry("m", "http://127.0.0.1:1", "flavor = \"tgi\"")).find("engine[0] (model m)"),
      std::string::npos);
  EXPECT_NE(ErrorOf(Entry("m", "ftp://x")).find("engine[0] (model m): engine.upstream"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Entry("two words", "http://127.0.0.1:1")).find("node.model"),
            std::string::npos);
}

TEST(EngineEntriesTest, TopLevelSettingsEveryEngineWouldShareAreRefused) {
  EXPECT_NE(ErrorOf("[[engine]]\nkind = \"sim\"\nmodel = \"m\"\n[node]\ntokenizer = \"engine\"\n")
                .find("node.tokenizer"),
            std::string::npos);
  DaemonConfig c;
  c.insecure = true;
  ASSERT_TRUE(c.ApplyToml(Entry("m", "http://127.0.0.1:1"), "node.toml").ok());
  ASSERT_TRUE(c.ApplyFlag("upstream", "http://127.0.0.1:2").ok());
  EXPECT_NE(c.Validate().message().find("each entry names its own"), std::string::npos);
}

}  // namespace
}  // namespace hearsay::net
