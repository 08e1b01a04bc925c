// OpenAiEngine tests in virtual time against a scripted upstream: pass-through and streaming,
// cache evidence and drift, every upstream fault (down, slow, 5xx, 4xx, garbage, mid-stream
// break), including the health state that gossip advertises, and served models.
#include "hearsay/upstream/openai_engine.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hearsay/upstream/engine_metrics.h"
#include "hearsay/upstream/openai_engine_test_util.h"

namespace hearsay::upstream {
namespace {

using namespace std::chrono_literals;
using engine::RequestId;
using testing::Chunk;
using testing::FakeTransport;
using testing::OpenAiEngineTest;
using testing::UsageChunk;

TEST_F(OpenAiEngineTest, PassesThroughStreamsTextAndReportsUpstreamUsage) {
  OpenAiEngineOptions o;
  o.flavor = UpstreamFlavor::kLlamaCpp;
  o.model = "served-name";
  Make(o);
  ASSERT_TRUE(engine_->Submit(Req(1, 16), &rec_).ok());
  auto call = LastCompletion();
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->request.method, "POST");
  auto body = nlohmann::json::parse(call->request.body);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_EQ(body["timings_per_token"], true);
  EXPECT_EQ(body["model"], "served-name");
  EXPECT_EQ(body["prompt"], "hello world");
  EXPECT_EQ(engine_->Load().waiting_requests, 1u);

  call->Headers(200);
  call->Body(Chunk("Hel", 0, 5));
  EXPECT_TRUE(rec_.recs[1].first);
  EXPECT_FALSE(rec_.recs[1].text_before_first);
  EXPECT_EQ(engine_->Load().running_requests, 1u);
  call->Body(Chunk("lo"));
  call->Body(UsageChunk(5, 2, 0));
  call->Body("data: [DONE]\n\n");
  call->Done();
  const auto& r = rec_.recs[1];
  EXPECT_EQ(r.text, "Hello");
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.usage, (engine::Usage{5, 2, 0}));
  EXPECT_EQ(engine_->Load().running_requests + engine_->Load().waiting_requests, 0u);
  EXPECT_GT(engine_->Load().prefill_ms_per_token, 0);
}

TEST_F(OpenAiEngineTest, EvidenceAtFirstTokenConfirmsAndFeedsTheIndex) {
  OpenAiEngineOptions o;
  o.flavor = UpstreamFlavor::kLlamaCpp;
  Make(o);
  std::vector<prefix::BlockEvent> ev;
  ASSERT_TRUE(engine_->Submit(Req(1, 16), &rec_).ok());
  // The prediction is in the index at once, before any evidence.
  auto req = Req(9, 16);
  EXPECT_EQ(engine_->CachedPrefixTokens(req.prompt), 16u);
  engine_->DrainCacheEvents(ev);
  EXPECT_EQ(ev.size(), 4u);
  auto c1 = LastCompletion();
  c1->Headers(200);
  c1->Body(Chunk("a", 0, 16));
  c1->Body("data: [DONE]\n\n");
  c1->Done();
  // Same prompt again: estimated 16 cached, the engine reports 15 (last token recomputed).
  ASSERT_TRUE(engine_->Submit(Req(2, 16), &rec_).ok());
  auto c2 = LastCompletion();
  c2->Headers(200);
  c2->Body(Chunk("b", 15, 1));
  EXPECT_EQ(rec_.recs[2].first_token.cached_tokens, 15u);  // the engine's own count
  EXPECT_EQ(rec_.recs[2].first_token.prompt_tokens, 16u);
  c2->Body("data: [DONE]\n\n");
  c2->Done();
  const auto& s = engine_->stats();
  EXPECT_EQ(s.evidence, 2u);
  EXPECT_EQ(s.estimated_cached_tokens, 16u);
  EXPECT_EQ(s.reported_cached_tokens, 15u);
  EXPECT_EQ(s.overestimates, 0u);
  EXPECT_FALSE(engine_->estimates_unreliable());
}

TEST_F(OpenAiEngineTest, ReportedMissRemovesStaleEntryAndPersistentDriftRaisesTheAlarm) {
  OpenAiEngineOptions o;
  o.drift = {.window = 4, .min_samples = 4, .threshold = 0.2, .clear_fraction = 0.5};
  Make(o);
  std::vector<prefix::BlockEvent> ev;
  auto serve = [&](RequestId id, int cached) {
    ASSERT_TRUE(engine_->Submit(Req(id, 32), &rec_).ok());
    auto c = LastCompletion();
    c->Headers(200);
    c->Body(Chunk("x"));
    c->Body(UsageChunk(32, 1, cached));
    c->Body("data: [DONE]\n\n");
    c->Done();
  };
  serve(1, 0);
  for (RequestId id = 2; id <= 4; ++id) serve(id, 0);  // the engine keeps missing: it evicts
  EXPECT_EQ(engine_->stats().overestimates, 3u);
  EXPECT_GE(engine_->stats().stale_entries_cut, 3u);
  EXPECT_TRUE(engine_->estimates_unreliable());
  EXPECT_EQ(engine_->stats().drift_alarms, 1u);
  EXPECT_DOUBLE_EQ(engine_->drift().ratio(), 96.0 / 128);
  // Flagged: predictions no longer count; a request in flight is not in the index.
  EXPECT_TRUE(engine_->tracker().evidence_only());
  ASSERT_TRUE(engine_->Submit(Req(100, 32, 5000), &rec_).ok());
  EXPECT_EQ(engine_->CachedPrefixTokens(Req(101, 32, 5000).prompt), 0u);
  engine_->Cancel(100);
  // The evidence agrees again: the first hit after the reset is underestimated (the tracker
  // forgot everything), then estimates match; the alarm clears once the misses leave the window.
  for (RequestId id = 5; id <= 9; ++id) serve(id, 32);
  EXPECT_FALSE(engine_->estimates_unreliable());
  EXPECT_EQ(engine_->stats().drift_cleared, 1u);
  EXPECT_FALSE(engine_->tracker().evidence_only());
}

TEST_F(OpenAiEngineTest, UpstreamDownFailsBeforeFirstTokenThenMarksUnhealthyAndRecovers) {
  OpenAiEngineOptions o;
  o.failures_to_unhealthy = 2;
  o.health_interval = 1s;
  Make(o);
  ASSERT_TRUE(engine_->Submit(Req(1, 8), &rec_).ok());
  LastCompletion()->Done(UnavailableError("connect: connection refused"));
  ASSERT_TRUE(rec_.recs[1].error);
  EXPECT_FALSE(rec_.recs[1].first);
  EXPECT_EQ(rec_.recs[1].status.code(), StatusCode::kUnavailable);
  EXPECT_NE(rec_.recs[1].status.message().find("connection refused"), std::string::npos);
  EXPECT_TRUE(engine_->healthy());  // one failure is not yet a verdict
  // The next health probe fails too: unhealthy.
  sched_.RunFor(1s);
  AnswerProbes(0);
  EXPECT_FALSE(engine_->healthy());
  EXPECT_EQ(engine_->stats().became_unhealthy, 1u);
  Status s = engine_->Submit(Req(2, 8), &rec_);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("unavailable"), std::string::npos);
  // Gossip sees a saturated engine (the overload flag's high-water marks).
  engine::EngineLoad l = engine_->Load();
  EXPECT_GE(l.waiting_requests, 64u);
  EXPECT_EQ(l.kv_used_tokens, l.kv_capacity_tokens);
  // The upstream comes back: the next probe answers 200.
  sched_.RunFor(1s);
  AnswerProbes(200);
  EXPECT_TRUE(engine_->healthy());
  EXPECT_LT(engine_->Load().waiting_requests, 64u);
  EXPECT_TRUE(engine_->Submit(Req(3, 8), &rec_).ok());
}

TEST_F(OpenAiEngineTest, LoadingUpstream503ProbeKeepsItUnhealthy) {
  OpenAiEngineOptions o;
  o.failures_to_unhealthy = 1;
  Make(o);
  sched_.RunFor(1s);
  AnswerProbes(503);
  EXPECT_FALSE(engine_->healthy());
  EXPECT_NE(engine_->unhealthy_reason().find("503"), std::string::npos);
}

TEST_F(OpenAiEngineTest, ServerErrorGivesItsMessageAndCountsAgainstHealth) {
  OpenAiEngineOptions o;
  o.failures_to_unhealthy = 1;
  Make(o);
  ASSERT_TRUE(engine_->Submit(Req(1, 8), &rec_).ok());
  LastCompletion()->Respond(
      500, R"({"error":{"code":500,"message":"KV cache full","type":"server_error"}})");
  ASSERT_TRUE(rec_.recs[1].error);
  EXPECT_EQ(rec_.recs[1].status.code(), StatusCode::kUnavailable);
  EXPECT_NE(rec_.recs[1].status.message().find("HTTP 500: KV cache full"), std::string::npos);
  EXPECT_FALSE(engine_->healthy());
  EXPECT_EQ(engine_->stats().http_5xx, 1u);
}

TEST_F(OpenAiEngineTest, ClientErrorIsPassedOnAndLeavesHealthAlone) {
  OpenAiEngineOptions o;
  o.failures_to_unhealthy = 1;
  Make(o);
  ASSERT_TRUE(engine_->Submit(Req(1, 8), &rec_).ok());
  LastCompletion()->Respond(400, R"({"error":{"message":"the request exceeds the context"}})");
  EXPECT_EQ(rec_.recs[1].status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(rec_.recs[1].status.message().find("exceeds the context"), std::string::npos);
  EXPECT_TRUE(engine_->healthy());
}

TEST_F(OpenAiEngineTest, GarbageStreamIsAClearError) {
  Make();
  ASSERT_TRUE(engine_->Submit(Req(1, 8), &rec_).ok());
  auto c = LastCompletion();
  c->Headers(200);
  c->Body("data: {this is not json\n\n");
  ASSERT_TRUE(rec_.recs[1].error);
  EXPECT_EQ(rec_.recs[1].status.code(), StatusCode::kDataLoss);
  EXPECT_NE(rec_.recs[1].status.message().find("malformed"), std::string::npos);
  EXPECT_TRUE(c->cancelled);  // the engine hung up
  // A 200 that ends with nothing at all is garbage too.
  ASSERT_TRUE(engine_->Submit(Req(2, 8), &rec_).ok());
  LastCompletion()->Respond(200, "<html>hello</html>");
  EXPECT_EQ(rec_.recs[2].status.code(), StatusCode::kDataLoss);
  EXPECT_EQ(engine_->stats().malformed, 2u);
}

TEST_F(OpenAiEngineTest, ErrorEventInsideTheStreamEndsTheRequest) {
  Make();
  ASSERT_TRUE(engine_->Submit(Req(1, 8), &rec_).ok());
  auto c = LastCompletion();
  c->Headers(200);
  c->Body(Chunk("partial"));
  c->Body("data: {\"error\":{\"message\":\"out of memory\"}}\n\n");
  const auto& r = rec_.recs[1];
  EXPECT_TRUE(r.first);
  EXPECT_EQ(r.text, "partial");
  ASSERT_TRUE(r.error);
  EXPECT_NE(r.status.message().find("out of memory"), std::string::npos);
}

TEST_F(OpenAiEngineTest, SlowUpstreamTimesOutAtTheFirstTokenDeadline) {
  OpenAiEngineOptions o;
  o.first_token_timeout = 3s;
  o.health_interval = 10s;
  Make(o);
  ASSERT_TRUE(engine_->Submit(Req(1, 8), &rec_).ok());
  auto c = LastCompletion();
  c->Headers(200);  // headers, but no output
  sched_.RunFor(2999ms);
  EXPECT_FALSE(rec_.recs[1].error);
  sched_.RunFor(1ms);
  ASSERT_TRUE(rec_.recs[1].error);
  EXPECT_EQ(rec_.recs[1].status.code(), StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(c->cancelled);
  EXPECT_EQ(engine_->stats().timeouts, 1u);
}

// A client that does not stream: the upstream is asked for one JSON answer, which gives the
// first token, the text, the evidence and the usage at once.
TEST_F(OpenAiEngineTest, AnswerInOnePieceWhenNobodyStreams) {
  OpenAiEngineOptions o;
  o.flavor = UpstreamFlavor::kLlamaCpp;
  Make(o);
  engine::EngineRequest req = Req(1, 16);
  req.stream = false;
  ASSERT_TRUE(engine_->Submit(std::move(req), &rec_).ok());
  auto call = LastCompletion();
  ASSERT_NE(call, nullptr);
  auto body = nlohmann::json::parse(call->request.body);
  EXPECT_EQ(body["stream"], false);
  EXPECT_FALSE(body.contains("stream_options"));
  EXPECT_EQ(body["cache_prompt"], true);
  // No prefill cost learned yet: not counted as waiting (its first token is never seen).
  EXPECT_EQ(engine_->Load().waiting_requests, 0u);
  EXPECT_EQ(engine_->Load().running_requests, 1u);

  call->Headers(200);
  const nlohmann::json answer = {
      {"object", "text_completion"},
      {"choices", {{{"index", 0}, {"text", "Hello"}, {"finish_reason", "length"}}}},
      {"usage",
       {{"prompt_tokens", 16},
        {"completion_tokens", 4},
        {"prompt_tokens_details", {{"cached_tokens", 0}}}}},
      {"timings", {{"cache_n", 0}, {"prompt_n", 16}, {"prompt_ms", 8.0}}}};
  const std::string text = answer.dump();
  call->Body(std::string_view(text).substr(0, 10));  // pieces are gathered
  EXPECT_FALSE(rec_.recs[1].first);
  call->Body(std::string_view(text).substr(10));
  call->Done();
  const auto& r = rec_.recs[1];
  EXPECT_TRUE(r.first);
  EXPECT_FALSE(r.text_before_first);
  EXPECT_EQ(r.text, "Hello");
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.usage, (engine::Usage{16, 4, 0}));
  EXPECT_EQ(engine_->stats().evidence, 1u);
  EXPECT_DOUBLE_EQ(engine_->Load().prefill_ms_per_token, 0.5);

  // Now that prefill costs 0.5 ms per token, the next one-piece request waits for 8 ms.
  engine::EngineRequest next = Req(2, 16, 100);
  next.stream = false;
  next.api_path = "/v1/chat/completions";
  next.api_body = R"({"model":"m","messages":[{"role":"user","content":"hi"}]})";
  ASSERT_TRUE(engine_->Submit(std::move(next), &rec_).ok());
  EXPECT_EQ(engine_->Load().waiting_requests, 1u);
  EXPECT_EQ(engine_->Load().waiting_prefill_tokens, 16u);
  sched_.RunFor(8ms);
  EXPECT_EQ(engine_->Load().waiting_requests, 0u);
  auto chat = transport_.Open("/v1/chat/completions").back();
  chat->Respond(
      200,
      R"({"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hi!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":16,"completion_tokens":2}})");
  EXPECT_EQ(rec_.recs[2].text, "Hi!");
  EXPECT_TRUE(rec_.recs[2].complete);
  EXPECT_EQ(engine_->Load().running_requests + engine_->Load().waiting_requests, 0u);
}

TEST_F(OpenAiEngineTest, AnswerInOnePieceCopesWithAStreamAndRefusesGarbageAndSize) {
  OpenAiEngineOptions o;
  o.max_answer_bytes = 256;
  Make(o);
  auto submit = [&](RequestId id) {
    engine::EngineRequest req = Req(id, 8, id * 100);
    req.stream = false;
    ASSERT_TRUE(engine_->Submit(std::move(req), &rec_).ok());
  };
  // A server that streams anyway.
  submit(1);
  auto c1 = LastCompletion();
  c1->Respond(200, Chunk("ab") + "data: [DONE]\n\n");
  EXPECT_EQ(rec_.recs[1].text, "ab");
  EXPECT_TRUE(rec_.recs[1].complete);
  // Not JSON, not a stream.
  submit(2);
  LastCompletion()->Respond(200, "<html>oops</html>");
  ASSERT_TRUE(rec_.recs[2].error);
  EXPECT_EQ(rec_.recs[2].status.code(), StatusCode::kDataLoss);
  // Over the size bound.
  submit(3);
  auto c3 = LastCompletion();
  c3->Headers(200);
  c3->Body(std::string(257, ' '));
  ASSERT_TRUE(rec_.recs[3].error);
  EXPECT_EQ(rec_.recs[3].status.code(), StatusCode::kDataLoss);
  EXPECT_NE(rec_.recs[3].status.message().find("over 256 bytes"), std::string::npos);
  EXPECT_TRUE(c3->cancelled);
}

TEST_F(OpenAiEngineTest, AnswerInOnePieceHasTheAnswerDeadline) {
  OpenAiEngineOptions o;
  o.first_token_timeout = 3s;
  o.answer_timeout = 20s;
  o.health_interval = 60s;
  Make(o);
  engine::EngineRequest req = Req(1, 8);
  req.stream = false;
  ASSERT_TRUE(engine_->Submit(std::move(req), &rec_).ok());
  auto c = LastCompletion();
  EXPECT_EQ(c->request.response_timeout, 21s);
  sched_.RunFor(19999ms);  // far past the first-token deadline: generation takes time
  EXPECT_FALSE(rec_.recs[1].error);
  sched_.RunFor(1ms);
  ASSERT_TRUE(rec_.recs[1].error);
  EXPECT_EQ(rec_.recs[1].status.code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(rec_.recs[1].status.message().find("no answer within 20000 ms"), std::string::npos);
  EXPECT_TRUE(c->cancelled);
}

TEST_F(OpenAiEngineTest, MidStreamBreakEndsWithErrorAfterText) {
  Make();
  ASSERT_TRUE(engine_->Submit(Req(1, 8), &rec_).ok());
  auto c = LastCompletion();
  c->Headers(200);
  c->Body(Chunk("abc"));
  c->Done(UnavailableError("connection reset"));
  const auto& r = rec_.recs[1];
  EXPECT_TRUE(r.first);
  EXPECT_EQ(r.text, "abc");
  EXPECT_TRUE(r.error);
  EXPECT_FALSE(r.complete);
}

TEST_F(OpenAiEngineTest, CancelStopsCallbacksAndHangsUp) {
  Make();
  ASSERT_TRUE(engine_->Submit(Req(1, 8), &rec_).ok());
  auto c = LastCompletion();
  EXPECT_TRUE(engine_->Cancel(1));
  EXPECT_FALSE(engine_->Cancel(1));
  EXPECT_TRUE(c->cancelled);
  c->Headers(200);
  c->Body(Chunk("late"));
  c->Done();
  EXPECT_FALSE(rec_.recs[1].first);
  EXPECT_FALSE(rec_.recs[1].complete);
  EXPECT_FALSE(rec_.recs[1].error);
  // Cancelling from inside OnFirstToken is safe too.
  rec_.cancel_on_first = engine_.get();
  ASSERT_TRUE(engine_->Submit(Req(2, 8), &rec_).ok());
  auto c2 = LastCompletion();
  c2->Headers(200);
  c2->Body(Chunk("x") + Chunk("y") + "data: [DONE]\n\n");
  EXPECT_TRUE(rec_.recs[2].first);
  EXPECT_EQ(rec_.recs[2].text, "");
  EXPECT_FALSE(rec_.recs[2].complete);
  sched_.RunFor(1ms);
}

TEST_F(OpenAiEngineTest, BadSubmissionsAreRejectedWithoutCallbacks) {
  OpenAiEngineOptions o;
  o.max_in_flight = 1;
  o.max_context_tokens = 20;
  Make(o);
  auto r = Req(1, 8);
  r.api_path = "/v1/embeddings";
  EXPECT_EQ(engine_->Submit(r, &rec_).code(), StatusCode::kInvalidArgument);
  r = Req(1, 8);
  r.api_body = "[1,2]";
  EXPECT_EQ(engine_->Submit(r, &rec_).code(), StatusCode::kInvalidArgument);
  r = Req(1, 0);
  EXPECT_EQ(engine_->Submit(r, &rec_).code(), StatusCode::kInvalidArgument);
  r = Req(1, 18);
  EXPECT_EQ(engine_->Submit(r, &rec_).code(), StatusCode::kInvalidArgument);  // 18 + 4 > 20
  EXPECT_TRUE(engine_->Submit(Req(1, 8), &rec_).ok());
  EXPECT_EQ(engine_->Submit(Req(1, 8), &rec_).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(engine_->Submit(Req(2, 8), &rec_).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(rec_.recs.size(), 0u);
}

TEST_F(OpenAiEngineTest, ANamespacedRequestReachesVllmWithItsOwnCacheSalt) {
  OpenAiEngineOptions o;
  o.flavor = UpstreamFlavor::kVllm;
  Make(o);
  auto r = Req(1, 16);
  r.api_body = R"({"model":"m","prompt":"hello world","max_tokens":4,"cache_salt":"client"})";
  r.cache_namespace = 0xabc;
  ASSERT_TRUE(engine_->Submit(r, &rec_).ok());
  EXPECT_EQ(nlohmann::json::parse(LastCompletion()->request.body)["cache_salt"],
            "hearsay-0000000000000abc");
  // The shared namespace passes the client's body as it is.
  auto shared = Req(2, 16);
  shared.api_body = R"({"model":"m","prompt":"hello","max_tokens":4})";
  ASSERT_TRUE(engine_->Submit(shared, &rec_).ok());
  EXPECT_FALSE(nlohmann::json::parse(LastCompletion()->request.body).contains("cache_salt"));
}

TEST_F(OpenAiEngineTest, ReadsServedModelsAtStartAndFollowsChanges) {
  OpenAiEngineOptions o;
  o.models_poll_interval = 10s;
  Make(o);
  std::vector<std::vector<std::string>> seen;
  engine_->set_on_served_models([&](const ServedModels& m) {
    seen.emplace_back();
    for (const ServedModel& x : m.models) seen.back().push_back(x.name);
    for (const std::string& a : m.models.front().adapters) seen.back().push_back("+" + a);
  });
  auto polls = transport_.Open("/v1/models");
  ASSERT_EQ(polls.size(), 1u) << "read at start";
  polls[0]->Respond(200, R"({"object":"list","data":[{"id":"base","max_model_len":8192}]})");
  ASSERT_TRUE(engine_->served_models().has_value());
  EXPECT_EQ(engine_->served_models()->models[0].context_length, 8192u);
  // The same page again is no change; an adapter loaded is one.
  sched_.RunFor(10s);
  AnswerProbes(200);
  transport_.Open("/v1/models")[0]->Respond(
      200, R"({"object":"list","data":[{"id":"base","max_model_len":8192}]})");
  sched_.RunFor(10s);
  AnswerProbes(200);
  transport_.Open("/v1/models")[0]->Respond(
      200, R"({"data":[{"id":"base","max_model_len":8192},{"id":"lora","parent":"base"}]})");
  // A failed read keeps the last list.
  sched_.RunFor(10s);
  AnswerProbes(200);
  transport_.Open("/v1/models")[0]->Respond(503, "loading");
  // The engine restarted with another model.
  sched_.RunFor(10s);
  AnswerProbes(200);
  transport_.Open("/v1/models")[0]->Respond(200, R"({"data":[{"id":"other"}]})");
  EXPECT_EQ(seen, (std::vector<std::vector<std::string>>{{"base"}, {"base", "+lora"}, {"other"}}));
  EXPECT_EQ(engine_->served_models()->models[0].name, "other");
  EXPECT_EQ(engine_->stats().models_polls, 4u);
  EXPECT_EQ(engine_->stats().models_changes, 3u);
  EXPECT_EQ(engine_->stats().models_poll_failures, 1u);
}

TEST_F(OpenAiEngineTest, AResolvedRequestReachesTheEngineUnderTheNameItLists) {
  Make();
  auto sent_model = [&](const std::string& model, const std::string& adapter, RequestId id) {
    auto r = Req(id, 8);
    r.model = model;
    r.adapter = adapter;
    EXPECT_TRUE(engine_->Submit(r, &rec_).ok());
    return nlohmann::json::parse(LastCompletion()->request.body)["model"].get<std::string>();
  };
  // Before the engine's list is read the client's name passes.
  EXPECT_EQ(sent_model("pool-name", "", 1), "m");
  transport_.Open("/v1/models")[0]->Respond(
      200,
      R"({"data":[{"id":"engine-name"},{"id":"other"},{"id":"lora","parent":"engine-name"}]})");
  EXPECT_EQ(sent_model("pool-name", "", 2), "engine-name") << "the node's model: the first listed";
  EXPECT_EQ(sent_model("other", "", 3), "other");
  EXPECT_EQ(sent_model("pool-name", "lora", 4), "lora");
  EXPECT_EQ(sent_model("", "", 5), "m") << "a node without a service: unchanged";
}

TEST_F(OpenAiEngineTest, WithoutAPeriodModelsAreReadUntilTheFirstGoodPage) {
  OpenAiEngineOptions o;
  o.models_poll_interval = 0s;
  o.health_interval = 1s;
  Make(o);
  transport_.Open("/v1/models")[0]->Respond(200, "not json");
  EXPECT_FALSE(engine_->served_models().has_value());
  sched_.RunFor(1s);
  AnswerProbes(200);
  transport_.Open("/v1/models")[0]->Respond(200, R"({"data":[{"id":"m"}]})");
  ASSERT_TRUE(engine_->served_models().has_value());
  sched_.RunFor(5s);
  AnswerProbes(200);
  EXPECT_TRUE(transport_.Open("/v1/models").empty());
  EXPECT_EQ(engine_->stats().models_polls, 1u);
}

TEST_F(OpenAiEngineTest, GenericUpstreamIsNotPolledForMetrics) {
  Make();
  sched_.RunFor(5s);
  EXPECT_TRUE(transport_.Open("/metrics").empty());
}

TEST_F(OpenAiEngineTest, LearnsDecodeSpeedFromTheStream) {
  Make();
  EXPECT_EQ(engine_->decode_ms_per_token(), 0);
  ASSERT_TRUE(engine_->Submit(Req(1, 16), &rec_).ok());
  auto call = LastCompletion();
  call->Headers(200);
  call->Body(Chunk("a"));
  sched_.RunFor(100ms);
  call->Body(Chunk("bcde"));
  call->Body(UsageChunk(16, 5, 0));
  call->Body("data: [DONE]\n\n");
  call->Done();
  ASSERT_TRUE(rec_.recs[1].complete);
  // 100 ms from the first token to the last, over the 4 tokens after the first.
  EXPECT_DOUBLE_EQ(engine_->decode_ms_per_token(), 25.0);
}

TEST_F(OpenAiEngineTest, DestroyingTheEngineCancelsEverything) {
  Make();
  ASSERT_TRUE(engine_->Submit(Req(1, 8), &rec_).ok());
  auto c = LastCompletion();
  engine_.reset();
  EXPECT_TRUE(c->cancelled);
  sched_.RunFor(10s);  // no timer of the dead engine fires
  EXPECT_TRUE(rec_.recs.empty());
}

TEST(OpenAiEngineOptionsTest, RejectsBadOptions) {
  OpenAiEngineOptions o;
  EXPECT_TRUE(ValidateOpenAiEngineOptions(o).ok());
  o.capacity_tokens = 0;
  EXPECT_FALSE(ValidateOpenAiEngineOptions(o).ok());
  o = {};
  o.health_path = "health";
  EXPECT_FALSE(ValidateOpenAiEngineOptions(o).ok());
  o = {};
  o.drift.threshold = 0;
  EXPECT_FALSE(ValidateOpenAiEngineOptions(o).ok());
  o = {};
  o.prefix_hold_max = -std::chrono::milliseconds(1);
  EXPECT_FALSE(ValidateOpenAiEngineOptions(o).ok());
  EXPECT_EQ(ParseUpstreamFlavor("llamacpp").value(), UpstreamFlavor::kLlamaCpp);
  EXPECT_FALSE(ParseUpstreamFlavor("tgi").ok());
}

}  // namespace
}  // namespace hearsay::upstream