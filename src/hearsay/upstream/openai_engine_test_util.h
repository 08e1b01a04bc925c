// The OpenAiEngine test fixture: a scripted upstream (FakeTransport) in virtual time, an
// observer that records every callback, and builders for streamed chunks and requests.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "hearsay/simenv/virtual_scheduler.h"
#include "hearsay/upstream/fake_transport_test_util.h"
#include "hearsay/upstream/openai_engine.h"

namespace hearsay::upstream::testing {

using engine::RequestId;

struct Recorder final : engine::EngineObserver {
  struct Rec {
    bool admitted = false;
    bool first = false;
    engine::FirstToken first_token;
    std::string text;
    bool complete = false;
    engine::Usage usage;
    bool error = false;
    Status status;
    bool text_before_first = false;
  };
  std::map<RequestId, Rec> recs;
  engine::Engine* cancel_on_first = nullptr;

  void OnAdmitted(RequestId id, const engine::Admission&) override { recs[id].admitted = true; }
  void OnFirstToken(RequestId id, const engine::FirstToken& f) override {
    recs[id].first = true;
    recs[id].first_token = f;
    if (cancel_on_first) cancel_on_first->Cancel(id);
  }
  void OnText(RequestId id, std::string_view t) override {
    if (!recs[id].first) recs[id].text_before_first = true;
    recs[id].text += t;
  }
  void OnComplete(RequestId id, const engine::Usage& u) override {
    recs[id].complete = true;
    recs[id].usage = u;
  }
  void OnError(RequestId id, const Status& s) override {
    recs[id].error = true;
    recs[id].status = s;
  }
};

inline std::string Chunk(std::string_view text, int cache_n = -1, int prompt_n = -1) {
  nlohmann::json j = {{"object", "text_completion"},
                      {"choices", {{{"index", 0}, {"text", text}, {"finish_reason", nullptr}}}}};
  if (cache_n >= 0)
    j["timings"] = {{"cache_n", cache_n}, {"prompt_n", prompt_n}, {"prompt_ms", 2.5}};
  return "data: " + j.dump() + "\n\n";
}

inline std::string UsageChunk(int prompt, int completion, int cached) {
  nlohmann::json j = {{"choices", nlohmann::json::array()},
                      {"usage",
                       {{"prompt_tokens", prompt},
                        {"completion_tokens", completion},
                        {"prompt_tokens_details", {{"cached_tokens", cached}}}}}};
  return "data: " + j.dump() + "\n\n";
}

class OpenAiEngineTest : public ::testing::Test {
 protected:
  void Make(OpenAiEngineOptions o = {}) {
    o.capacity_tokens = o.capacity_tokens == 65536 ? 4096 : o.capacity_tokens;
    auto keyer = prefix::BlockKeyer::Create("upstream-test-secret-0123456789", "m", "t",
                                            {.tokens_per_block = 4, .bytes_per_block = 64});
    auto e = OpenAiEngine::Create(sched_, transport_, keyer.value(), o);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
    sched_.RunFor(std::chrono::milliseconds(0));
    AnswerProbes(200);
  }
  // Answers every open health probe.
  void AnswerProbes(int status) {
    for (auto& c : transport_.Open("/health")) {
      if (status == 0) {
        c->Done(UnavailableError("connection refused"));
      } else {
        c->Respond(status, status == 200 ? "{\"status\":\"ok\"}" : "{\"error\":\"loading\"}");
      }
    }
  }
  using TokenIdBase = engine::TokenId;
  engine::EngineRequest Req(RequestId id, size_t tokens, TokenIdBase base = 1) {
    engine::EngineRequest r;
    r.id = id;
    for (size_t i = 0; i < tokens; ++i) r.prompt.push_back(static_cast<engine::TokenId>(base + i));
    r.max_output_tokens = 4;
    r.api_path = "/v1/completions";
    r.api_body = R"({"model":"m","prompt":"hello world","max_tokens":4})";
    return r;
  }
  std::shared_ptr<FakeTransport::Call> LastCompletion() {
    auto open = transport_.Open("/v1/completions");
    return open.empty() ? nullptr : open.back();
  }

  simenv::VirtualScheduler sched_;
  FakeTransport transport_;
  Recorder rec_;
  std::unique_ptr<OpenAiEngine> engine_;
};

}  // namespace hearsay::upstream::testing
