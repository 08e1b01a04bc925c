// Tests of the /tokenize request builders and response decoders.
#include "hearsay/upstream/tokenize_codec.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace hearsay::upstream {
namespace {

using nlohmann::json;

TEST(TokenizeCodecTest, LlamaCppPromptAddsBosLikeACompletion) {
  Result<TokenizeCall> c = TokenizePromptCall(UpstreamFlavor::kLlamaCpp, "m", "Hello \"x\"");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c.value().target, "/tokenize");
  const json j = json::parse(c.value().body);
  EXPECT_EQ(j["content"], "Hello \"x\"");
  EXPECT_EQ(j["add_special"], true);
  EXPECT_FALSE(j.contains("model"));
}

TEST(TokenizeCodecTest, VllmAndSglangSendModelAndPrompt) {
  for (UpstreamFlavor f : {UpstreamFlavor::kVllm, UpstreamFlavor::kSglang}) {
    Result<TokenizeCall> c = TokenizePromptCall(f, "llama-3", "abc");
    ASSERT_TRUE(c.ok());
    const json j = json::parse(c.value().body);
    EXPECT_EQ(j["model"], "llama-3");
    EXPECT_EQ(j["prompt"], "abc");
  }
}

TEST(TokenizeCodecTest, GenericHasNoTokenizeEndpoint) {
  EXPECT_EQ(TokenizePromptCall(UpstreamFlavor::kGeneric, "m", "x").status().code(),
            StatusCode::kFailedPrecondition);
}

TEST(TokenizeCodecTest, InvalidUtf8PromptStillBuildsValidJson) {
  Result<TokenizeCall> c = TokenizePromptCall(UpstreamFlavor::kLlamaCpp, "",
                                              "a\xff"
                                              "b");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(json::parse(c.value().body, nullptr, false).is_discarded());
}

TEST(TokenizeCodecTest, MessagesGoToTheEnginesTemplate) {
  const std::string msgs = R"([{"role":"user","content":"hi"}])";
  Result<TokenizeCall> v = TokenizeMessagesCall(UpstreamFlavor::kVllm, "m", msgs);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v.value().target, "/tokenize");
  EXPECT_EQ(json::parse(v.value().body)["messages"][0]["content"], "hi");
  EXPECT_EQ(json::parse(v.value().body)["add_generation_prompt"], true);
  Result<TokenizeCall> l = TokenizeMessagesCall(UpstreamFlavor::kLlamaCpp, "m", msgs);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l.value().target, "/apply-template");
  EXPECT_EQ(TokenizeMessagesCall(UpstreamFlavor::kSglang, "m", msgs).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(TokenizeMessagesCall(UpstreamFlavor::kVllm, "m", "{}").status().code(),
            StatusCode::kInvalidArgument);
}

TEST(TokenizeCodecTest, ParsesEachEnginesTokenList) {
  Result<std::vector<uint32_t>> l = ParseTokenizeResponse(R"({"tokens":[1,15043,3186]})", 100);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l.value(), (std::vector<uint32_t>{1, 15043, 3186}));
  Result<std::vector<uint32_t>> p =
      ParseTokenizeResponse(R"({"tokens":[{"id":1,"piece":"<s>"},{"id":7,"piece":[72]}]})", 100);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.value(), (std::vector<uint32_t>{1, 7}));
  Result<std::vector<uint32_t>> v =
      ParseTokenizeResponse(R"({"count":2,"max_model_len":4096,"tokens":[4294967295,0]})", 100);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v.value(), (std::vector<uint32_t>{4294967295u, 0}));
  EXPECT_TRUE(ParseTokenizeResponse(R"({"tokens":[]})", 100).ok());
}

TEST(TokenizeCodecTest, RefusesBadTokenResponses) {
  for (const char* bad :
       {"", "null", "[1,2]", "{}", R"({"tokens":"1 2"})", R"({"tokens":[-1]})",
        R"({"tokens":[4294967296]})", R"({"tokens":[1.5]})", R"({"tokens":["1"]})",
        R"({"tokens":[{"piece":"a"}]})", R"({"tokens":[1,2],"count":3})",
        R"({"tokens":[1],"count":-1})", R"({"tokens":[1,2)"}) {
    EXPECT_EQ(ParseTokenizeResponse(bad, 100).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(ParseTokenizeResponse(R"({"tokens":[1,2,3]})", 2).ok());
  std::string deep(10000, '[');
  EXPECT_FALSE(ParseTokenizeResponse(R"({"tokens":)" + deep, 100).ok());
}

TEST(TokenizeCodecTest, ApplyTemplateResponse) {
  Result<std::string> p = ParseApplyTemplateResponse(R"({"prompt":"<s>[INST] hi [/INST]"})", 100);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.value(), "<s>[INST] hi [/INST]");
  EXPECT_FALSE(ParseApplyTemplateResponse(R"({"prompt":1})", 100).ok());
  EXPECT_FALSE(ParseApplyTemplateResponse(R"({"prompt":"abcdef"})", 3).ok());
  EXPECT_FALSE(ParseApplyTemplateResponse("nope", 100).ok());
}

TEST(TokenizeCodecTest, MessagesJsonExtractsTheArray) {
  Result<std::string> m =
      MessagesJson(R"({"model":"m","messages":[{"role":"user","content":"hi"}]})");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(json::parse(m.value())[0]["role"], "user");
  EXPECT_FALSE(MessagesJson(R"({"prompt":"x"})").ok());
}

}  // namespace
}  // namespace hearsay::upstream
