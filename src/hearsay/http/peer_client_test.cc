// HttpPeerClient against an http::Server playing the serving peer: the peer protocol of
// docs/daemon.md end to end, with the sink's callbacks checked to arrive on the core thread.
#include "hearsay/http/peer_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <future>
#include <mutex>

#include "hearsay/api/api_error.h"
#include "hearsay/api/openai_response.h"
#include "hearsay/http/server.h"
#include "hearsay/http/test_util.h"
#include "hearsay/testutil/eventually.h"

namespace hearsay::http {
namespace {

using testing::IoThread;
using testing::Ready;
using testutil::Eventually;
using namespace std::chrono_literals;

constexpr std::string_view kBody = R"({"model":"m","prompt":"hello there","stream":false})";

// Records a request's events; checks each runs on the core thread and never inside Forward.
class RecordingSink final : public ResponseSink {
 public:
  RecordingSink(IoThread& core, const std::atomic<bool>& in_forward)
      : core_(core), in_forward_(in_forward) {}

  void OnFirstToken(uint64_t id, const PeerFirstToken& first) override {
    Check(id);
    std::lock_guard lock(mu_);
    events_.push_back("first");
    first_ = first;
  }
  void OnOutput(uint64_t id, const PeerOutput& output) override {
    Check(id);
    std::lock_guard lock(mu_);
    events_.push_back("output");
    text_.append(output.text);
  }
  void OnComplete(uint64_t id, const PeerUsage& usage) override {
    Check(id);
    {
      std::lock_guard lock(mu_);
      events_.push_back("complete");
      usage_ = usage;
    }
    Terminal();
  }
  void OnError(uint64_t id, const Status& status, bool before_first_token) override {
    Check(id);
    {
      std::lock_guard lock(mu_);
      events_.push_back("error");
      error_ = status;
      before_first_token_ = before_first_token;
    }
    Terminal();
  }

  bool WaitTerminal() { return Ready(terminal_future_); }
  std::vector<std::string> events() {
    std::lock_guard lock(mu_);
    return events_;
  }
  std::string text() {
    std::lock_guard lock(mu_);
    return text_;
  }
  PeerFirstToken first() { return first_; }
  PeerUsage usage() { return usage_; }
  Status error() { return error_; }
  bool before_first_token() { return before_first_token_; }
  int terminals() const { return terminals_.load(); }
  bool contract_kept() const { return contract_kept_.load(); }

  uint64_t id = 7;

 private:
  void Check(uint64_t got) {
    if (!core_.on_thread() || in_forward_.load() || got != id) contract_kept_ = false;
  }
  void Terminal() {
    if (terminals_.fetch_add(1) == 0) terminal_.set_value();
  }

  IoThread& core_;
  const std::atomic<bool>& in_forward_;
  std::mutex mu_;
  std::vector<std::string> events_;
  std::string text_;
  PeerFirstToken first_;
  PeerUsage usage_;
  Status error_;
  bool before_first_token_ = false;
  std::atomic<int> terminals_{0};
  std::atomic<bool> contract_kept_{true};
  std::promise<void> terminal_;
  std::future<void> terminal_future_ = terminal_.get_future();
};

api::ResponseMeta Meta() {
  api::ResponseMeta meta;
  meta.endpoint = api::Endpoint::kCompletions;
  meta.id = "cmpl-1";
  meta.model = "m";
  meta.system_fingerprint = "peer";
  return meta;
}

Headers FirstTokenHeaders() {
  return {{"Content-Type", "text/event-stream"},
          {"X-Hearsay-Prompt-Tokens", "12"},
          {"X-Hearsay-Cached-Tokens", "8"},
          {"X-Hearsay-Node", "peer"}};
}

class PeerClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = std::make_unique<Client>(io_.io());
    PeerClientOptions o;
    // Signs what it is given, so the test sees what the client signs.
    o.sign = [](std::string_view method, std::string_view path, std::string_view body,
                std::string_view receiver, std::string_view /*tenant*/) {
      return std::string(method) + " " + std::string(path) + " " + std::to_string(body.size()) +
             " " + std::string(receiver);
    };
    o.origin_node_id = "node-a";
    o.connect_timeout = 1s;
    o.first_token_timeout = 2s;
    o.idle_timeout = 2s;
    options_ = o;
    MakePeerClient();
  }
  void MakePeerClient() {
    peer_client_ = std::make_unique<HttpPeerClient>(
        *client_,
        [this](std::function<void()> fn) { boost::asio::post(core_.io(), std::move(fn)); },
        options_);
  }
  void TearDown() override {
    if (server_) server_->Close();
    // The core owns the peer client: destroy it there, after in-flight work.
    std::promise<void> gone;
    boost::asio::post(core_.io(), [&] {
      peer_client_.reset();
      gone.set_value();
    });
    gone.get_future().wait();
    core_.Stop();
    client_.reset();
    io_.Stop();
  }
  void StartPeer(Handler handler) {
    auto s = Server::Start(io_.io(), ServerOptions{.listen = "127.0.0.1:0"}, std::move(handler));
    ASSERT_TRUE(s.ok());
    server_ = std::move(s).value();
    peer_address_ = "127.0.0.1:" + std::to_string(server_->port());
  }
  // Calls Forward on the core thread, as the node does.
  void Forward(RecordingSink& sink, std::string to = "", double bounce_above_ms = 0,
               double first_token_within_ms = 0) {
    if (to.empty()) to = peer_address_;
    boost::asio::post(core_.io(), [this, &sink, to, bounce_above_ms, first_token_within_ms] {
      PeerRequest req;
      req.id = sink.id;
      req.forwarded = true;
      req.target = "peer-b";
      req.bounce_above_ms = bounce_above_ms;
      req.first_token_within_ms = first_token_within_ms;
      req.api_path = "/v1/completions";
      req.api_body = std::string(kBody);
      in_forward_ = true;
      peer_client_->Forward(to, std::move(req), &sink);
      in_forward_ = false;
    });
  }
  void OnCore(std::function<void()> fn) {
    std::promise<void> done;
    boost::asio::post(core_.io(), [&] {
      fn();
      done.set_value();
    });
    done.get_future().wait();
  }
  size_t InFlight() {
    size_t n = 0;
    OnCore([&] { n = peer_client_->in_flight(); });
    return n;
  }
  // Runs what the I/O side has queued, then what that queued on the core: a terminal event still
  // on its way has reached the sink after this.
  void DrainLoops() {
    ASSERT_TRUE(io_.Drain());
    ASSERT_TRUE(core_.Drain());
  }

  IoThread io_;    // the I/O side: server and client
  IoThread core_;  // the core thread
  std::unique_ptr<Client> client_;
  PeerClientOptions options_;
  std::unique_ptr<HttpPeerClient> peer_client_;
  std::unique_ptr<Server> server_;
  std::string peer_address_;
  std::atomic<bool> in_forward_{false};
};

// A peer that answers like a hearsay node serving a hop request.
Handler StreamingPeer(std::promise<Request>* seen = nullptr) {
  return [seen](Request req, std::shared_ptr<Responder> r) {
    if (seen) seen->set_value(req);
    auto meta = Meta();
    r->StartStream(200, FirstTokenHeaders());
    r->Write(api::RenderChunk(meta, "Hel", true));
    // Two events in one write: still in order, one OnOutput.
    r->Write(api::RenderChunk(meta, "lo", false) + api::RenderChunk(meta, " world", false));
    r->Write(api::RenderFinalChunk(meta, api::kFinishStop));
    r->Write(api::RenderUsageChunk(meta, {12, 3, 8}));
    r->Write(std::string(api::kSseDone));
    r->End();
  };
}

// A peer that starts a stream (with `text` as its first chunk, if any) and holds it open in
// `keeper`; `streaming` is set once it has, `closed` when the entry hangs up.
Handler HoldingPeer(testing::ResponderKeeper& keeper, std::promise<void>& streaming,
                    std::promise<void>& closed, std::string text = "") {
  return [&keeper, &streaming, &closed, text](Request, std::shared_ptr<Responder> r) {
    r->OnClose([&closed] { closed.set_value(); });
    r->StartStream(200, FirstTokenHeaders());
    if (!text.empty()) r->Write(api::RenderChunk(Meta(), text, true));
    keeper.Keep(std::move(r));
    streaming.set_value();
  };
}

TEST_F(PeerClientTest, RelaysFirstTokenOutputAndUsage) {
  std::promise<Request> seen;
  StartPeer(StreamingPeer(&seen));
  RecordingSink sink(core_, in_forward_);
  Forward(sink);
  ASSERT_TRUE(sink.WaitTerminal());
  auto events = sink.events();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front(), "first");
  EXPECT_EQ(events.back(), "complete");
  EXPECT_EQ(sink.first().prompt_tokens, 12u);
  EXPECT_EQ(sink.first().cached_tokens, 8u);
  EXPECT_EQ(sink.text(), "Hello world");
  EXPECT_EQ(sink.usage().prompt_tokens, 12u);
  EXPECT_EQ(sink.usage().completion_tokens, 3u);
  EXPECT_EQ(sink.usage().cached_tokens, 8u);
  EXPECT_TRUE(sink.contract_kept());

  auto f = seen.get_future();
  ASSERT_TRUE(Ready(f));
  Request req = f.get();
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.path, "/v1/completions");
  EXPECT_EQ(req.body, kBody) << "the client's body is forwarded unchanged";
  EXPECT_EQ(req.Header("x-hearsay-hop"), "1");
  EXPECT_EQ(req.Header("x-hearsay-peer-auth"),
            "POST /v1/completions " + std::to_string(std::string_view(kBody).size()) + " peer-b")
      << "signed per request: method, path, body and receiver";
  EXPECT_EQ(req.Header("x-hearsay-origin"), "node-a");
  EXPECT_FALSE(req.Header("x-hearsay-bounce-above-ms").has_value()) << "not asked: not sent";

  EXPECT_TRUE(Eventually([&] { return InFlight() == 0; }));
  DrainLoops();
  EXPECT_EQ(sink.terminals(), 1);
}

TEST_F(PeerClientTest, SendsTheBounceThresholdTheCoreAsksFor) {
  std::promise<Request> seen;
  StartPeer(StreamingPeer(&seen));
  RecordingSink sink(core_, in_forward_);
  Forward(sink, "", 12.5);
  ASSERT_TRUE(sink.WaitTerminal());
  auto f = seen.get_future();
  ASSERT_TRUE(Ready(f));
  EXPECT_EQ(f.get().Header("x-hearsay-bounce-above-ms"), "12.500");
}

TEST_F(PeerClientTest, SecondForwardReusesThePooledConnection) {
  StartPeer(StreamingPeer());
  for (uint64_t id : {1, 2}) {
    RecordingSink sink(core_, in_forward_);
    sink.id = id;
    Forward(sink);
    ASSERT_TRUE(sink.WaitTerminal());
    EXPECT_EQ(sink.events().back(), "complete");
    // The exchange ends (and pools its connection) just after [DONE] reached the core.
    ASSERT_TRUE(Eventually([&] { return client_->stats().idle_connections > 0; }));
  }
  EXPECT_EQ(server_->stats().connections_accepted, 1u);
  EXPECT_EQ(client_->stats().connections_reused, 1u);
}

TEST_F(PeerClientTest, PeerErrorStatusFailsBeforeTheFirstToken) {
  StartPeer([](Request, std::shared_ptr<Responder> r) {
    r->Respond(503, {{"Content-Type", "application/json"}},
               api::RenderError(api::Unavailable("peer is draining")));
  });
  RecordingSink sink(core_, in_forward_);
  Forward(sink);
  ASSERT_TRUE(sink.WaitTerminal());
  EXPECT_EQ(sink.events(), std::vector<std::string>{"error"});
  EXPECT_TRUE(sink.before_first_token());
  EXPECT_EQ(sink.error().code(), StatusCode::kUnavailable);
  EXPECT_NE(sink.error().message().find("503"), std::string::npos) << sink.error().ToString();
  EXPECT_NE(sink.error().message().find("draining"), std::string::npos);
  EXPECT_TRUE(sink.contract_kept());
}

TEST_F(PeerClientTest, PeerBadGatewayReadsAsDataLoss) {
  // A peer whose engine answered garbage says 502; the entry node must answer 502 as well.
  StartPeer([](Request, std::shared_ptr<Responder> r) {
    r->Respond(502, {{"Content-Type", "application/json"}},
               api::RenderError(api::BadGateway("upstream sent a malformed event")));
  });
  RecordingSink sink(core_, in_forward_);
  Forward(sink);
  ASSERT_TRUE(sink.WaitTerminal());
  EXPECT_TRUE(sink.before_first_token());
  EXPECT_EQ(sink.error().code(), StatusCode::kDataLoss) << sink.error().ToString();
  EXPECT_NE(sink.error().message().find("malformed"), std::string::npos);
}

TEST_F(PeerClientTest, UnreachablePeerFailsBeforeTheFirstToken) {
  StartPeer(StreamingPeer());
  std::string dead = peer_address_;
  server_->Close();
  server_.reset();
  ASSERT_TRUE(io_.Drain());  // the listener is closed
  RecordingSink sink(core_, in_forward_);
  Forward(sink, dead);
  ASSERT_TRUE(sink.WaitTerminal());
  EXPECT_EQ(sink.events(), std::vector<std::string>{"error"});
  EXPECT_TRUE(sink.before_first_token());
  EXPECT_EQ(sink.error().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(sink.contract_kept());
}

TEST_F(PeerClientTest, SilentPeerTimesOutBeforeTheFirstToken) {
  options_.first_token_timeout = 200ms;
  OnCore([&] { MakePeerClient(); });
  testing::ResponderKeeper keeper;
  StartPeer([&](Request, std::shared_ptr<Responder> r) { keeper.Keep(std::move(r)); });
  RecordingSink sink(core_, in_forward_);
  Forward(sink);
  ASSERT_TRUE(sink.WaitTerminal());
  EXPECT_TRUE(sink.before_first_token());
  EXPECT_EQ(sink.error().code(), StatusCode::kDeadlineExceeded);
}

// A peer that accepts and never answers (stopped, or cut off after the connection was pooled)
// costs the forward's own deadline, which the entry node sets from its expected time to first
// token, not the client's much longer limit.
TEST_F(PeerClientTest, SilentPeerTimesOutAtTheForwardsOwnDeadline) {
  options_.first_token_timeout = 60s;
  OnCore([&] { MakePeerClient(); });
  testing::ResponderKeeper keeper;
  StartPeer([&](Request, std::shared_ptr<Responder> r) { keeper.Keep(std::move(r)); });
  RecordingSink sink(core_, in_forward_);
  Forward(sink, "", 0, /*first_token_within_ms=*/200);
  ASSERT_TRUE(sink.WaitTerminal());  // within 5 s, where the client's own limit is 60 s
  EXPECT_TRUE(sink.before_first_token());
  EXPECT_EQ(sink.error().code(), StatusCode::kDeadlineExceeded);
}

TEST_F(PeerClientTest, PeerDroppingMidStreamFailsAfterTheFirstToken) {
  std::promise<void> streaming;
  testing::ResponderKeeper keeper;
  StartPeer([&](Request, std::shared_ptr<Responder> r) {
    r->StartStream(200, FirstTokenHeaders());
    r->Write(api::RenderChunk(Meta(), "partial", true));
    keeper.Keep(std::move(r));
    streaming.set_value();
  });
  RecordingSink sink(core_, in_forward_);
  Forward(sink);
  auto f = streaming.get_future();
  ASSERT_TRUE(Ready(f));
  ASSERT_TRUE(Eventually([&] { return !sink.text().empty(); }));
  server_->Close();  // the peer process dies
  ASSERT_TRUE(sink.WaitTerminal());
  EXPECT_EQ(sink.events(), (std::vector<std::string>{"first", "output", "error"}));
  EXPECT_FALSE(sink.before_first_token());
  EXPECT_EQ(sink.text(), "partial");
  EXPECT_TRUE(sink.contract_kept());
}

TEST_F(PeerClientTest, ErrorEventFailsAfterTheFirstToken) {
  StartPeer([](Request, std::shared_ptr<Responder> r) {
    r->StartStream(200, FirstTokenHeaders());
    r->Write(api::RenderChunk(Meta(), "a", true));
    r->Write(api::RenderSseError(api::Internal("engine crashed")));
    r->Write(std::string(api::kSseDone));
    r->End();
  });
  RecordingSink sink(core_, in_forward_);
  Forward(sink);
  ASSERT_TRUE(sink.WaitTerminal());
  EXPECT_EQ(sink.events().back(), "error");
  EXPECT_FALSE(sink.before_first_token());
  EXPECT_NE(sink.error().message().find("engine crashed"), std::string::npos);
  EXPECT_TRUE(Eventually([&] { return InFlight() == 0; }));
  DrainLoops();
  EXPECT_EQ(sink.terminals(), 1) << "[DONE] after the error adds nothing";
}

TEST_F(PeerClientTest, GarbageStreamFails) {
  StartPeer([](Request, std::shared_ptr<Responder> r) {
    r->StartStream(200, FirstTokenHeaders());
    r->Write("data: {not json\n\n");
  });
  RecordingSink sink(core_, in_forward_);
  Forward(sink);
  ASSERT_TRUE(sink.WaitTerminal());
  EXPECT_EQ(sink.events().back(), "error");
  EXPECT_FALSE(sink.before_first_token());
  EXPECT_EQ(sink.error().code(), StatusCode::kDataLoss);
}

TEST_F(PeerClientTest, StreamEndingWithoutDoneIsAnError) {
  StartPeer([](Request, std::shared_ptr<Responder> r) {
    r->StartStream(200, FirstTokenHeaders());
    r->Write(api::RenderChunk(Meta(), "a", true));
    r->End();
  });
  RecordingSink sink(core_, in_forward_);
  Forward(sink);
  ASSERT_TRUE(sink.WaitTerminal());
  EXPECT_EQ(sink.events().back(), "error");
  EXPECT_FALSE(sink.before_first_token());
}

TEST_F(PeerClientTest, CancelAbortsTheForwardAndClosesTheConnection) {
  std::promise<void> peer_saw_close, streaming;
  testing::ResponderKeeper keeper;
  StartPeer(HoldingPeer(keeper, streaming, peer_saw_close));
  RecordingSink sink(core_, in_forward_);
  Forward(sink);
  auto s = streaming.get_future();
  ASSERT_TRUE(Ready(s));
  ASSERT_TRUE(Eventually([&] { return !sink.events().empty(); }));
  OnCore([&] {
    in_forward_ = true;  // nothing may be delivered inside Cancel either
    peer_client_->Cancel(sink.id);
    peer_client_->Cancel(sink.id);  // no-op
    in_forward_ = false;
  });
  ASSERT_TRUE(sink.WaitTerminal());
  EXPECT_EQ(sink.events(), (std::vector<std::string>{"first", "error"}));
  EXPECT_EQ(sink.error().code(), StatusCode::kAborted);
  EXPECT_FALSE(sink.before_first_token());
  auto closed = peer_saw_close.get_future();
  EXPECT_TRUE(Ready(closed));
  DrainLoops();
  EXPECT_EQ(sink.terminals(), 1);
  EXPECT_TRUE(sink.contract_kept());
}

// A silent peer mid-stream (stopped, partitioned) is aborted with the caller's status, which
// the core then handles as a failure (node::Node when gossip declares the member dead).
TEST_F(PeerClientTest, AbortEndsASilentStreamWithTheGivenStatus) {
  std::promise<void> peer_saw_close, streaming;
  testing::ResponderKeeper keeper;
  StartPeer(HoldingPeer(keeper, streaming, peer_saw_close, "partial"));
  RecordingSink sink(core_, in_forward_);
  Forward(sink);
  auto s = streaming.get_future();
  ASSERT_TRUE(Ready(s));
  ASSERT_TRUE(Eventually([&] { return !sink.text().empty(); }));
  OnCore([&] {
    in_forward_ = true;  // nothing may be delivered inside Abort
    peer_client_->Abort(sink.id, UnavailableError("member declared dead"));
    peer_client_->Abort(sink.id, UnavailableError("again"));  // no-op
    peer_client_->Cancel(sink.id);                            // no-op
    in_forward_ = false;
  });
  ASSERT_TRUE(sink.WaitTerminal());
  EXPECT_EQ(sink.events(), (std::vector<std::string>{"first", "output", "error"}));
  EXPECT_EQ(sink.error().code(), StatusCode::kUnavailable);
  EXPECT_EQ(sink.error().message(), "member declared dead");
  EXPECT_FALSE(sink.before_first_token());
  auto closed = peer_saw_close.get_future();
  EXPECT_TRUE(Ready(closed));
  DrainLoops();
  EXPECT_EQ(sink.terminals(), 1);
  EXPECT_EQ(InFlight(), 0u);
  EXPECT_TRUE(sink.contract_kept());
}

TEST_F(PeerClientTest, DuplicateIdIsRefusedWithoutDisturbingTheFirst) {
  std::promise<void> streaming;
  std::shared_ptr<Responder> held;
  StartPeer([&](Request, std::shared_ptr<Responder> r) {
    r->StartStream(200, FirstTokenHeaders());
    held = r;
    streaming.set_value();
  });
  RecordingSink first(core_, in_forward_), second(core_, in_forward_);
  Forward(first);
  auto s = streaming.get_future();
  ASSERT_TRUE(Ready(s));
  Forward(second);  // same id, still in flight
  ASSERT_TRUE(second.WaitTerminal());
  EXPECT_EQ(second.error().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(second.before_first_token());
  EXPECT_TRUE(second.contract_kept());
  held->Write(std::string(api::kSseDone));
  held->End();
  ASSERT_TRUE(first.WaitTerminal());
  EXPECT_EQ(first.events().back(), "complete");
}

}  // namespace
}  // namespace hearsay::http
