#include "hearsay/engine/composite_engine.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hearsay::engine {
namespace {

// An engine that records what reaches it and calls back only when the test says so.
class FakeEngine : public Engine {
 public:
  Status Submit(EngineRequest request, EngineObserver* observer) override {
    if (reject) return ResourceExhaustedError("full");
    live[request.id] = observer;
    submitted.push_back(request);
    return OkStatus();
  }
  bool Cancel(RequestId id) override {
    cancelled.push_back(id);
    return live.erase(id) > 0;
  }
  EngineLoad Load() const override { return load; }
  size_t CachedPrefixTokens(std::span<const TokenId> /*prompt*/) const override { return cached; }
  void DrainCacheEvents(std::vector<prefix::BlockEvent>& out) override {
    out.insert(out.end(), events.begin(), events.end());
    events.clear();
  }
  void AppendCacheSnapshot(std::vector<prefix::BlockEvent>& out) const override {
    out.insert(out.end(), held.begin(), held.end());
  }
  // Answers request `id`: first token, text, then completion (or an error).
  void Answer(RequestId id, std::string_view text) {
    EngineObserver* o = live.at(id);
    o->OnAdmitted(id, Admission{4, 0, {}});
    o->OnFirstToken(id, FirstToken{4, 0, std::nullopt});
    o->OnText(id, text);
    live.erase(id);
    o->OnComplete(id, Usage{4, 1, 0});
  }
  void Fail(RequestId id) {
    EngineObserver* o = live.at(id);
    live.erase(id);
    o->OnError(id, UnavailableError("upstream down"));
  }

  bool reject = false;
  EngineLoad load;
  size_t cached = 0;
  std::vector<prefix::BlockEvent> events, held;
  std::vector<EngineRequest> submitted;
  std::vector<RequestId> cancelled;
  std::map<RequestId, EngineObserver*> live;
};

class TextRecorder : public EngineObserver {
 public:
  void OnFirstToken(RequestId id, const FirstToken&) override { firsts[id]++; }
  void OnText(RequestId id, std::string_view text) override { texts[id] += text; }
  void OnComplete(RequestId id, const Usage&) override { completed.push_back(id); }
  void OnError(RequestId id, const Status& s) override { errors[id] = s; }
  std::map<RequestId, int> firsts;
  std::map<RequestId, std::string> texts;
  std::vector<RequestId> completed;
  std::map<RequestId, Status> errors;
};

EngineRequest Request(RequestId id, std::string model, uint64_t ns = 0) {
  EngineRequest r;
  r.id = id;
  r.prompt = {1, 2, 3, 4};
  r.model = std::move(model);
  r.cache_namespace = ns;
  return r;
}

class CompositeEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto a = std::make_unique<FakeEngine>();
    auto b = std::make_unique<FakeEngine>();
    a_ = a.get();
    b_ = b.get();
    std::vector<CompositeEngine::Child> children;
    children.push_back({std::move(a), {"model-a"}});
    children.push_back({std::move(b), {"model-b", "model-c"}});
    Result<std::unique_ptr<CompositeEngine>> e = CompositeEngine::Create(std::move(children));
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(*e);
  }

  FakeEngine* a_ = nullptr;
  FakeEngine* b_ = nullptr;
  std::unique_ptr<CompositeEngine> engine_;
  TextRecorder observer_;
};

TEST_F(CompositeEngineTest, EachRequestReachesTheEngineOfItsModel) {
  ASSERT_TRUE(engine_->Submit(Request(1, "model-a"), &observer_).ok());
  ASSERT_TRUE(engine_->Submit(Request(2, "model-b"), &observer_).ok());
  ASSERT_TRUE(engine_->Submit(Request(3, "model-c"), &observer_).ok());
  ASSERT_EQ(a_->submitted.size(), 1u);
  EXPECT_EQ(a_->submitted[0].id, 1u);
  ASSERT_EQ(b_->submitted.size(), 2u);
  EXPECT_EQ(b_->submitted[0].model, "model-b");
  EXPECT_EQ(b_->submitted[1].model, "model-c");
  EXPECT_EQ(engine_->ChildOf(1), 0u);
  EXPECT_EQ(engine_->ChildOf(3), 1u);
}

TEST_F(CompositeEngineTest, AnUnservedModelIsNotFoundAndNothingIsQueued) {
  Status s = engine_->Submit(Request(1, "model-z"), &observer_);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("model-z"), std::string::npos);
  EXPECT_TRUE(a_->submitted.empty());
  EXPECT_TRUE(b_->submitted.empty());
}

TEST_F(CompositeEngineTest, ARequestWithoutAModelGoesToTheFirstEngine) {
  ASSERT_TRUE(engine_->Submit(Request(1, ""), &observer_).ok());
  EXPECT_EQ(a_->submitted.size(), 1u);
}

TEST_F(CompositeEngineTest, CallbacksReachTheObserverAndTheIdIsFreedAtTheEnd) {
  TextRecorder other;
  ASSERT_TRUE(engine_->Submit(Request(1, "model-a"), &observer_).ok());
  ASSERT_TRUE(engine_->Submit(Request(2, "model-b"), &other).ok());
  b_->Answer(2, "bee");
  a_->Answer(1, "ay");
  EXPECT_EQ(observer_.texts[1], "ay");
  EXPECT_EQ(other.texts[2], "bee");
  EXPECT_EQ(observer_.completed, std::vector<RequestId>{1});
  EXPECT_EQ(other.completed, std::vector<RequestId>{2});
  EXPECT_EQ(engine_->ChildOf(1), engine_->size());
  // The id is free again, on either engine.
  EXPECT_TRUE(engine_->Submit(Request(1, "model-b"), &observer_).ok());
}

TEST_F(CompositeEngineTest, ALiveIdIsRefusedEvenForAnotherEngine) {
  ASSERT_TRUE(engine_->Submit(Request(1, "model-a"), &observer_).ok());
  EXPECT_EQ(engine_->Submit(Request(1, "model-b"), &observer_).code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(b_->submitted.empty());
}

TEST_F(CompositeEngineTest, ARejectionIsReturnedAndNotRemembered) {
  b_->reject = true;
  EXPECT_EQ(engine_->Submit(Request(1, "model-b"), &observer_).code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(engine_->ChildOf(1), engine_->size());
  EXPECT_FALSE(engine_->Cancel(1));
}

TEST_F(CompositeEngineTest, ErrorsAndCancelsReachTheRightEngine) {
  ASSERT_TRUE(engine_->Submit(Request(1, "model-a"), &observer_).ok());
  ASSERT_TRUE(engine_->Submit(Request(2, "model-b"), &observer_).ok());
  b_->Fail(2);
  ASSERT_EQ(observer_.errors.count(2), 1u);
  EXPECT_EQ(observer_.errors[2].code(), StatusCode::kUnavailable);
  EXPECT_TRUE(engine_->Cancel(1));
  EXPECT_EQ(a_->cancelled, std::vector<RequestId>{1});
  EXPECT_TRUE(b_->cancelled.empty());
  EXPECT_FALSE(engine_->Cancel(1));
  EXPECT_FALSE(engine_->Cancel(2));
}

TEST_F(CompositeEngineTest, LoadIsTheSumOfTheEngines) {
  a_->load.waiting_requests = 2;
  a_->load.running_requests = 3;
  a_->load.kv_used_tokens = 100;
  a_->load.kv_capacity_tokens = 1000;
  a_->load.waiting_prefill_tokens = 50;
  a_->load.prefill_ms_per_token = 1.0;
  a_->load.estimated_queue_wait = std::chrono::milliseconds(20);
  b_->load.waiting_requests = 1;
  b_->load.running_requests = 4;
  b_->load.kv_used_tokens = 200;
  b_->load.kv_capacity_tokens = 2000;
  b_->load.waiting_prefill_tokens = 70;
  b_->load.prefill_ms_per_token = 3.0;
  b_->load.estimated_queue_wait = std::chrono::milliseconds(50);
  const EngineLoad l = engine_->Load();
  EXPECT_EQ(l.waiting_requests, 3u);
  EXPECT_EQ(l.running_requests, 7u);
  EXPECT_EQ(l.kv_used_tokens, 300u);
  EXPECT_EQ(l.kv_capacity_tokens, 3000u);
  EXPECT_EQ(l.waiting_prefill_tokens, 120u);
  EXPECT_DOUBLE_EQ(l.prefill_ms_per_token, 2.0);
  EXPECT_EQ(l.decode_ms_per_token, 0.0);  // neither has measured it
  EXPECT_EQ(l.estimated_queue_wait, std::chrono::milliseconds(50));
  // An engine whose capacity is unknown makes the node's unknown.
  b_->load.kv_capacity_tokens = 0;
  EXPECT_EQ(engine_->Load().kv_capacity_tokens, 0u);
}

TEST_F(CompositeEngineTest, CacheEventsOfEveryEngineAreForwardedUnchanged) {
  using K = prefix::BlockEvent::Kind;
  a_->events = {{K::kAdded, 11, 0}, {K::kAdded, 12, 1}};
  b_->events = {{K::kAdded, 21, 0}, {K::kRemoved, 21, 0}};
  b_->held = {{K::kAdded, 31, 0}};
  std::vector<prefix::BlockEvent> out;
  engine_->DrainCacheEvents(out);
  const std::vector<prefix::BlockEvent> want = {
      {K::kAdded, 11, 0}, {K::kAdded, 12, 1}, {K::kAdded, 21, 0}, {K::kRemoved, 21, 0}};
  EXPECT_EQ(out, want);
  out.clear();
  engine_->DrainCacheEvents(out);
  EXPECT_TRUE(out.empty());
  engine_->AppendCacheSnapshot(out);
  EXPECT_EQ(out, (std::vector<prefix::BlockEvent>{{K::kAdded, 31, 0}}));
}

TEST_F(CompositeEngineTest, ReplicasOfOneModelShareByCacheThenLoad) {
  engine_->SetModels(0, {"model-a", "model-b"});
  // Equal cache: the less loaded.
  b_->load.running_requests = 2;
  ASSERT_TRUE(engine_->Submit(Request(1, "model-b"), &observer_).ok());
  EXPECT_EQ(engine_->ChildOf(1), 0u);
  // More of the prompt cached wins over load.
  b_->cached = 4;
  ASSERT_TRUE(engine_->Submit(Request(2, "model-b"), &observer_).ok());
  EXPECT_EQ(engine_->ChildOf(2), 1u);
  EXPECT_EQ(engine_->CachedPrefixTokens(std::vector<TokenId>{1, 2, 3, 4}, 7), 4u);
}

TEST_F(CompositeEngineTest, SetModelsFollowsWhatAnEngineNowLists) {
  engine_->SetModels(0, {"model-a", "model-d"});
  ASSERT_TRUE(engine_->Submit(Request(1, "model-d"), &observer_).ok());
  EXPECT_EQ(engine_->ChildOf(1), 0u);
  EXPECT_EQ(engine_->models(0), (std::vector<std::string>{"model-a", "model-d"}));
}

TEST(CompositeEngineCreateTest, RefusesNoEnginesAndANullEngine) {
  EXPECT_FALSE(CompositeEngine::Create({}).ok());
  std::vector<CompositeEngine::Child> children;
  children.push_back({nullptr, {"m"}});
  EXPECT_FALSE(CompositeEngine::Create(std::move(children)).ok());
}

}  // namespace
}  // namespace hearsay::engine
