// OpenAiEngine decodes the engine's /slots and /metrics pages in offloaded work (off the core
// thread in the daemon) and applies what they say only in the continuation, on the core; an engine
// destroyed before a continuation runs is left alone by it.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hearsay/simenv/virtual_scheduler.h"
#include "hearsay/upstream/fake_transport_test_util.h"
#include "hearsay/upstream/openai_engine.h"

namespace hearsay::upstream {
namespace {

using namespace std::chrono_literals;
using testing::FakeTransport;

// A Scheduler over a VirtualScheduler that keeps offloaded work and continuations for the test to
// run when it chooses (the work on another thread).
class DeferringScheduler final : public Scheduler {
 public:
  explicit DeferringScheduler(simenv::VirtualScheduler& inner) : inner_(inner) {}
  const Clock& clock() const override { return inner_.clock(); }
  TimerId RunAfter(Duration delay, Task task) override {
    return inner_.RunAfter(delay, std::move(task));
  }
  bool Cancel(TimerId id) override { return inner_.Cancel(id); }
  void Post(Task task) override { inner_.Post(std::move(task)); }
  void Offload(Task work, Task then) override {
    pending_.push_back({std::move(work), std::move(then)});
  }

  size_t pending() const { return pending_.size(); }
  // Runs every pending work, each on a thread of its own, and keeps the continuations.
  void RunWork() {
    for (auto& p : pending_) {
      std::thread t(std::move(p.first));
      t.join();
      thens_.push_back(std::move(p.second));
    }
    pending_.clear();
  }
  // Runs the continuations of the work that ran, on this (the core) thread.
  void RunThen() {
    std::vector<Task> thens = std::move(thens_);
    thens_.clear();
    for (Task& t : thens) t();
  }
  // Drops the pending work and runs its continuations alone.
  void RunThenWithoutWork() {
    for (auto& p : pending_) p.second();
    pending_.clear();
  }

 private:
  simenv::VirtualScheduler& inner_;
  std::vector<std::pair<Task, Task>> pending_;
  std::vector<Task> thens_;
};

// llama-server's /slots: `busy` of `slots` slots processing, each with 40 output tokens to go.
std::string SlotsPage(int slots, int busy) {
  nlohmann::json page = nlohmann::json::array();
  for (int i = 0; i < slots; ++i) {
    page.push_back({{"id", i},
                    {"n_ctx", 2048},
                    {"is_processing", i < busy},
                    {"next_token", {{{"n_remain", i < busy ? 40 : 0}}}}});
  }
  return page.dump();
}

class OpenAiEngineOffloadTest : public ::testing::Test {
 protected:
  void Make() {
    OpenAiEngineOptions o;
    o.flavor = UpstreamFlavor::kLlamaCpp;
    o.capacity_tokens = 4096;
    o.queue_poll_interval = 1s;
    o.reconcile_interval = 10s;
    o.health_interval = 1s;
    auto keyer = prefix::BlockKeyer::Create("upstream-test-secret-0123456789", "m", "t",
                                            {.tokens_per_block = 4, .bytes_per_block = 64});
    auto e = OpenAiEngine::Create(sched_, transport_, keyer.value(), o);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
    virtual_.RunFor(0ms);
    for (auto& c : transport_.Open("/health")) c->Respond(200, "{\"status\":\"ok\"}");
  }
  // Answers the open /metrics and /slots reads.
  void AnswerPages(std::string_view metrics, std::string_view slots) {
    for (auto& c : transport_.Open("/metrics")) c->Respond(200, metrics);
    for (auto& c : transport_.Open("/slots")) c->Respond(200, slots);
  }

  simenv::VirtualScheduler virtual_;
  DeferringScheduler sched_{virtual_};
  FakeTransport transport_;
  std::unique_ptr<OpenAiEngine> engine_;
};

TEST_F(OpenAiEngineOffloadTest, PagesAreDecodedInTheWorkAndAppliedOnlyInTheContinuation) {
  Make();
  AnswerPages("llamacpp:requests_processing 2\nllamacpp:requests_deferred 5\n", SlotsPage(4, 3));
  // Both answers are in, and nothing of them is applied: each waits as offloaded work.
  EXPECT_EQ(sched_.pending(), 2u);
  EXPECT_FALSE(engine_->engine_queue().has_value());
  EXPECT_EQ(engine_->stats().slots_polls, 0u);
  EXPECT_EQ(engine_->stats().queue_polls, 0u);
  // No new read of a page while its last answer is being decoded.
  virtual_.RunFor(1s);
  for (auto& c : transport_.Open("/health")) c->Respond(200, "{\"status\":\"ok\"}");
  EXPECT_TRUE(transport_.Open("/metrics").empty());
  EXPECT_TRUE(transport_.Open("/slots").empty());
  // The work decodes (on another thread) and still applies nothing.
  sched_.RunWork();
  EXPECT_FALSE(engine_->engine_queue().has_value());
  EXPECT_EQ(engine_->stats().slots_polls, 0u);
  EXPECT_EQ(engine_->stats().reconciles, 0u);
  // The continuations apply it on the core.
  sched_.RunThen();
  EXPECT_EQ(engine_->stats().slots_polls, 1u);
  EXPECT_EQ(engine_->stats().queue_polls, 1u);
  EXPECT_EQ(engine_->stats().reconciles, 1u);
  ASSERT_TRUE(engine_->engine_queue().has_value());
  EXPECT_EQ(engine_->engine_queue()->running, 2u);
  EXPECT_EQ(engine_->engine_queue()->waiting, 5u);
  EXPECT_EQ(engine_->engine_queue()->slots, 4u);
  EXPECT_EQ(engine_->engine_queue()->busy_slots, 3u);
  // The next period reads again.
  virtual_.RunFor(1s);
  EXPECT_EQ(transport_.Open("/metrics").size(), 1u);
  EXPECT_EQ(transport_.Open("/slots").size(), 1u);
}

TEST_F(OpenAiEngineOffloadTest, AContinuationWithoutItsWorkHasNothingDecodedToApply) {
  // The decode lives in the work: a continuation run without it finds no page and applies none.
  Make();
  AnswerPages("llamacpp:requests_processing 2\nllamacpp:requests_deferred 5\n", SlotsPage(4, 3));
  ASSERT_EQ(sched_.pending(), 2u);
  sched_.RunThenWithoutWork();
  EXPECT_FALSE(engine_->engine_queue().has_value());
  EXPECT_EQ(engine_->stats().slots_polls, 0u);
  EXPECT_EQ(engine_->stats().queue_polls, 0u);
  EXPECT_EQ(engine_->stats().reconcile_failures, 1u);
  EXPECT_EQ(engine_->stats().queue_poll_failures, 1u);
}

TEST_F(OpenAiEngineOffloadTest, EngineDestroyedBeforeTheContinuationIsLeftAlone) {
  Make();
  AnswerPages("llamacpp:requests_processing 2\nllamacpp:requests_deferred 5\n", SlotsPage(4, 3));
  ASSERT_EQ(sched_.pending(), 2u);
  sched_.RunWork();
  engine_.reset();
  sched_.RunThen();  // touches nothing of the destroyed engine (ASan checks it in the asan preset)
  virtual_.RunFor(5s);
  SUCCEED();
}

}  // namespace
}  // namespace hearsay::upstream
