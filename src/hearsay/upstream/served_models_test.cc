#include "hearsay/upstream/served_models.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hearsay::upstream {
namespace {

using nlohmann::json;

std::string Numbered(const char* prefix, size_t i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

TEST(ServedModelsTest, ReadsLlamaCppWithItsTrainingContext) {
  const std::string page = R"({"models":[{"name":"tiny.gguf","model":"tiny.gguf"}],
    "object":"list","data":[{"id":"tiny.gguf","object":"model","owned_by":"llamacpp",
    "meta":{"vocab_type":2,"n_vocab":32000,"n_ctx_train":4096}}]})";
  Result<ServedModels> m = ParseServedModels(page);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->models.size(), 1u);
  EXPECT_EQ(m->models[0], (ServedModel{"tiny.gguf", 4096, {}}));
  EXPECT_EQ(m->skipped(), 0u);
}

TEST(ServedModelsTest, ReadsVllmAdaptersUnderTheirParentWhateverTheOrder) {
  const std::string page = R"({"object":"list","data":[
    {"id":"sql-lora","object":"model","root":"/a/sql","parent":"base","max_model_len":null},
    {"id":"base","object":"model","root":"base","parent":null,"max_model_len":8192},
    {"id":"chat-lora","object":"model","root":"/a/chat","parent":"base"}]})";
  Result<ServedModels> m = ParseServedModels(page);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->models.size(), 1u);
  EXPECT_EQ(m->models[0], (ServedModel{"base", 8192, {"sql-lora", "chat-lora"}}));
  EXPECT_EQ(DescribeServedModels(*m), "base (ctx 8192, 2 adapters)");
}

TEST(ServedModelsTest, ReadsSglang) {
  const std::string page = R"({"object":"list","data":[{"id":"Qwen/Qwen2.5-7B-Instruct",
    "object":"model","owned_by":"sglang","root":"Qwen/Qwen2.5-7B-Instruct","max_model_len":32768}]})";
  Result<ServedModels> m = ParseServedModels(page);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->models[0], (ServedModel{"Qwen/Qwen2.5-7B-Instruct", 32768, {}}));
}

TEST(ServedModelsTest, RefusesWholePagesOfTheWrongShape) {
  for (const std::string& page :
       std::vector<std::string>{"", "not json", "[]", R"({"data":{}})", R"({"object":"list"})",
                                R"({"data":[1]})", R"({"data":[{"name":"no id"}]})",
                                R"({"data":[{"id":7}]})", std::string(64 * 1024, '[')}) {
    Result<ServedModels> m = ParseServedModels(page);
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << page.substr(0, 40);
  }
  EXPECT_EQ(ParseServedModels(R"({"data":[]})").status().code(), StatusCode::kNotFound);
}

TEST(ServedModelsTest, RefusesPagesOverTheByteAndEntryBounds) {
  std::string big = R"({"data":[{"id":")";
  big.append(kMaxModelsPageBytes, 'a');
  big.append(R"("}]})");
  EXPECT_EQ(ParseServedModels(big).status().code(), StatusCode::kInvalidArgument);
  json many = {{"data", json::array()}};
  for (size_t i = 0; i <= kMaxModelEntries; ++i) many["data"].push_back({{"id", "m"}});
  Result<ServedModels> m = ParseServedModels(many.dump());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("entries"), std::string::npos);
}

TEST(ServedModelsTest, SkipsAndCountsOddNamesAndOrphansKeepingTheRest) {
  const std::string too_long(kMaxModelNameBytes + 1, 'x');
  json page = {{"data",
                {{{"id", "good"}},
                 {{"id", "has space"}},
                 {{"id", "ctl\x01"}},
                 {{"id", ""}},
                 {{"id", too_long}},
                 {{"id", "good"}},
                 {{"id", "lora"}, {"parent", "elsewhere"}},
                 {{"id", "bad lora"}, {"parent", "good"}}}}};
  Result<ServedModels> m = ParseServedModels(page.dump());
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->models.size(), 1u);
  EXPECT_EQ(m->models[0].name, "good");
  EXPECT_EQ(m->bad_names, 5u);
  EXPECT_EQ(m->orphan_adapters, 1u);
  EXPECT_NE(DescribeServedModels(*m).find("5 bad names"), std::string::npos);
  EXPECT_TRUE(IsValidModelName(std::string(kMaxModelNameBytes, 'x')));
  EXPECT_FALSE(IsValidModelName("caf\xc3\xa9"));
}

TEST(ServedModelsTest, BoundsThousandsOfAdaptersAndManyModels) {
  json page = {{"data", json::array()}};
  for (size_t i = 0; i < kMaxServedModels + 3; ++i) {
    page["data"].push_back({{"id", Numbered("m", i)}, {"max_model_len", 1e30}});
  }
  for (size_t i = 0; i < 5000; ++i) {
    page["data"].push_back({{"id", Numbered("lora", i)}, {"parent", "m0"}});
  }
  Result<ServedModels> m = ParseServedModels(page.dump());
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->models.size(), kMaxServedModels);
  EXPECT_EQ(m->models_over_bound, 3u);
  EXPECT_EQ(m->models[0].adapters.size(), kMaxAdaptersPerModel);
  EXPECT_EQ(m->adapters_over_bound, 5000 - kMaxAdaptersPerModel);
  EXPECT_EQ(m->models[0].context_length, 4294967295u);
}

}  // namespace
}  // namespace hearsay::upstream
