#include "hearsay/api/openai_response.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "hearsay/api/sse_parser.h"

namespace hearsay::api {
namespace {

using nlohmann::json;

ResponseMeta Meta(Endpoint endpoint) {
  ResponseMeta meta;
  meta.endpoint = endpoint;
  meta.id = endpoint == Endpoint::kChatCompletions ? "chatcmpl-abc" : "cmpl-abc";
  meta.created = 1700000000;
  meta.model = "llama-3-8b";
  meta.system_fingerprint = "node-1";
  return meta;
}

// The JSON of one SSE event "data: {...}\n\n".
json EventJson(const std::string& event) {
  EXPECT_TRUE(event.starts_with("data: ")) << event;
  EXPECT_TRUE(event.ends_with("\n\n")) << event;
  return json::parse(event.substr(6, event.size() - 8));
}

const UsageCounts kUsage{100, 20, 64};

TEST(RenderCompletionTest, TextCompletionShape) {
  const json j = json::parse(
      RenderCompletion(Meta(Endpoint::kCompletions), " hi \"there\"", "length", kUsage));
  EXPECT_EQ(j, json::parse(R"({
      "id": "cmpl-abc", "object": "text_completion", "created": 1700000000,
      "model": "llama-3-8b", "system_fingerprint": "node-1",
      "choices": [{"index": 0, "text": " hi \"there\"", "logprobs": null,
                   "finish_reason": "length"}],
      "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
                "prompt_tokens_details": {"cached_tokens": 64}}})"));
}

TEST(RenderCompletionTest, ChatCompletionShape) {
  const json j =
      json::parse(RenderCompletion(Meta(Endpoint::kChatCompletions), "Hello!", "stop", kUsage));
  EXPECT_EQ(j, json::parse(R"({
      "id": "chatcmpl-abc", "object": "chat.completion", "created": 1700000000,
      "model": "llama-3-8b", "system_fingerprint": "node-1",
      "choices": [{"index": 0,
                   "message": {"role": "assistant", "content": "Hello!", "refusal": null},
                   "logprobs": null, "finish_reason": "stop"}],
      "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
                "prompt_tokens_details": {"cached_tokens": 64}}})"));
}

TEST(RenderCompletionTest, TotalTokensDoesNotOverflow) {
  const json j = json::parse(
      RenderCompletion(Meta(Endpoint::kCompletions), "", "length", {UINT32_MAX, UINT32_MAX, 0}));
  EXPECT_EQ(j["usage"]["total_tokens"].get<uint64_t>(), uint64_t{UINT32_MAX} * 2);
  EXPECT_TRUE(j["system_fingerprint"].is_string());
  ResponseMeta no_fp = Meta(Endpoint::kCompletions);
  no_fp.system_fingerprint.clear();
  EXPECT_TRUE(json::parse(RenderCompletion(no_fp, "", "", {}))["system_fingerprint"].is_null());
}

TEST(RenderChunkTest, ChatChunkShapes) {
  const ResponseMeta meta = Meta(Endpoint::kChatCompletions);
  const json first = EventJson(RenderChunk(meta, " Hello", /*first=*/true));
  EXPECT_EQ(first, json::parse(R"({
      "id": "chatcmpl-abc", "object": "chat.completion.chunk", "created": 1700000000,
      "model": "llama-3-8b", "system_fingerprint": "node-1",
      "choices": [{"index": 0, "delta": {"role": "assistant", "content": " Hello"},
                   "logprobs": null, "finish_reason": null}]})"));
  const json later = EventJson(RenderChunk(meta, " world", /*first=*/false));
  EXPECT_EQ(later["choices"][0]["delta"], json::parse(R"({"content": " world"})"));
  const json last = EventJson(RenderFinalChunk(meta, "length"));
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  const json usage = EventJson(RenderUsageChunk(meta, kUsage));
  EXPECT_EQ(usage["object"], "chat.completion.chunk");
  EXPECT_EQ(usage["choices"], json::array());
  EXPECT_EQ(usage["usage"]["total_tokens"], 120);
  EXPECT_EQ(usage["usage"]["prompt_tokens_details"]["cached_tokens"], 64);
}

TEST(RenderChunkTest, CompletionChunkShapes) {
  const ResponseMeta meta = Meta(Endpoint::kCompletions);
  const json chunk = EventJson(RenderChunk(meta, " the", true));
  EXPECT_EQ(chunk, json::parse(R"({
      "id": "cmpl-abc", "object": "text_completion", "created": 1700000000,
      "model": "llama-3-8b", "system_fingerprint": "node-1",
      "choices": [{"index": 0, "text": " the", "logprobs": null, "finish_reason": null}]})"));
  const json last = EventJson(RenderFinalChunk(meta, "stop"));
  EXPECT_EQ(last["choices"][0]["text"], "");
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(EventJson(RenderUsageChunk(meta, kUsage))["object"], "text_completion");
}

TEST(RenderChunkTest, RoundTripsThroughParseStreamEvent) {
  for (const Endpoint endpoint : {Endpoint::kCompletions, Endpoint::kChatCompletions}) {
    const ResponseMeta meta = Meta(endpoint);
    const std::string texts[] = {" a", "", "line\nbreak \"q\" \\ \xE6\x97\xA5", "\t"};
    for (const std::string& text : texts) {
      for (const bool first : {true, false}) {
        const std::string event = RenderChunk(meta, text, first);
        const auto parsed = ParseStreamEvent(event.substr(6, event.size() - 8));
        ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
        EXPECT_EQ(parsed->delta_text, text);
        EXPECT_EQ(parsed->finish_reason, "");
        EXPECT_FALSE(parsed->usage.has_value());
        EXPECT_FALSE(parsed->error.has_value());
        EXPECT_FALSE(parsed->done);
      }
    }
    const std::string last = RenderFinalChunk(meta, "length");
    const auto fin = ParseStreamEvent(last.substr(6, last.size() - 8));
    ASSERT_TRUE(fin.ok());
    EXPECT_EQ(fin->finish_reason, "length");
    EXPECT_EQ(fin->delta_text, "");
    const std::string usage = RenderUsageChunk(meta, kUsage);
    const auto u = ParseStreamEvent(usage.substr(6, usage.size() - 8));
    ASSERT_TRUE(u.ok());
    EXPECT_EQ(u->usage, kUsage);
  }
  const std::string err = RenderSseError(Unavailable("peer went away"));
  EXPECT_TRUE(err.starts_with("data: {\"error\":"));
  const auto e = ParseStreamEvent(err.substr(6, err.size() - 8));
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE(e->error.has_value());
  EXPECT_EQ(e->error->message, "peer went away");
  EXPECT_EQ(e->error->type, "server_error");
  EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
  EXPECT_TRUE(ParseStreamEvent("[DONE]")->done);
}

TEST(RenderChunkTest, InvalidUtf8TextStillRendersValidJson) {
  const std::string event = RenderChunk(Meta(Endpoint::kCompletions), "\xE6\x97", true);
  const json j = EventJson(event);
  EXPECT_EQ(j["choices"][0]["text"], "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(RenderModelsTest, ListShape) {
  const std::vector<std::string> models = {"llama-3-8b", "qwen"};
  const json j = json::parse(RenderModels(models, 1700000000, "hearsay"));
  EXPECT_EQ(j, json::parse(R"({"object": "list", "data": [
      {"id": "llama-3-8b", "object": "model", "created": 1700000000, "owned_by": "hearsay"},
      {"id": "qwen", "object": "model", "created": 1700000000, "owned_by": "hearsay"}]})"));
  EXPECT_EQ(json::parse(RenderModels({}, 0, "x")), json::parse(R"({"object":"list","data":[]})"));
}

}  // namespace
}  // namespace hearsay::api
