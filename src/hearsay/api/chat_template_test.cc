#include "hearsay/api/chat_template.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "hearsay/api/tokenizer.h"
#include "hearsay/env/rng.h"

namespace hearsay::api {
namespace {

using nlohmann::json;

std::vector<ChatMessage> Parsed(const json& messages) {
  auto result = ParseMessages(messages);
  if (auto* e = std::get_if<ApiError>(&result)) {
    ADD_FAILURE() << "unexpected error: " << e->message;
    return {};
  }
  return std::get<std::vector<ChatMessage>>(result);
}

ApiError Error(const json& messages) {
  auto result = ParseMessages(messages);
  if (!std::holds_alternative<ApiError>(result)) {
    ADD_FAILURE() << "expected an error for " << messages.dump();
    return {};
  }
  return std::get<ApiError>(result);
}

TEST(ChatTemplateTest, RendersChatMlWithGenerationPrompt) {
  const std::vector<ChatMessage> messages = {{"system", "Be brief."}, {"user", "Hi"}};
  EXPECT_EQ(RenderChat(messages),
            "<|im_start|>system\nBe brief.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(RenderMessages(messages),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplateTest, ConversationPrefixRendersAsAPrefix) {
  const std::vector<ChatMessage> conversation = {{"system", "S"},     {"user", "q1"},
                                                 {"assistant", "a1"}, {"user", "q2"},
                                                 {"assistant", "a2"}, {"tool", "t"}};
  const std::string full = RenderMessages(conversation);
  for (size_t k = 0; k <= conversation.size(); ++k) {
    const std::span<const ChatMessage> prefix(conversation.data(), k);
    EXPECT_TRUE(full.starts_with(RenderMessages(prefix))) << k;
  }
  // The prompt of a turn plus its answer is a prefix of the next turn's prompt.
  for (size_t k = 1; k < conversation.size(); ++k) {
    if (conversation[k].role != "assistant") continue;
    const std::span<const ChatMessage> before(conversation.data(), k);
    const std::string cached = RenderChat(before) + conversation[k].content + "<|im_end|>\n";
    const std::span<const ChatMessage> next(conversation.data(), k + 2);
    EXPECT_TRUE(RenderChat(next).starts_with(cached)) << k;
  }
}

// Random conversations: every prefix renders as a prefix, and a turn's prompt plus its answer
// starts the next turn's prompt, also as tokens (all but the last token of the shorter prompt).
TEST(ChatTemplateTest, PrefixPropertyOnRandomConversations) {
  Rng rng(3);
  const std::vector<std::string> words = {"hi", " there",     "\n", "  ", "\xC3\xA9t\xC3\xA9",
                                          "?",  "<|im_end|>", ""};
  const Tokenizer tokenizer;
  for (int round = 0; round < 200; ++round) {
    std::vector<ChatMessage> conversation;
    const size_t turns = 1 + rng.Below(6);
    for (size_t t = 0; t < turns; ++t) {
      for (const char* role : {"user", "assistant"}) {
        std::string content;
        const size_t n = rng.Below(5);
        for (size_t i = 0; i < n; ++i) content += words[rng.Below(words.size())];
        conversation.push_back({role, content});
      }
    }
    const std::string full = RenderMessages(conversation);
    for (size_t k = 0; k <= conversation.size(); ++k) {
      ASSERT_TRUE(full.starts_with(RenderMessages({conversation.data(), k})));
    }
    for (size_t k = 1; k + 1 < conversation.size(); k += 2) {
      const std::string prompt = RenderChat({conversation.data(), k});
      const std::string next = RenderChat({conversation.data(), k + 2});
      ASSERT_TRUE(next.starts_with(prompt + conversation[k].content + "<|im_end|>\n"));
      const auto a = tokenizer.Encode(prompt);
      const auto b = tokenizer.Encode(next);
      ASSERT_LE(a.size(), b.size());
      ASSERT_TRUE(std::equal(a.begin(), a.end() - 1, b.begin()));
    }
  }
}

TEST(ChatTemplateTest, ParsesStringAndTextPartContent) {
  const auto messages = Parsed(json::parse(R"([
      {"role": "developer", "content": "rules"},
      {"role": "user", "content": [{"type": "text", "text": "Hello, "},
                                   {"type": "text", "text": "world"}], "name": "bob"},
      {"role": "assistant", "content": null, "tool_calls": []},
      {"role": "tool", "content": "42", "tool_call_id": "c1"}])"));
  EXPECT_EQ(
      messages,
      (std::vector<ChatMessage>{
          {"developer", "rules"}, {"user", "Hello, world"}, {"assistant", ""}, {"tool", "42"}}));
  // Parts join without separator: the same text as a string renders identically.
  EXPECT_EQ(
      RenderChat(Parsed(json::parse(R"([{"role":"user","content":"Hello, world"}])"))),
      RenderChat(Parsed(json::parse(
          R"([{"role":"user","content":[{"type":"text","text":"Hello, "},{"type":"text","text":"world"}]}])"))));
}

TEST(ChatTemplateTest, RejectsBadMessages) {
  struct Case {
    const char* messages;
    const char* param;
    const char* code;
  };
  const Case cases[] = {
      {R"("hi")", "messages", "invalid_type"},
      {R"({"role":"user"})", "messages", "invalid_type"},
      {R"([])", "messages", "empty_array"},
      {R"([1])", "messages[0]", "invalid_type"},
      {R"([{"content":"x"}])", "messages[0].role", "missing_required_parameter"},
      {R"([{"role":5,"content":"x"}])", "messages[0].role", "invalid_type"},
      {R"([{"role":"user","content":"a"},{"role":"robot","content":"x"}])", "messages[1].role",
       "invalid_value"},
      {R"([{"role":"user"}])", "messages[0].content", "missing_required_parameter"},
      {R"([{"role":"user","content":null}])", "messages[0].content", "invalid_type"},
      {R"([{"role":"user","content":7}])", "messages[0].content", "invalid_type"},
      {R"([{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}])",
       "messages[0].content[0].type", "unsupported_content_type"},
      {R"([{"role":"user","content":["text"]}])", "messages[0].content[0]", "invalid_type"},
      {R"([{"role":"user","content":[{"text":"x"}]}])", "messages[0].content[0].type",
       "invalid_type"},
      {R"([{"role":"user","content":[{"type":"text","text":3}]}])", "messages[0].content[0].text",
       "invalid_type"},
  };
  for (const Case& c : cases) {
    const ApiError e = Error(json::parse(c.messages));
    EXPECT_EQ(e.http_status, 400) << c.messages;
    EXPECT_EQ(e.type, "invalid_request_error") << c.messages;
    EXPECT_EQ(e.param, c.param) << c.messages;
    EXPECT_EQ(e.code, c.code) << c.messages;
    EXPECT_FALSE(e.message.empty());
  }
  EXPECT_NE(Error(json::parse(R"([{"role":"user","content":[{"type":"input_audio"}]}])"))
                .message.find("input_audio"),
            std::string::npos);
}

}  // namespace
}  // namespace hearsay::api
