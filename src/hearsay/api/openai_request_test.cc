#include "hearsay/api/openai_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace hearsay::api {
namespace {

Limits TestLimits() {
  Limits limits;
  limits.max_prompt_chars = 1000;
  limits.context_tokens = 2048;
  limits.max_output_tokens = 512;
  limits.default_max_tokens = 16;
  return limits;
}

ApiRequest Ok(Endpoint endpoint, std::string_view body) {
  auto result = ParseRequest(endpoint, body, TestLimits());
  if (auto* e = std::get_if<ApiError>(&result)) {
    ADD_FAILURE() << "unexpected error for " << body << ": " << e->message;
    return {};
  }
  return std::get<ApiRequest>(result);
}

ApiError Err(Endpoint endpoint, std::string_view body) {
  auto result = ParseRequest(endpoint, body, TestLimits());
  if (!std::holds_alternative<ApiError>(result)) {
    ADD_FAILURE() << "expected an error for " << body;
    return {};
  }
  return std::get<ApiError>(result);
}

constexpr Endpoint kCompl = Endpoint::kCompletions;
constexpr Endpoint kChat = Endpoint::kChatCompletions;

TEST(ParseRequestTest, CompletionsWithEveryField) {
  const ApiRequest r = Ok(kCompl, R"({
      "model": "m1", "prompt": "Once upon", "max_tokens": 100, "stream": true,
      "stream_options": {"include_usage": true}, "user": "u7", "temperature": 0.5,
      "top_p": 0.9, "seed": 42, "stop": ["\n", "END"], "n": 1, "best_of": 1, "echo": false,
      "presence_penalty": -1.5, "frequency_penalty": 2, "logit_bias": {"1": 2},
      "some_future_field": {"x": [1, 2]}})");
  EXPECT_EQ(r.endpoint, kCompl);
  EXPECT_EQ(r.model, "m1");
  EXPECT_EQ(r.prompt, "Once upon");
  EXPECT_EQ(r.max_tokens, 100u);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.user, "u7");
  EXPECT_DOUBLE_EQ(r.temperature, 0.5);
  EXPECT_EQ(r.seed, uint64_t{42});
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n", "END"}));
}

TEST(ParseRequestTest, DefaultsAndNulls) {
  const ApiRequest r = Ok(kCompl, R"({"model":"m","prompt":"x","max_tokens":null,"stream":null,
                                      "stop":null,"seed":null,"user":null,"n":null})");
  EXPECT_EQ(r.max_tokens, 16u);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.include_usage);
  EXPECT_DOUBLE_EQ(r.temperature, 1.0);
  EXPECT_FALSE(r.seed.has_value());
  EXPECT_TRUE(r.stop.empty());
  EXPECT_TRUE(r.user.empty());
}

TEST(ParseRequestTest, PromptAsArrayOfOneString) {
  EXPECT_EQ(Ok(kCompl, R"({"model":"m","prompt":["only one"]})").prompt, "only one");
  EXPECT_EQ(Ok(kCompl, R"({"model":"m","prompt":"x","stop":"\n\n"})").stop,
            std::vector<std::string>{"\n\n"});
}

TEST(ParseRequestTest, NegativeAndHugeSeeds) {
  EXPECT_EQ(Ok(kCompl, R"({"model":"m","prompt":"x","seed":-1})").seed, UINT64_MAX);
  EXPECT_EQ(Ok(kCompl, R"({"model":"m","prompt":"x","seed":18446744073709551615})").seed,
            UINT64_MAX);
}

TEST(ParseRequestTest, ChatRendersMessagesAndPrefersMaxCompletionTokens) {
  const ApiRequest r = Ok(kChat, R"({"model":"m","messages":[{"role":"user","content":"Hi"}],
                                     "max_tokens":10,"max_completion_tokens":20})");
  EXPECT_EQ(r.endpoint, kChat);
  EXPECT_EQ(r.prompt, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(r.max_tokens, 20u);
  EXPECT_EQ(Ok(kChat, R"({"model":"m","messages":[{"role":"user","content":"Hi"}],
                          "max_tokens":10})")
                .max_tokens,
            10u);
  // A completions request ignores max_completion_tokens (unknown there).
  EXPECT_EQ(Ok(kCompl, R"({"model":"m","prompt":"x","max_completion_tokens":0})").max_tokens, 16u);
}

struct BadCase {
  Endpoint endpoint;
  const char* body;
  const char* param;  // "" means null
  const char* code;
  const char* message_part;  // must appear in the message
};

TEST(ParseRequestTest, AModelNameIsAtMost256Bytes) {
  const std::string ok(256, 'm');
  EXPECT_EQ(Ok(kCompl, R"({"model":")" + ok + R"(","prompt":"x"})").model, ok);
  const auto r = ParseRequest(kCompl, R"({"model":")" + ok + R"(m","prompt":"x"})", TestLimits());
  const ApiError* e = std::get_if<ApiError>(&r);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->http_status, 400);
  EXPECT_EQ(e->param, "model");
  EXPECT_NE(e->message.find("at most 256 bytes; this one has 257"), std::string::npos)
      << e->message;
}

TEST(ParseRequestTest, RejectsBadInputWithTheRightParamAndCode) {
  const BadCase cases[] = {
      // Malformed JSON names the position; non-object bodies.
      {kCompl, R"({"model": "m", "prompt": )", "", "invalid_json", "line 1, column 26"},
      {kCompl, "{\"model\":\"m\",\n \"prompt\": x}", "", "invalid_json", "line 2, column"},
      {kCompl, "", "", "invalid_json", "parse"},
      {kCompl, R"({"model":"m","prompt":"\ud800"})", "", "invalid_json", "surrogate"},
      {kCompl, "[1,2]", "", "invalid_type", "JSON object"},
      {kCompl, "\"text\"", "", "invalid_type", "JSON object"},
      {kCompl, "null", "", "invalid_type", "JSON object"},
      // model
      {kCompl, R"({"prompt":"x"})", "model", "missing_required_parameter", "'model'"},
      {kCompl, R"({"model":null,"prompt":"x"})", "model", "missing_required_parameter", "model"},
      {kCompl, R"({"model":3,"prompt":"x"})", "model", "invalid_type", "an integer"},
      {kCompl, R"({"model":"","prompt":"x"})", "model", "invalid_value", "empty"},
      {kCompl, R"({"model":"two words","prompt":"x"})", "model", "invalid_value", "byte 3 is 0x20"},
      {kCompl, R"({"model":"m\u0001","prompt":"x"})", "model", "invalid_value", "byte 1 is 0x01"},
      {kCompl, R"({"model":"caf\u00e9","prompt":"x"})", "model", "invalid_value", "byte 3 is 0xc3"},
      // prompt
      {kCompl, R"({"model":"m"})", "prompt", "missing_required_parameter", "'prompt'"},
      {kCompl, R"({"model":"m","prompt":""})", "prompt", "empty_prompt", "empty"},
      {kCompl, R"({"model":"m","prompt":[""]})", "prompt", "empty_prompt", "empty"},
      {kCompl, R"({"model":"m","prompt":5})", "prompt", "invalid_type", "string"},
      {kCompl, R"({"model":"m","prompt":[]})", "prompt", "empty_array", "empty"},
      {kCompl, R"({"model":"m","prompt":["a","b"]})", "prompt", "unsupported_value",
       "not supported"},
      {kCompl, R"({"model":"m","prompt":[1,2,3]})", "prompt", "unsupported_value", "token ids"},
      {kCompl, R"({"model":"m","prompt":[[1,2]]})", "prompt", "unsupported_value", "token ids"},
      {kCompl, R"({"model":"m","prompt":[true]})", "prompt[0]", "invalid_type", "a boolean"},
      // messages
      {kChat, R"({"model":"m"})", "messages", "missing_required_parameter", "'messages'"},
      {kChat, R"({"model":"m","messages":[]})", "messages", "empty_array", "empty"},
      {kChat, R"({"model":"m","messages":"hi"})", "messages", "invalid_type", "array"},
      {kChat, R"({"model":"m","messages":[{"role":"wizard","content":"x"}]})", "messages[0].role",
       "invalid_value", "wizard"},
      {kChat, R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url"}]}]})",
       "messages[0].content[0].type", "unsupported_content_type", "image_url"},
      // max_tokens
      {kCompl, R"({"model":"m","prompt":"x","max_tokens":0})", "max_tokens",
       "integer_below_min_value", ">= 1"},
      {kCompl, R"({"model":"m","prompt":"x","max_tokens":-5})", "max_tokens",
       "integer_below_min_value", "got -5"},
      {kCompl, R"({"model":"m","prompt":"x","max_tokens":513})", "max_tokens",
       "integer_above_max_value", "<= 512"},
      {kCompl, R"({"model":"m","prompt":"x","max_tokens":18446744073709551615})", "max_tokens",
       "integer_above_max_value", "18446744073709551615"},
      {kCompl, R"({"model":"m","prompt":"x","max_tokens":1.5})", "max_tokens", "invalid_type",
       "a number"},
      {kCompl, R"({"model":"m","prompt":"x","max_tokens":"10"})", "max_tokens", "invalid_type",
       "a string"},
      {kChat,
       R"({"model":"m","messages":[{"role":"user","content":"x"}],"max_completion_tokens":0})",
       "max_completion_tokens", "integer_below_min_value", ">= 1"},
      // n and other unsupported options
      {kCompl, R"({"model":"m","prompt":"x","n":2})", "n", "unsupported_value",
       "n = 2 is not supported by this server. Only n = 1 is."},
      {kChat, R"({"model":"m","messages":[{"role":"user","content":"x"}],"n":3})", "n",
       "unsupported_value", "n = 3"},
      {kCompl, R"({"model":"m","prompt":"x","n":0})", "n", "integer_below_min_value", ">= 1"},
      {kCompl, R"({"model":"m","prompt":"x","n":"2"})", "n", "invalid_type", "integer"},
      {kCompl, R"({"model":"m","prompt":"x","best_of":2})", "best_of", "unsupported_value",
       "best_of"},
      {kCompl, R"({"model":"m","prompt":"x","echo":true})", "echo", "unsupported_value", "echo"},
      {kCompl, R"({"model":"m","prompt":"x","logprobs":2})", "logprobs", "unsupported_value",
       "logprobs"},
      {kChat, R"({"model":"m","messages":[{"role":"user","content":"x"}],"logprobs":true})",
       "logprobs", "unsupported_value", "logprobs"},
      {kCompl, R"({"model":"m","prompt":"x","suffix":"end"})", "suffix", "unsupported_value",
       "suffix"},
      // stream
      {kCompl, R"({"model":"m","prompt":"x","stream":"yes"})", "stream", "invalid_type", "boolean"},
      {kCompl, R"({"model":"m","prompt":"x","stream_options":{"include_usage":true}})",
       "stream_options", "invalid_value", "only allowed when 'stream' is enabled"},
      {kCompl, R"({"model":"m","prompt":"x","stream":true,"stream_options":true})",
       "stream_options", "invalid_type", "object"},
      {kCompl, R"({"model":"m","prompt":"x","stream":true,"stream_options":{"include_usage":1}})",
       "stream_options.include_usage", "invalid_type", "boolean"},
      // sampling
      {kCompl, R"({"model":"m","prompt":"x","temperature":2.5})", "temperature",
       "decimal_above_max_value", "<= 2"},
      {kCompl, R"({"model":"m","prompt":"x","temperature":-0.1})", "temperature",
       "decimal_below_min_value", ">= 0"},
      {kCompl, R"({"model":"m","prompt":"x","temperature":"hot"})", "temperature", "invalid_type",
       "a number"},
      {kCompl, R"({"model":"m","prompt":"x","top_p":1.5})", "top_p", "decimal_above_max_value",
       "top_p"},
      {kCompl, R"({"model":"m","prompt":"x","presence_penalty":-3})", "presence_penalty",
       "decimal_below_min_value", "presence_penalty"},
      {kCompl, R"({"model":"m","prompt":"x","seed":1.5})", "seed", "invalid_type", "integer"},
      {kCompl, R"({"model":"m","prompt":"x","user":5})", "user", "invalid_type", "string"},
      // stop
      {kCompl, R"({"model":"m","prompt":"x","stop":5})", "stop", "invalid_type", "string"},
      {kCompl, R"({"model":"m","prompt":"x","stop":["a","b","c","d","e"]})", "stop",
       "array_above_max_length", "maximum length 4"},
      {kCompl, R"({"model":"m","prompt":"x","stop":["a",1]})", "stop[1]", "invalid_type", "string"},
      {kCompl, R"({"model":"m","prompt":"x","stop":""})", "stop", "invalid_value", "empty"},
  };
  for (const BadCase& c : cases) {
    const ApiError e = Err(c.endpoint, c.body);
    EXPECT_EQ(e.http_status, 400) << c.body;
    EXPECT_EQ(e.type, "invalid_request_error") << c.body;
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_EQ(e.code, c.code) << c.body;
    EXPECT_NE(e.message.find(c.message_part), std::string::npos) << c.body << " -> " << e.message;
  }
}

TEST(ParseRequestTest, PromptOverTheCharacterLimit) {
  const std::string long_prompt(1001, 'a');
  const ApiError e = Err(kCompl, R"({"model":"m","prompt":")" + long_prompt + R"("})");
  EXPECT_EQ(e.param, "prompt");
  EXPECT_EQ(e.code, "string_above_max_length");
  EXPECT_NE(e.message.find("1000"), std::string::npos);
  EXPECT_EQ(
      Ok(kCompl, R"({"model":"m","prompt":")" + std::string(1000, 'a') + R"("})").prompt.size(),
      1000u);
  // For chat the rendered conversation counts.
  const ApiError chat = Err(kChat, R"({"model":"m","messages":[{"role":"user","content":")" +
                                       std::string(990, 'a') + R"("}]})");
  EXPECT_EQ(chat.param, "messages");
  EXPECT_EQ(chat.code, "string_above_max_length");
}

TEST(ParseRequestTest, DeepNestingIsRefusedBeforeParsing) {
  std::string deep = R"({"model":"m","prompt":"x","extra":)";
  deep.append(100000, '[');
  deep.append(100000, ']');
  deep.push_back('}');
  const ApiError e = Err(kCompl, deep);
  EXPECT_EQ(e.code, "invalid_json");
  EXPECT_NE(e.message.find("64 levels"), std::string::npos);
  // Brackets inside strings do not count; nesting up to the limit is fine.
  std::string ok = R"({"model":"m","prompt":"[[[[[[[[[[[[","extra":)";
  ok.append(kMaxJsonDepth - 1, '[');
  ok.append(kMaxJsonDepth - 1, ']');
  ok.push_back('}');
  EXPECT_EQ(Ok(kCompl, ok).prompt, "[[[[[[[[[[[[");
}

TEST(ParseRequestTest, ParseErrorMessagesStayShort) {
  // The parser's "last read" echo of a huge bad token is truncated.
  std::string body = R"({"model":"m","prompt":)";
  body.append(100000, 'x');
  const ApiError e = Err(kCompl, body);
  EXPECT_EQ(e.code, "invalid_json");
  EXPECT_LT(e.message.size(), 300u);
  // The error quotes at most a short excerpt of the body.
  EXPECT_EQ(e.message.find(std::string(32, 'x')), std::string::npos) << e.message;
}

TEST(CheckContextTest, FitsAndExceeds) {
  const Limits limits = TestLimits();  // 2048 tokens
  EXPECT_FALSE(CheckContext(2000, 48, limits).has_value());
  EXPECT_FALSE(CheckContext(0, 0, limits).has_value());
  const auto e = CheckContext(2000, 49, limits);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->http_status, 400);
  EXPECT_EQ(e->type, "invalid_request_error");
  EXPECT_EQ(e->code, "context_length_exceeded");
  EXPECT_EQ(e->param, "prompt");
  EXPECT_EQ(e->message,
            "This model's maximum context length is 2048 tokens. However, you requested 2049 "
            "tokens (2000 in the prompt, 49 in the completion). Please reduce the length of the "
            "prompt or completion.");
  const auto chat = CheckContext(4000000000u, 4000000000u, limits, Endpoint::kChatCompletions);
  ASSERT_TRUE(chat.has_value());
  EXPECT_EQ(chat->param, "messages");
  EXPECT_NE(chat->message.find("8000000000 tokens (4000000000 in the messages"), std::string::npos);
}

TEST(EndpointTest, Paths) {
  EXPECT_EQ(EndpointPath(kCompl), "/v1/completions");
  EXPECT_EQ(EndpointPath(kChat), "/v1/chat/completions");
}

}  // namespace
}  // namespace hearsay::api
