// OpenAiEngine over real sockets: HostedOpenAiEngine (http::Client + HttpUpstreamTransport)
// against a fake upstream on loopback (testkit::FakeOpenAiUpstream), for each fault the engine must
// survive: down, slow, 5xx, garbage, and recovery. Bounded in time; ports are ephemeral.
#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "hearsay/testkit/fake_openai_upstream.h"
#include "hearsay/net/asio_runtime.h"
#include "hearsay/testutil/eventually.h"
#include "hearsay/upstream/hosted_openai_engine.h"

namespace hearsay::upstream {
namespace {

using namespace std::chrono_literals;

using testkit::FakeOpenAiUpstream;
using Mode = FakeOpenAiUpstream::Mode;

struct Outcome {
  bool first = false;
  std::string text;
  bool complete = false;
  engine::Usage usage;
  Status status;
};

// Records one request and fulfils a promise at its terminal callback.
struct OneShot final : engine::EngineObserver {
  Outcome out;
  std::promise<Outcome> done;
  void OnFirstToken(engine::RequestId, const engine::FirstToken&) override { out.first = true; }
  void OnText(engine::RequestId, std::string_view t) override { out.text += t; }
  void OnComplete(engine::RequestId, const engine::Usage& u) override {
    out.complete = true;
    out.usage = u;
    done.set_value(out);
  }
  void OnError(engine::RequestId, const Status& s) override {
    out.status = s;
    done.set_value(out);
  }
};

class LoopbackTest : public ::testing::Test {
 protected:
  // Runs `f` on the core thread (the io thread) and waits for it.
  template <typename F>
  auto OnCore(F f) {
    std::packaged_task<decltype(f())()> task(std::move(f));
    auto fut = task.get_future();
    boost::asio::post(io_, [&task] { task(); });
    EXPECT_EQ(fut.wait_for(10s), std::future_status::ready);
    return fut.get();
  }
  void SetUp() override {
    thread_ = std::thread([this] { io_.run(); });
    upstream_ = std::make_unique<FakeOpenAiUpstream>();
    upstream_->set_text("hello");
    upstream_->set_server_error(503, "server overloaded, try later");
  }
  void TearDown() override {
    OnCore([this] {
      engine_.reset();
      scheduler_.reset();
    });
    upstream_.reset();
    work_.reset();
    io_.stop();
    thread_.join();
  }
  void Make(uint16_t port, OpenAiEngineOptions o) {
    OnCore([&] {
      scheduler_ = std::make_unique<net::AsioScheduler>(io_);
      auto keyer = prefix::BlockKeyer::Create("upstream-test-secret-0123456789", "m", "t",
                                              {.tokens_per_block = 4, .bytes_per_block = 64});
      auto e = MakeHostedOpenAiEngine(
          *scheduler_, io_, [this](std::function<void()> f) { boost::asio::post(io_, f); },
          keyer.value(), "http://127.0.0.1:" + std::to_string(port), o);
      ASSERT_TRUE(e.ok()) << e.status().ToString();
      engine_ = std::move(e).value();
    });
  }
  Outcome Run(engine::RequestId id) {
    OneShot obs;
    auto fut = obs.done.get_future();
    Status submitted = OnCore([&] {
      engine::EngineRequest r;
      r.id = id;
      r.prompt = {1, 2, 3, 4, 5, 6, 7, 8};
      r.max_output_tokens = 2;
      r.api_path = "/v1/completions";
      r.api_body = R"({"prompt":"hello there","max_tokens":2})";
      return engine_->Submit(std::move(r), &obs);
    });
    if (!submitted.ok()) {
      Outcome o;
      o.status = submitted;
      return o;
    }
    EXPECT_EQ(fut.wait_for(10s), std::future_status::ready);
    return fut.get();
  }
  bool Healthy() {
    return OnCore([this] { return engine_->openai().healthy(); });
  }
  // Polls (bounded) until the engine's health is `want`.
  bool WaitHealthy(bool want) {
    return testutil::Eventually([&] { return Healthy() == want; });
  }
  static OpenAiEngineOptions Fast() {
    OpenAiEngineOptions o;
    o.flavor = UpstreamFlavor::kLlamaCpp;
    o.reconcile_interval = Duration::zero();
    o.health_interval = 50ms;
    o.failures_to_unhealthy = 2;
    o.first_token_timeout = 500ms;
    o.connect_timeout = 500ms;
    return o;
  }

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ =
      boost::asio::make_work_guard(io_);
  std::thread thread_;
  std::unique_ptr<FakeOpenAiUpstream> upstream_;
  std::unique_ptr<net::AsioScheduler> scheduler_;
  std::unique_ptr<HostedOpenAiEngine> engine_;
};

TEST_F(LoopbackTest, StreamsThroughRealHttp) {
  Make(upstream_->port(), Fast());
  Outcome o = Run(1);
  ASSERT_TRUE(o.complete) << o.status.ToString();
  // The fake's answer to "hello there" with max_tokens 2: two chunks, 2 prompt words, 1 cached.
  EXPECT_EQ(o.text, "hellohello");
  EXPECT_EQ(o.usage, (engine::Usage{2, 2, 1}));
  EXPECT_TRUE(Healthy());
}

TEST_F(LoopbackTest, UpstreamDownGivesClearErrorAndUnhealthyThenRecovers) {
  const uint16_t port = upstream_->port();
  upstream_->set_health_status(200);
  upstream_->Close();  // nothing listens on the port now
  Make(port, Fast());
  Outcome o = Run(1);
  EXPECT_FALSE(o.first);
  EXPECT_EQ(o.status.code(), StatusCode::kUnavailable) << o.status.ToString();
  EXPECT_NE(o.status.message().find("upstream engine"), std::string::npos);
  ASSERT_TRUE(WaitHealthy(false));
  EXPECT_EQ(Run(2).status.code(), StatusCode::kUnavailable);  // refused at once
  EXPECT_GE(OnCore([this] { return engine_->Load().waiting_requests; }), 64u);
}

TEST_F(LoopbackTest, LoadingUpstreamIsUnhealthyUntilItsHealthSaysOk) {
  upstream_->set_health_status(503);
  Make(upstream_->port(), Fast());
  ASSERT_TRUE(WaitHealthy(false));
  upstream_->set_health_status(200);
  ASSERT_TRUE(WaitHealthy(true));
  EXPECT_TRUE(Run(1).complete);
}

TEST_F(LoopbackTest, ServerErrorsAreReportedWithTheUpstreamMessage) {
  upstream_->set_mode(Mode::kServerError);
  Make(upstream_->port(), Fast());
  Outcome o = Run(1);
  EXPECT_EQ(o.status.code(), StatusCode::kUnavailable);
  EXPECT_NE(o.status.message().find("503"), std::string::npos);
  EXPECT_NE(o.status.message().find("server overloaded"), std::string::npos);
}

TEST_F(LoopbackTest, GarbageIsAClearErrorAndTheEngineKeepsServing) {
  upstream_->set_mode(Mode::kGarbage);
  Make(upstream_->port(), Fast());
  Outcome o = Run(1);
  EXPECT_EQ(o.status.code(), StatusCode::kDataLoss) << o.status.ToString();
  upstream_->set_mode(Mode::kOk);
  EXPECT_TRUE(Run(2).complete);
}

TEST_F(LoopbackTest, SlowUpstreamTimesOut) {
  upstream_->set_mode(Mode::kSilent);
  Make(upstream_->port(), Fast());
  Outcome o = Run(1);
  // The upstream never answers: only the first-token deadline can end the request.
  EXPECT_EQ(o.status.code(), StatusCode::kDeadlineExceeded) << o.status.ToString();
}

}  // namespace
}  // namespace hearsay::upstream
