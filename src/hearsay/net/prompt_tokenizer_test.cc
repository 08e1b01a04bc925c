// PromptTokenizer against a fake engine on loopback: engine tokens for prompts and chat (the
// engine's own template), and a bytes fallback, counted, for every way /tokenize can fail.
#include "hearsay/net/prompt_tokenizer.h"

#include <gtest/gtest.h>

#include <future>
#include <nlohmann/json.hpp>

#include "hearsay/http/test_util.h"
#include "hearsay/net/fake_tokenizing_engine_test_util.h"

namespace hearsay::net::prompt_tokenizer_test {
namespace {

using namespace std::chrono_literals;
using testing::FakeTokenizingEngine;
using Mode = FakeTokenizingEngine::TokenizeMode;

DaemonConfig EngineConfig(const std::string& url, const std::string& flavor = "llamacpp") {
  DaemonConfig c;
  c.engine = "openai";
  c.upstream = url;
  c.upstream_flavor = flavor;
  c.tokenizer = "engine";
  c.model = "tiny";
  c.tokenize_timeout_ms = 300;
  return c;
}

class PromptTokenizerTest : public ::testing::Test {
 protected:
  std::unique_ptr<PromptTokenizer> Make(const DaemonConfig& c) {
    Result<KeyingConfig> k = ResolveKeying(c);
    EXPECT_TRUE(k.ok()) << k.status().ToString();
    Result<std::unique_ptr<PromptTokenizer>> t = PromptTokenizer::Create(&io_.io(), k.value());
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return std::move(t).value();
  }
  PromptTokens Run(PromptTokenizer& t, api::Endpoint ep, const std::string& prompt,
                   const std::string& body = "{}") {
    std::promise<PromptTokens> p;
    auto f = p.get_future();
    t.Tokenize(ep, prompt, body, [&p](PromptTokens r) { p.set_value(std::move(r)); });
    EXPECT_EQ(f.wait_for(10s), std::future_status::ready);
    return f.get();
  }

  http::testing::IoThread io_;
  FakeTokenizingEngine engine_;
};

TEST_F(PromptTokenizerTest, BytesModeIsTheBuiltInTokenizerWithoutIo) {
  DaemonConfig c;
  auto t = Make(c);
  EXPECT_FALSE(t->engine_mode());
  PromptTokens r = Run(*t, api::Endpoint::kCompletions, "hello big world");
  EXPECT_EQ(r.source, TokenSource::kBytes);
  EXPECT_EQ(r.tokens, api::Tokenizer().Encode("hello big world"));
  EXPECT_EQ(engine_.tokenize_calls, 0);
}

TEST_F(PromptTokenizerTest, EngineModeKeysWithTheEnginesTokensBosIncluded) {
  auto t = Make(EngineConfig(engine_.url()));
  const std::string prompt = "The quick brown fox jumps over the lazy dog";
  PromptTokens r = Run(*t, api::Endpoint::kCompletions, prompt);
  EXPECT_EQ(r.source, TokenSource::kEngine);
  EXPECT_EQ(r.tokens, FakeTokenizingEngine::Tokenize(prompt, true));
  EXPECT_NE(r.tokens, api::Tokenizer().Encode(prompt));
  EXPECT_EQ(t->stats().engine.load(), 1u);
  EXPECT_EQ(nlohmann::json::parse(engine_.last_tokenize_body())["add_special"], true);
}

TEST_F(PromptTokenizerTest, LlamaCppChatIsRenderedByTheEnginesOwnTemplate) {
  auto t = Make(EngineConfig(engine_.url()));
  const nlohmann::json body = {
      {"model", "tiny"},
      {"messages",
       {{{"role", "system"}, {"content", "be brief"}}, {{"role", "user"}, {"content", "hi"}}}}};
  PromptTokens r = Run(*t, api::Endpoint::kChatCompletions, "<|im_start|>ignored", body.dump());
  EXPECT_EQ(r.source, TokenSource::kEngine);
  EXPECT_EQ(r.tokens,
            FakeTokenizingEngine::Tokenize(FakeTokenizingEngine::Template(body["messages"]), true));
  EXPECT_EQ(engine_.template_calls, 1);
  EXPECT_EQ(engine_.tokenize_calls, 1);
}

TEST_F(PromptTokenizerTest, BuiltinChatTemplateTokenizesTheRenderedPrompt) {
  DaemonConfig c = EngineConfig(engine_.url());
  c.chat_template = "builtin";
  auto t = Make(c);
  PromptTokens r = Run(*t, api::Endpoint::kChatCompletions, "<|im_start|>user\nhi<|im_end|>\n",
                       R"({"messages":[{"role":"user","content":"hi"}]})");
  EXPECT_EQ(r.source, TokenSource::kEngine);
  EXPECT_EQ(r.tokens, FakeTokenizingEngine::Tokenize("<|im_start|>user\nhi<|im_end|>\n", true));
  EXPECT_EQ(engine_.template_calls, 0);
}

TEST_F(PromptTokenizerTest, EveryFailureFallsBackToBytesAndIsCounted) {
  auto t = Make(EngineConfig(engine_.url()));
  const std::string prompt = "some prompt text";
  const std::vector<uint32_t> bytes = api::Tokenizer().Encode(prompt);

  engine_.tokenize_mode = Mode::kError;
  PromptTokens r = Run(*t, api::Endpoint::kCompletions, prompt);
  EXPECT_EQ(r.source, TokenSource::kFallback);
  EXPECT_EQ(r.tokens, bytes);
  EXPECT_NE(r.fallback_reason.find("500"), std::string::npos) << r.fallback_reason;
  EXPECT_EQ(t->stats().fallback_error.load(), 1u);

  engine_.tokenize_mode = Mode::kGarbage;
  r = Run(*t, api::Endpoint::kCompletions, prompt);
  EXPECT_EQ(r.source, TokenSource::kFallback);
  EXPECT_EQ(r.tokens, bytes);
  EXPECT_EQ(t->stats().fallback_invalid.load(), 1u);

  engine_.tokenize_mode = Mode::kSlow;
  r = Run(*t, api::Endpoint::kCompletions, prompt);
  EXPECT_EQ(r.source, TokenSource::kFallback);
  EXPECT_EQ(r.tokens, bytes);
  EXPECT_EQ(t->stats().fallback_timeout.load(), 1u);  // the deadline ended the call

  // A chat body without messages cannot go to the engine's template: bytes, counted, no call.
  engine_.tokenize_mode = Mode::kOk;
  const int calls = engine_.tokenize_calls + engine_.template_calls;
  r = Run(*t, api::Endpoint::kChatCompletions, prompt, R"({"model":"tiny"})");
  EXPECT_EQ(r.source, TokenSource::kFallback);
  EXPECT_EQ(t->stats().fallback_invalid.load(), 2u);
  EXPECT_EQ(engine_.tokenize_calls + engine_.template_calls, calls);
  EXPECT_EQ(t->stats().engine.load(), 0u);
}

TEST_F(PromptTokenizerTest, UnreachableEngineFallsBack) {
  DaemonConfig c = EngineConfig("http://127.0.0.1:1");
  auto t = Make(c);
  PromptTokens r = Run(*t, api::Endpoint::kCompletions, "abc def");
  EXPECT_EQ(r.source, TokenSource::kFallback);
  EXPECT_EQ(r.tokens, api::Tokenizer().Encode("abc def"));
  EXPECT_EQ(t->stats().fallback_error.load() + t->stats().fallback_timeout.load(), 1u);
}

TEST(KeyingConfigTest, ResolvesAndRefusesBadCombinations) {
  DaemonConfig c;
  EXPECT_EQ(ResolveKeying(c).value().tokenizer, TokenizerMode::kBytes);
  EXPECT_EQ(ResolveKeying(c).value().chat_template, ChatTemplateMode::kBuiltin);
  c.tokenizer = "engine";  // the simulated engine has no tokenizer
  EXPECT_FALSE(ResolveKeying(c).ok());
  c = EngineConfig("http://127.0.0.1:9", "generic");  // no known /tokenize
  EXPECT_FALSE(ResolveKeying(c).ok());
  c = EngineConfig("http://127.0.0.1:9", "sglang");  // auto: SGLang cannot render chat
  EXPECT_EQ(ResolveKeying(c).value().chat_template, ChatTemplateMode::kBuiltin);
  c.chat_template = "engine";
  EXPECT_FALSE(ResolveKeying(c).ok());
  c = EngineConfig("http://127.0.0.1:9", "vllm");
  EXPECT_EQ(ResolveKeying(c).value().chat_template, ChatTemplateMode::kEngine);
  c.tokenizer = "words";
  EXPECT_FALSE(ResolveKeying(c).ok());
  // The keying mode is part of the key namespace: nodes that disagree share no keys.
  DaemonConfig bytes;
  DaemonConfig engine = EngineConfig("http://127.0.0.1:9");
  EXPECT_EQ(KeyNamespace(bytes), "");
  EXPECT_NE(KeyNamespace(engine), KeyNamespace(bytes));
  bytes.key_namespace = "seed-1";
  EXPECT_EQ(KeyNamespace(bytes), "seed-1");
}

}  // namespace
}  // namespace hearsay::net::prompt_tokenizer_test
