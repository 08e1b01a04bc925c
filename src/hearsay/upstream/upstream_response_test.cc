// Tests of the upstream decoders: real chunk shapes of llama.cpp, vLLM/OpenAI, errors, /slots,
// and rejection of malformed input.
#include "hearsay/upstream/upstream_response.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "hearsay/upstream/upstream_url.h"

namespace hearsay::upstream {
namespace {

TEST(UpstreamResponseTest, LlamaCppChunkWithTimings) {
  auto c = ParseUpstreamChunk(
      R"({"choices":[{"text":"Hi","index":0,"finish_reason":null}],"object":"text_completion",
          "timings":{"cache_n":96,"prompt_n":4,"prompt_ms":1.5,"predicted_n":1}})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c.value().text, "Hi");
  EXPECT_EQ(c.value().cached_tokens, 96u);
  EXPECT_EQ(c.value().prompt_tokens, 100u);
  EXPECT_EQ(c.value().prompt_computed_tokens, 4u);
  EXPECT_DOUBLE_EQ(*c.value().prompt_ms, 1.5);
}

TEST(UpstreamResponseTest, ChatDeltaAndUsageChunk) {
  auto c = ParseUpstreamChunk(R"({"choices":[{"delta":{"role":"assistant","content":"Yo"}}]})");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.value().text, "Yo");
  EXPECT_FALSE(c.value().cached_tokens);
  auto u = ParseUpstreamChunk(
      R"({"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":7,
          "prompt_tokens_details":{"cached_tokens":32}}})");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u.value().prompt_tokens, 50u);
  EXPECT_EQ(u.value().completion_tokens, 7u);
  EXPECT_EQ(u.value().cached_tokens, 32u);
  auto f = ParseUpstreamChunk(R"({"choices":[{"delta":{},"finish_reason":"length"}]})");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f.value().finish_reason, "length");
}

TEST(UpstreamResponseTest, DoneAndErrors) {
  EXPECT_TRUE(ParseUpstreamChunk("[DONE]").value().done);
  auto e = ParseUpstreamChunk(R"({"error":{"message":"context full","code":500}})");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e.value().error, "context full");
  EXPECT_EQ(UpstreamErrorMessage(R"({"error":{"message":"bad"}})"), "bad");
  EXPECT_EQ(UpstreamErrorMessage(R"({"detail":"Not Found"})"), "Not Found");
  EXPECT_EQ(UpstreamErrorMessage("plain text"), "plain text");
  EXPECT_EQ(UpstreamErrorMessage(std::string(1000, 'x')).size(), 303u);
}

TEST(UpstreamResponseTest, MalformedChunksAreErrorsNotCrashes) {
  for (const char* bad :
       {"", "{", "[1,2]", "42", R"({"foo":1})", R"({"choices":5})", R"({"choices":[{"text":5}]})",
        R"({"usage":{"prompt_tokens":-1}})", R"({"usage":{"prompt_tokens":99999999999}})",
        R"({"timings":{"cache_n":"many"}})", R"({"usage":[]})"}) {
    EXPECT_EQ(ParseUpstreamChunk(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  std::string deep(10000, '[');
  EXPECT_FALSE(ParseUpstreamChunk(deep).ok());
}

TEST(UpstreamResponseTest, Slots) {
  auto s = ParseSlots(R"([{"id":0,"n_ctx":4096,"is_processing":true,"prompt":"abc",
                           "generated":"def","n_prompt_tokens":3},{"id":1,"is_processing":false}])");
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s.value().size(), 2u);
  EXPECT_TRUE(s.value()[0].is_processing);
  EXPECT_EQ(s.value()[0].prompt, "abc");
  EXPECT_EQ(s.value()[0].generated, "def");
  EXPECT_EQ(s.value()[0].tokens, 3u);
  EXPECT_FALSE(s.value()[1].tokens);
  EXPECT_FALSE(ParseSlots("{}").ok());
  EXPECT_FALSE(ParseSlots("[1]").ok());
}

// The shape llama-server's GET /slots has without LLAMA_SERVER_SLOTS_DEBUG (no prompt text).
TEST(UpstreamResponseTest, SlotsSummaryCountsBusySlotsAndTheSoonestToFree) {
  auto s = ParseSlots(R"([
    {"id":0,"n_ctx":2048,"speculative":false,"is_processing":true,"id_task":7,
     "n_prompt_tokens":40,"next_token":[{"has_next_token":true,"n_remain":12,"n_decoded":4}]},
    {"id":1,"n_ctx":2048,"is_processing":true,
     "next_token":[{"has_next_token":true,"n_remain":-1,"n_decoded":9}]},
    {"id":2,"n_ctx":2048,"is_processing":true,
     "next_token":[{"has_next_token":true,"n_remain":5,"n_decoded":1}]},
    {"id":3,"n_ctx":2048,"is_processing":false,
     "next_token":[{"has_next_token":false,"n_remain":0,"n_decoded":16}]}])");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s.value()[0].n_ctx, 2048u);
  EXPECT_EQ(s.value()[0].remaining_tokens, 12u);
  EXPECT_FALSE(s.value()[1].remaining_tokens);  // -1: no output limit
  const SlotsSummary sum = SummarizeSlots(s.value());
  EXPECT_EQ(sum.slots, 4u);
  EXPECT_EQ(sum.busy, 3u);
  EXPECT_EQ(sum.n_ctx, 2048u);
  EXPECT_EQ(sum.soonest_free_tokens, 5u);  // idle slot 3's 0 does not count
  EXPECT_FALSE(SummarizeSlots({}).soonest_free_tokens);
  // Wrong types are refused, not guessed.
  EXPECT_FALSE(ParseSlots(R"([{"n_ctx":-4}])").ok());
  EXPECT_FALSE(ParseSlots(R"([{"next_token":{"n_remain":3}}])").ok());
  EXPECT_FALSE(ParseSlots(R"([{"next_token":[{"n_remain":"3"}]}])").ok());
  EXPECT_FALSE(ParseSlots(R"([{"next_token":[{"n_remain":1e12}]}])").ok());
}

TEST(UpstreamResponseTest, RewriteForcesStreamingAndEvidence) {
  auto r = RewriteRequestBody(R"({"prompt":"p","stream":false,"stream_options":null})", true, "");
  ASSERT_TRUE(r.ok());
  auto j = nlohmann::json::parse(r.value());
  EXPECT_EQ(j["stream"], true);
  EXPECT_EQ(j["stream_options"]["include_usage"], true);
  EXPECT_EQ(j["timings_per_token"], true);
  EXPECT_EQ(j["cache_prompt"], true);
  EXPECT_FALSE(j.contains("model"));
  auto g = nlohmann::json::parse(RewriteRequestBody(R"({"prompt":"p"})", false, "x").value());
  EXPECT_FALSE(g.contains("timings_per_token"));
  EXPECT_EQ(g["model"], "x");
  EXPECT_FALSE(RewriteRequestBody("nope", false, "").ok());
}

TEST(UpstreamResponseTest, RewriteAsksForOneAnswerWhenNotStreaming) {
  for (const char* body : {R"({"prompt":"p"})", R"({"prompt":"p","stream":true})",
                           R"({"prompt":"p","stream_options":{"include_usage":true}})"}) {
    for (bool llamacpp : {false, true}) {
      auto r = RewriteRequestBody(body, llamacpp, "", /*stream=*/false);
      ASSERT_TRUE(r.ok()) << body;
      auto j = nlohmann::json::parse(r.value());
      EXPECT_EQ(j["stream"], false) << body;
      // Servers refuse stream_options without a stream.
      EXPECT_FALSE(j.contains("stream_options")) << body;
      EXPECT_EQ(j.contains("cache_prompt"), llamacpp) << body;
      EXPECT_EQ(j["prompt"], "p");
    }
  }
}

TEST(UpstreamResponseTest, AWholeChatAnswerDecodesAsOneChunk) {
  const std::string answer =
      R"({"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant",)"
      R"("content":"Hi there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,)"
      R"("completion_tokens":3,"prompt_tokens_details":{"cached_tokens":8}}})";
  for (auto* parse : {&ParseUpstreamChunk, &ParseUpstreamChunkTree}) {
    auto c = parse(answer);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->text, "Hi there");
    EXPECT_EQ(c->finish_reason, "stop");
    EXPECT_EQ(c->cached_tokens, 8u);
    EXPECT_EQ(c->completion_tokens, 3u);
  }
  // A delta wins over a message; a message that is not an object is an error.
  EXPECT_EQ(
      ParseUpstreamChunk(R"({"choices":[{"delta":{"content":"d"},"message":{"content":"m"}}]})")
          ->text,
      "d");
  EXPECT_EQ(ParseUpstreamChunk(R"({"choices":[{"delta":null,"message":{"content":"m"}}]})")->text,
            "m");
  EXPECT_FALSE(ParseUpstreamChunk(R"({"choices":[{"message":"m"}]})").ok());
  EXPECT_FALSE(ParseUpstreamChunk(R"({"choices":[{"message":{"content":7}}]})").ok());
}

TEST(UpstreamResponseTest, PromptText) {
  EXPECT_EQ(PromptText(R"({"prompt":"abc"})"), "abc");
  EXPECT_EQ(PromptText(R"({"prompt":["x","y"]})"), "x");
  EXPECT_EQ(
      PromptText(R"({"messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}]})"),
      "s\nu");
  EXPECT_EQ(PromptText("garbage"), "");
}

TEST(UpstreamUrlTest, ParsesAndRejects) {
  auto u = ParseUpstreamUrl("http://127.0.0.1:8000");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u.value().host_port, "127.0.0.1:8000");
  EXPECT_EQ(u.value().base_path, "");
  u = ParseUpstreamUrl("http://gpu-box/v1/");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u.value().host_port, "gpu-box:80");
  EXPECT_EQ(u.value().base_path, "");
  u = ParseUpstreamUrl("http://[::1]:9000/proxy");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u.value().host_port, "[::1]:9000");
  EXPECT_EQ(u.value().base_path, "/proxy");
  for (const char* bad :
       {"https://x:1", "ftp://x", "127.0.0.1:8000", "http://", "http://:80", "http://x:0",
        "http://x:70000", "http://x:8a", "http://x:1?q=1", "http://u:p@x:1", "http://[::1"}) {
    EXPECT_EQ(ParseUpstreamUrl(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace hearsay::upstream
