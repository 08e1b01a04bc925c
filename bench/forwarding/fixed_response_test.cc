// The fixed upstream's answers decode as hearsay's openai engine decodes a real engine's
// (upstream::ParseUpstreamChunk), and its request parsing refuses bad bodies.
#include "fixed_response.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "hearsay/upstream/upstream_response.h"

namespace hearsay::bench {
namespace {

using nlohmann::json;

FixedResponses Make(uint32_t tokens = 4) {
  FixedResponseOptions o;
  o.completion_tokens = tokens;
  o.prompt_tokens = 10;
  o.cached_tokens = 3;
  return std::move(FixedResponses::Create(o)).value();
}

// Decodes a stream the way the openai engine does; returns the concatenated text.
std::string Decode(const std::vector<std::string_view>& events, bool* saw_usage) {
  std::string text;
  *saw_usage = false;
  for (size_t i = 0; i < events.size(); ++i) {
    std::string_view e = events[i];
    EXPECT_TRUE(e.starts_with("data: ")) << e;
    EXPECT_TRUE(e.ends_with("\n\n")) << e;
    e.remove_prefix(6);
    e.remove_suffix(2);
    Result<upstream::UpstreamChunk> c = upstream::ParseUpstreamChunk(e);
    EXPECT_TRUE(c.ok()) << c.status().ToString() << " in " << e;
    if (!c.ok()) continue;
    EXPECT_EQ(c->done, i + 1 == events.size()) << "[DONE] must be last and only last";
    text += c->text;
    if (c->cached_tokens) {
      *saw_usage = true;
      EXPECT_EQ(*c->cached_tokens, 3u);
      EXPECT_EQ(c->prompt_tokens.value_or(0), 10u);
      EXPECT_EQ(c->completion_tokens.value_or(0), 4u);
    }
  }
  return text;
}

TEST(FixedResponsesTest, StreamsCarryTheBodysTextAndUsageOnlyOnRequest) {
  FixedResponses r = Make();
  for (bool chat : {false, true}) {
    json body = json::parse(r.Body(chat));
    std::string text = chat ? body["choices"][0]["message"]["content"].get<std::string>()
                            : body["choices"][0]["text"].get<std::string>();
    EXPECT_EQ(text, "token0 token1 token2 token3");
    EXPECT_EQ(body["usage"]["prompt_tokens_details"]["cached_tokens"], 3);
    EXPECT_EQ(body["object"], chat ? "chat.completion" : "text_completion");

    bool saw_usage = true;
    EXPECT_EQ(Decode(r.Stream(chat, /*include_usage=*/false), &saw_usage), text);
    EXPECT_FALSE(saw_usage);
    EXPECT_EQ(Decode(r.Stream(chat, /*include_usage=*/true), &saw_usage), text);
    EXPECT_TRUE(saw_usage);
  }
}

TEST(FixedResponsesTest, OneEventPerPiecePlusFinishAndDone) {
  FixedResponses r = Make(7);
  EXPECT_EQ(r.Stream(false, false).size(), 7u + 2);    // pieces, finish, [DONE]
  EXPECT_EQ(r.Stream(true, true).size(), 1u + 7 + 3);  // role, pieces, finish, usage, [DONE]
}

TEST(FixedResponsesTest, RefusesImpossibleOptions) {
  FixedResponseOptions o;
  o.completion_tokens = 0;
  EXPECT_EQ(FixedResponses::Create(o).status().code(), StatusCode::kInvalidArgument);
  o.completion_tokens = 1;
  o.prompt_tokens = 2;
  o.cached_tokens = 3;
  EXPECT_EQ(FixedResponses::Create(o).status().code(), StatusCode::kInvalidArgument);
}

TEST(ParseFixedRequestTest, ReadsStreamAndIncludeUsage) {
  Result<FixedRequest> a = ParseFixedRequest(R"({"prompt":"x"})", false);
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->stream);
  EXPECT_FALSE(a->include_usage);
  Result<FixedRequest> b = ParseFixedRequest(
      R"({"messages":[],"stream":true,"stream_options":{"include_usage":true}})", true);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->chat);
  EXPECT_TRUE(b->stream);
  EXPECT_TRUE(b->include_usage);
  EXPECT_TRUE(ParseFixedRequest(R"({"stream":null})", false).ok());
}

TEST(ParseFixedRequestTest, RefusesBadBodies) {
  for (const char* bad :
       {"", "not json", "[1,2]", "\"s\"", R"({"stream":"yes"})", R"({"stream_options":1})",
        R"({"stream_options":{"include_usage":1}})", "{\"stream\":tru"}) {
    Result<FixedRequest> r = ParseFixedRequest(bad, false);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace hearsay::bench
