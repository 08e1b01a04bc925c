// LoadRun against in-process fake OpenAI servers (testkit::FakeOpenAiUpstream on loopback): the
// disciplines, bounds, error classification and cancellation, with real sockets.
#include "hearsay/loadgen/load_run.h"

#include <gtest/gtest.h>

#include <thread>

#include "hearsay/testkit/fake_openai_upstream.h"
#include "hearsay/loadgen/summary.h"
#include "hearsay/testutil/eventually.h"

namespace hearsay::loadgen {
namespace {

using testkit::FakeOpenAiUpstream;
using Behaviour = FakeOpenAiUpstream::Mode;

// A fake OpenAI server (testkit::FakeOpenAiUpstream) in one behaviour: kOk streams max_tokens
// chunks and a usage chunk in which half of the prompt's words are cached, kTooBusy answers 429,
// kSilent never answers.
class FakeServer : public FakeOpenAiUpstream {
 public:
  explicit FakeServer(Behaviour behaviour) { set_mode(behaviour); }
};

RequestSource Source(uint32_t targets, uint64_t requests, double rate = 100, bool cot = false) {
  WorkloadSpec spec;
  spec.requests = requests;
  spec.targets = targets;
  spec.rate_per_s = rate;
  spec.cot = cot;
  Result<RequestSource> s = RequestSource::Create(spec);
  HEARSAY_CHECK(s.ok());
  return std::move(*s);
}

TEST(LoadRunTest, ClosedLoopCompletesEveryRequestWithUsage) {
  FakeServer a(Behaviour::kOk), b(Behaviour::kOk);
  LoadOptions o;
  o.targets = {a.address(), b.address()};
  o.mode = LoadMode::kClosedLoop;
  o.concurrency = 4;
  o.max_requests = 40;
  int progress_calls = 0;
  o.progress = [&](const Progress& p) {
    ++progress_calls;
    EXPECT_EQ(p.total, 40u);
  };
  LoadRun run(std::move(o), Source(2, 1000, 100, /*cot=*/true));
  Result<RunOutput> out = run.Run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->results.size(), 40u);
  EXPECT_FALSE(out->cancelled);
  EXPECT_EQ(a.requests() + b.requests(), 40);
  EXPECT_GT(a.requests(), 0);
  EXPECT_GT(b.requests(), 0);
  EXPECT_GE(progress_calls, 1);
  // Keep-alive: far fewer connections than requests.
  EXPECT_LE(out->client.connections_opened, 8u);
  const BenchSummary s = Summarize(out->results, out->elapsed, 2);
  EXPECT_EQ(s.completed, 40u) << ToJson(s).dump();
  EXPECT_EQ(s.failed, 0u);
  EXPECT_EQ(s.ttft.count, 40u);
  EXPECT_GT(s.itl.count, 0u);  // chain-of-thought answers stream many tokens
  EXPECT_GT(s.prompt_tokens, 40u * 250);
  EXPECT_NEAR(s.hit_rate, 0.5, 0.01);
  EXPECT_EQ(s.per_target[0] + s.per_target[1], 40u);
}

TEST(LoadRunTest, OpenLoopNeverSendsBeforeTheArrivalTime) {
  FakeServer a(Behaviour::kOk);
  LoadOptions o;
  o.targets = {a.address()};
  o.max_requests = 30;
  // The same stream the run will send, to know the arrival times.
  RequestSource probe = Source(1, 30, 200);
  std::vector<Duration> arrivals;
  while (std::optional<LoadRequest> r = probe.Next()) arrivals.push_back(r->arrival);
  LoadRun run(std::move(o), Source(1, 30, 200));
  Result<RunOutput> out = run.Run();
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->results.size(), 30u);
  for (const RequestResult& r : out->results) {
    EXPECT_TRUE(r.ok()) << r.error_message;
    EXPECT_GE(r.sent, arrivals[r.id]) << r.id;
  }
  EXPECT_GE(out->elapsed, arrivals.back());
}

TEST(LoadRunTest, DurationBoundsAnOpenLoopRun) {
  FakeServer a(Behaviour::kOk);
  LoadOptions o;
  o.targets = {a.address()};
  o.duration = std::chrono::milliseconds(300);
  LoadRun run(std::move(o), Source(1, 1'000'000, 100));
  Result<RunOutput> out = run.Run();
  ASSERT_TRUE(out.ok());
  // ~30 requests arrive in 300 ms at 100/s; none is due after the bound.
  EXPECT_GT(out->results.size(), 5u);
  EXPECT_LT(out->results.size(), 100u);
  for (const RequestResult& r : out->results) EXPECT_LE(r.sent, std::chrono::milliseconds(400));
}

TEST(LoadRunTest, FailuresAreClassifiedNotFatal) {
  FakeServer busy(Behaviour::kTooBusy);
  // A port nothing listens on: bind one, remember it, close it.
  std::string dead;
  {
    FakeServer gone(Behaviour::kOk);
    dead = gone.address();
  }
  LoadOptions o;
  o.targets = {busy.address(), dead};
  o.mode = LoadMode::kClosedLoop;
  o.concurrency = 2;
  o.max_requests = 20;
  o.connect_timeout = std::chrono::seconds(2);
  LoadRun run(std::move(o), Source(2, 20));
  Result<RunOutput> out = run.Run();
  ASSERT_TRUE(out.ok());
  const BenchSummary s = Summarize(out->results, out->elapsed, 2);
  EXPECT_EQ(s.completed, 0u);
  EXPECT_EQ(s.failed, 20u);
  EXPECT_EQ(s.errors.at("http_429"), s.per_target[0]);
  EXPECT_EQ(s.errors.at("connect"), s.per_target[1]);
}

TEST(LoadRunTest, SkipsRatherThanQueuesBeyondMaxInFlight) {
  FakeServer hang(Behaviour::kSilent);
  LoadOptions o;
  o.targets = {hang.address()};
  o.max_requests = 6;
  o.max_in_flight = 2;
  o.response_timeout = std::chrono::milliseconds(1500);
  LoadRun run(std::move(o), Source(1, 6, 200));
  Result<RunOutput> out = run.Run();
  ASSERT_TRUE(out.ok());
  const BenchSummary s = Summarize(out->results, out->elapsed, 1);
  EXPECT_EQ(s.requests, 6u);
  EXPECT_EQ(s.errors.at("skipped"), 4u);
  EXPECT_EQ(s.errors.at("timeout"), 2u);
}

TEST(LoadRunTest, CancelAbortsRequestsInFlight) {
  FakeServer hang(Behaviour::kSilent);
  LoadOptions o;
  o.targets = {hang.address()};
  o.mode = LoadMode::kClosedLoop;
  o.concurrency = 3;
  o.max_requests = 100;
  LoadRun run(std::move(o), Source(1, 100));
  std::thread canceller([&] {
    EXPECT_TRUE(testutil::Eventually([&] { return hang.requests() >= 3; }));
    run.Cancel();
  });
  Result<RunOutput> out = run.Run();
  canceller.join();
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->cancelled);
  ASSERT_EQ(out->results.size(), 3u);
  for (const RequestResult& r : out->results) EXPECT_EQ(r.error, ErrorKind::kCancelled);
}

TEST(LoadRunTest, BadOptionsAndSecondRunAreErrors) {
  {
    LoadOptions o;  // no targets
    LoadRun run(std::move(o), Source(1, 1));
    EXPECT_EQ(run.Run().status().code(), StatusCode::kInvalidArgument);
  }
  {
    LoadOptions o;
    o.targets = {"127.0.0.1:1"};
    o.mode = LoadMode::kClosedLoop;
    o.concurrency = 0;
    LoadRun run(std::move(o), Source(1, 1));
    EXPECT_EQ(run.Run().status().code(), StatusCode::kInvalidArgument);
  }
  {
    LoadOptions o;
    o.targets = {"127.0.0.1:1"};
    LoadRun run(std::move(o), Source(1, 1));
    run.Cancel();  // before Run: nothing is sent
    Result<RunOutput> out = run.Run();
    ASSERT_TRUE(out.ok());
    EXPECT_TRUE(out->cancelled);
    EXPECT_TRUE(out->results.empty());
    EXPECT_EQ(run.Run().status().code(), StatusCode::kFailedPrecondition);
  }
}

}  // namespace
}  // namespace hearsay::loadgen
