// FakeOpenAiUpstream: the answer derived from the request, and each fault mode, over real HTTP.
#include "hearsay/testkit/fake_openai_upstream.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hearsay/testkit/blocking_http.h"

namespace hearsay::testkit {
namespace {

using namespace std::chrono_literals;
using Mode = FakeOpenAiUpstream::Mode;
using nlohmann::json;

// The JSON payloads of an SSE body; "[DONE]" as a string.
std::vector<json> Events(const std::string& body) {
  std::vector<json> out;
  for (size_t pos = 0; (pos = body.find("data: ", pos)) != std::string::npos;) {
    const size_t end = body.find("\n\n", pos);
    const std::string data = body.substr(pos + 6, end - pos - 6);
    out.push_back(data == "[DONE]" ? json("[DONE]") : json::parse(data, nullptr, false));
    pos = end;
  }
  return out;
}

TEST(FakeOpenAiUpstreamTest, StreamsOneChunkPerMaxTokenWithTimingsAndUsage) {
  FakeOpenAiUpstream fake;
  fake.set_text("ab");
  Result<HttpResponse> r = HttpPostJson(
      fake.address(), "/v1/completions",
      R"({"model":"m","prompt":"one two three four five","max_tokens":3,"stream":true})", 5s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  const std::vector<json> ev = Events(r->body);
  ASSERT_EQ(ev.size(), 6u) << r->body;  // 3 tokens, the finish chunk, usage, [DONE]
  for (int i = 0; i < 3; ++i) EXPECT_EQ(ev[i]["choices"][0]["text"], "ab") << r->body;
  EXPECT_EQ(ev[0]["timings"]["cache_n"], 2);
  EXPECT_EQ(ev[0]["timings"]["prompt_n"], 3);
  EXPECT_FALSE(ev[1].contains("timings"));
  EXPECT_EQ(ev[3]["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(ev[4]["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(ev[4]["usage"]["completion_tokens"], 3);
  EXPECT_EQ(ev[4]["usage"]["prompt_tokens_details"]["cached_tokens"], 2);
  EXPECT_EQ(ev[5], "[DONE]");
  EXPECT_EQ(fake.completions(), 1);
  EXPECT_EQ(fake.models_asked(), (std::map<std::string, int>{{"m", 1}}));
}

TEST(FakeOpenAiUpstreamTest, ChatAnswersWithDeltasAndCountsMessageWords) {
  FakeOpenAiUpstream fake;
  Result<HttpResponse> r = HttpPostJson(
      fake.address(), "/v1/chat/completions",
      R"({"model":"m","stream":true,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi there you"}]})",
      5s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<json> ev = Events(r->body);
  ASSERT_EQ(ev.size(), 4u) << r->body;  // max_tokens absent: one chunk
  EXPECT_EQ(ev[0]["choices"][0]["delta"]["content"], " tok");
  EXPECT_EQ(ev[2]["usage"]["prompt_tokens"], 5);
}

TEST(FakeOpenAiUpstreamTest, AnswersInOnePieceWithoutStream) {
  FakeOpenAiUpstream fake;
  Result<HttpResponse> r = HttpPostJson(
      fake.address(), "/v1/chat/completions",
      R"({"model":"m","max_tokens":2,"messages":[{"role":"user","content":"a b c d"}]})", 5s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const json a = json::parse(r->body);
  EXPECT_EQ(a["object"], "chat.completion");
  EXPECT_EQ(a["choices"][0]["message"]["content"], " tok tok");
  EXPECT_EQ(a["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(a["usage"]["prompt_tokens_details"]["cached_tokens"], 2);
}

TEST(FakeOpenAiUpstreamTest, FaultModes) {
  FakeOpenAiUpstream fake;
  const std::string body = R"({"model":"m","prompt":"x","max_tokens":1})";
  EXPECT_EQ(HttpGet(fake.address(), "/health", 5s)->status, 200);
  EXPECT_EQ(HttpGet(fake.address(), "/slots", 5s)->body, "[]");

  fake.set_health_status(503);
  EXPECT_EQ(HttpGet(fake.address(), "/health", 5s)->status, 503);
  fake.set_health_status(200);

  fake.set_mode(Mode::kDown);
  EXPECT_EQ(HttpGet(fake.address(), "/health", 5s)->status, 503);
  EXPECT_EQ(HttpPostJson(fake.address(), "/v1/completions", body, 5s)->status, 503);
  EXPECT_EQ(fake.completions(), 0);

  fake.set_mode(Mode::kServerError);
  fake.set_server_error(500, "kv cache exploded");
  Result<HttpResponse> r = HttpPostJson(fake.address(), "/v1/completions", body, 5s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 500);
  EXPECT_NE(r->body.find("kv cache exploded"), std::string::npos);

  fake.set_mode(Mode::kTooBusy);
  r = HttpPostJson(fake.address(), "/v1/completions", body, 5s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(r->Header("retry-after"), "1");

  fake.set_mode(Mode::kGarbage);
  r = HttpPostJson(fake.address(), "/v1/completions", body, 5s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  ASSERT_EQ(Events(r->body).size(), 1u);
  EXPECT_TRUE(Events(r->body)[0].is_discarded()) << r->body;

  fake.set_mode(Mode::kSilent);
  EXPECT_FALSE(HttpPostJson(fake.address(), "/v1/completions", body, 300ms).ok());
  EXPECT_EQ(fake.completions(), 4);

  fake.set_mode(Mode::kOk);
  EXPECT_EQ(HttpPostJson(fake.address(), "/v1/completions", "not json", 5s)->status, 400);
  EXPECT_EQ(HttpGet(fake.address(), "/v2/nothing", 5s)->status, 404);
  fake.Close();
  EXPECT_FALSE(HttpGet(fake.address(), "/health", 2s).ok()) << "closed: the port refuses";
}

TEST(FakeOpenAiUpstreamTest, ListsModelsInEachEnginesShape) {
  FakeOpenAiUpstream fake;
  json page = json::parse(HttpGet(fake.address(), "/v1/models", 5s)->body);
  EXPECT_EQ(page["data"][0]["id"], "fake-model");
  EXPECT_EQ(page["data"][0]["meta"]["n_ctx_train"], 4096) << "llama.cpp by default";
  EXPECT_EQ(page["models"][0]["name"], "fake-model");

  using F = FakeOpenAiUpstream::ModelsFormat;
  fake.set_models({F::kVllm, {"base"}, {"lora-a", "lora-b"}, 8192});
  page = json::parse(HttpGet(fake.address(), "/v1/models", 5s)->body);
  ASSERT_EQ(page["data"].size(), 3u);
  EXPECT_TRUE(page["data"][0]["parent"].is_null());
  EXPECT_EQ(page["data"][0]["max_model_len"], 8192);
  EXPECT_EQ(page["data"][2]["id"], "lora-b");
  EXPECT_EQ(page["data"][2]["parent"], "base");

  fake.set_models({F::kSglang, {"m1", "m2"}, {}, 1024});
  page = json::parse(HttpGet(fake.address(), "/v1/models", 5s)->body);
  ASSERT_EQ(page["data"].size(), 2u);
  EXPECT_EQ(page["data"][1]["owned_by"], "sglang");
  EXPECT_FALSE(page["data"][1].contains("parent"));
}

TEST(FakeOpenAiUpstreamTest, PublishesOtherClientsInEachEnginesQueueShape) {
  FakeOpenAiUpstream fake;
  fake.set_other_clients(3, 5);
  fake.set_slots(2, 7);
  auto metrics = [&] { return HttpGet(fake.address(), "/metrics", 5s).value(); };
  EXPECT_NE(metrics().body.find("llamacpp:requests_processing 3\n"), std::string::npos);
  EXPECT_NE(metrics().body.find("llamacpp:requests_deferred 5\n"), std::string::npos);
  using F = FakeOpenAiUpstream::QueueFormat;
  fake.set_queue_format(F::kVllm);
  EXPECT_NE(metrics().body.find("vllm:num_requests_waiting{model_name=\"m\"} 5.0"),
            std::string::npos);
  fake.set_queue_format(F::kSglang);
  EXPECT_NE(metrics().body.find("sglang:num_queue_reqs{"), std::string::npos);
  fake.set_queue_format(F::kLlamaCppNoMetrics);
  EXPECT_EQ(metrics().status, 501);
  // Both slots busy (3 running), each with 7 output tokens to go.
  const json slots = json::parse(HttpGet(fake.address(), "/slots", 5s)->body);
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_TRUE(slots[1]["is_processing"]);
  EXPECT_EQ(slots[1]["next_token"][0]["n_remain"], 7);
}

TEST(FakeOpenAiUpstreamTest, DelaysTakeRealTimeAndAreReportedAsPromptMs) {
  FakeOpenAiUpstream fake;
  fake.set_delays({.base_ms = 5, .prefill_ms_per_token = 2, .decode_ms_per_token = 3});
  const auto start = std::chrono::steady_clock::now();
  Result<HttpResponse> r = HttpPostJson(
      fake.address(), "/v1/completions",
      R"({"model":"m","prompt":"a b c d e f g h i j","max_tokens":4,"stream":true})", 5s);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<json> ev = Events(r->body);
  ASSERT_EQ(ev.size(), 7u) << r->body;
  EXPECT_DOUBLE_EQ(ev[0]["timings"]["prompt_ms"].get<double>(), 5 + 2 * 5);
  // A lower bound only: 5 ms + 5 uncached words x 2 ms, then 3 gaps of 3 ms.
  EXPECT_GE(took, 24ms);
  r = HttpPostJson(fake.address(), "/v1/completions",
                   R"({"model":"m","prompt":"a b","max_tokens":2})", 5s);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(json::parse(r->body)["usage"]["completion_tokens"], 2);
}

}  // namespace
}  // namespace hearsay::testkit
