// What the simulated engine's tests share (sim_engine_test.cc, sim_engine_property_test.cc): a
// recording observer, token helpers, and a fixture that owns an engine in virtual time.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <vector>

#include "hearsay/engine/sim_engine.h"
#include "hearsay/simenv/virtual_scheduler.h"

namespace hearsay::engine {

// Records every callback with its virtual time.
class Recorder : public EngineObserver {
 public:
  struct Rec {
    bool admitted = false;
    Admission admission;
    TimePoint admitted_at{};
    bool first = false;
    FirstToken first_token;
    TimePoint first_at{};
    std::vector<TokenId> tokens;  // every output token, the first included
    std::vector<TimePoint> token_times;
    bool complete = false;
    Usage usage;
    TimePoint complete_at{};
    bool error = false;
    Status status;
    int callbacks_after_terminal = 0;
  };

  explicit Recorder(const Clock& clock) : clock_(clock) {}

  void OnAdmitted(RequestId id, const Admission& a) override {
    Rec& r = Touch(id);
    EXPECT_FALSE(r.admitted) << id;
    r.admitted = true;
    r.admission = a;
    r.admitted_at = clock_.Now();
    admission_order.push_back(id);
  }
  void OnFirstToken(RequestId id, const FirstToken& f) override {
    Rec& r = Touch(id);
    EXPECT_TRUE(r.admitted) << id;
    EXPECT_FALSE(r.first) << id;
    r.first = true;
    r.first_token = f;
    r.first_at = clock_.Now();
    r.tokens.push_back(f.token.value());
    r.token_times.push_back(clock_.Now());
    first_token_order.push_back(id);
    if (on_first) on_first(id);
  }
  void OnTokens(RequestId id, std::span<const TokenId> tokens) override {
    Rec& r = Touch(id);
    EXPECT_TRUE(r.first) << id;
    for (TokenId t : tokens) {
      r.tokens.push_back(t);
      r.token_times.push_back(clock_.Now());
    }
  }
  void OnComplete(RequestId id, const Usage& u) override {
    Rec& r = Touch(id);
    EXPECT_TRUE(r.first) << id;
    r.complete = true;
    r.usage = u;
    r.complete_at = clock_.Now();
    completion_order.push_back(id);
  }
  void OnError(RequestId id, const Status& s) override {
    Rec& r = Touch(id);
    r.error = true;
    r.status = s;
  }

  const Rec& at(RequestId id) const { return recs_.at(id); }
  bool seen(RequestId id) const { return recs_.count(id) > 0; }

  std::vector<RequestId> admission_order;
  std::vector<RequestId> first_token_order;
  std::vector<RequestId> completion_order;
  std::function<void(RequestId)> on_first;

 private:
  Rec& Touch(RequestId id) {
    Rec& r = recs_[id];
    if (r.complete || r.error) ++r.callbacks_after_terminal;
    EXPECT_FALSE(r.complete || r.error) << "callback after terminal for " << id;
    return r;
  }

  const Clock& clock_;
  std::map<RequestId, Rec> recs_;
};

inline prefix::BlockKeyer Keyer() {
  return prefix::BlockKeyer::Create("engine-test-secret-0123456789", "llama3-8b", "t").value();
}

// `n` tokens of stream `stream`: distinct streams never share a first token.
inline std::vector<TokenId> Tokens(uint32_t stream, size_t n, size_t offset = 0) {
  std::vector<TokenId> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = stream * 1000003u + static_cast<uint32_t>(offset + i);
  return t;
}
inline std::vector<TokenId> Concat(std::vector<TokenId> a, const std::vector<TokenId>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

inline EngineRequest Req(RequestId id, std::vector<TokenId> prompt, uint32_t out = 1) {
  EngineRequest r;
  r.id = id;
  r.prompt = std::move(prompt);
  r.max_output_tokens = out;
  return r;
}

class SimEngineTest : public ::testing::Test {
 protected:
  void Make(SimEngineOptions o = {}) {
    options_ = o;
    auto e = SimEngine::Create(sched_, o, Keyer());
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
  }
  void Submit(EngineRequest r) { ASSERT_TRUE(engine_->Submit(std::move(r), &rec_).ok()); }
  double Ms(TimePoint t) const { return ToMillis(t - TimePoint{}); }
  CostModel Cost() const { return CostModel(options_.cost); }

  simenv::VirtualScheduler sched_;
  Recorder rec_{sched_};
  SimEngineOptions options_;
  std::unique_ptr<SimEngine> engine_;
};

}  // namespace hearsay::engine
