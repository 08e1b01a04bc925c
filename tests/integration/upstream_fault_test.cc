// Engine faults end to end (issue 6 §5): real `hearsay node --engine openai` processes, each in
// front of a fake OpenAI-compatible upstream that this test serves on loopback (http::Server) and
// switches between healthy, down (503 on everything), erroring, garbage and silent. In every case
// the client gets a clear error or a retry elsewhere before the first byte, the node stays up, and
// an engine that keeps failing is advertised as overloaded in gossip until it recovers.
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "hearsay/http/server.h"
#include "integration_env.h"

namespace hearsay::integration {
namespace {

enum class Mode { kOk, kDown, kServerError, kGarbage, kSilent };

// A fake llama.cpp-like upstream. kDown answers 503 to everything, /health included (an engine
// that is loading or broken); the other faults affect completions only.
class FakeUpstream {
 public:
  explicit FakeUpstream(boost::asio::io_context& io) {
    http::ServerOptions o;
    o.listen = "127.0.0.1:0";
    auto s =
        http::Server::Start(io, o, [this](http::Request req, std::shared_ptr<http::Responder> res) {
          Handle(std::move(req), std::move(res));
        });
    if (!s.ok()) {
      ADD_FAILURE() << s.status().ToString();
      return;
    }
    server_ = std::move(s).value();
  }
  ~FakeUpstream() {
    if (server_) server_->Close();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }

  std::atomic<Mode> mode{Mode::kOk};
  std::atomic<int> completions{0};

 private:
  void Handle(http::Request req, std::shared_ptr<http::Responder> res) {
    const Mode m = mode.load();
    const http::Headers json_type = {{"content-type", "application/json"}};
    if (m == Mode::kDown) {
      res->Respond(503, json_type, R"({"error":{"message":"Loading model","code":503}})");
      return;
    }
    if (req.path == "/health") {
      res->Respond(200, json_type, R"({"status":"ok"})");
      return;
    }
    if (req.path == "/slots") {
      res->Respond(200, json_type, "[]");
      return;
    }
    ++completions;
    switch (m) {
      case Mode::kOk:
        res->StartStream(200, {{"content-type", "text/event-stream"}});
        res->Write(
            R"(data: {"choices":[{"text":"fine","index":0}],"timings":{"cache_n":0,"prompt_n":4,"prompt_ms":2.0}})"
            "\n\n");
        res->Write(
            R"(data: {"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":0}}})"
            "\n\ndata: [DONE]\n\n");
        res->End();
        return;
      case Mode::kServerError:
        res->Respond(500, json_type, R"({"error":{"message":"kv cache exploded"}})");
        return;
      case Mode::kGarbage:
        res->StartStream(200, {{"content-type", "text/event-stream"}});
        res->Write("data: {{{ definitely not json\n\n");
        res->End();
        return;
      case Mode::kSilent: {
        std::lock_guard lock(mu_);
        parked_.push_back(std::move(res));  // never answered
        return;
      }
      case Mode::kDown:
        return;
    }
  }

  std::mutex mu_;
  std::vector<std::shared_ptr<http::Responder>> parked_;
  std::unique_ptr<http::Server> server_;
};

class UpstreamFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    io_thread_ = std::thread([this] { io_.run(); });
    for (int i = 0; i < 2; ++i) upstreams_.push_back(std::make_unique<FakeUpstream>(io_));
  }
  void TearDown() override {
    cluster_.reset();
    upstreams_.clear();
    work_.reset();
    io_.stop();
    io_thread_.join();
  }
  // Two nodes, node i in front of upstream i; `policy` everywhere.
  void StartNodes(const std::string& policy) {
    LocalClusterOptions o = ClusterOptions(2, policy);
    o.engine = "openai";
    o.extra_flags = {"--upstream-flavor", "llamacpp", "--upstream-first-token-timeout-ms", "1500"};
    for (const auto& u : upstreams_) o.per_node_flags.push_back({"--upstream", u->url()});
    cluster_ = StartCluster(o);
  }
  // Whether node `viewer`'s /cluster shows node `subject` advertising overload.
  bool SeesOverloaded(size_t viewer, size_t subject) {
    Result<HttpResponse> r = harness::HttpGet(cluster_->node(viewer).http_address, "/cluster", 5s);
    if (!r.ok() || r->status != 200) return false;
    const json view = BodyJson(*r);
    if (viewer == subject) return view.contains("self") && view["self"].value("overloaded", false);
    if (!view.contains("members")) return false;
    for (const json& m : view["members"]) {
      if (m.value("id", "") == cluster_->node(subject).node_id) return m.value("overloaded", false);
    }
    return false;
  }
  // Polls (bounded) until SeesOverloaded(viewer, subject) == want.
  bool WaitOverloaded(size_t viewer, size_t subject, bool want) {
    const auto end = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < end) {
      if (SeesOverloaded(viewer, subject) == want) return true;
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }
  Result<HttpResponse> Complete(size_t node, const std::string& tag) {
    return PostCompletion(cluster_->node(node).http_address,
                          CompletionBody(Words(tag, 40), /*max_tokens=*/4));
  }

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ =
      boost::asio::make_work_guard(io_);
  std::thread io_thread_;
  std::vector<std::unique_ptr<FakeUpstream>> upstreams_;
  std::unique_ptr<LocalCluster> cluster_;
};

TEST_F(UpstreamFaultTest, FailingEngineGivesClearErrorsAndTheNodeStaysUp) {
  // `local`: the client's node serves it, so each fault reaches the client as that node's answer.
  StartNodes("local");
  ASSERT_NE(cluster_, nullptr);
  struct Case {
    Mode mode;
    int http_status;
    const char* says;
  };
  for (const Case& c :
       {Case{Mode::kServerError, 503, "kv cache exploded"}, Case{Mode::kGarbage, 500, "malformed"},
        Case{Mode::kSilent, 503, "no output within 1500"}}) {
    SCOPED_TRACE(static_cast<int>(c.mode));
    upstreams_[0]->mode = c.mode;
    Result<HttpResponse> r = Complete(0, "fault" + std::to_string(static_cast<int>(c.mode)));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, c.http_status) << r->body;
    const json body = BodyJson(*r);
    ASSERT_TRUE(body.contains("error")) << r->body;
    const std::string message = body["error"].value("message", "");
    EXPECT_NE(message.find("upstream"), std::string::npos) << message;
    EXPECT_NE(message.find(c.says), std::string::npos) << message;
    EXPECT_TRUE(Healthy(cluster_->node(0).http_address));
    EXPECT_TRUE(cluster_->running(0));
    // Back to normal: the node serves again (after its health probe, if the failures made the
    // engine unhealthy).
    upstreams_[0]->mode = Mode::kOk;
    ASSERT_TRUE(WaitOverloaded(1, 0, false)) << cluster_->LogTail(0);
    Result<HttpResponse> ok = Complete(0, "after" + std::to_string(static_cast<int>(c.mode)));
    ASSERT_TRUE(ok.ok()) << ok.status().ToString();
    EXPECT_EQ(ok->status, 200) << ok->body;
  }
}

TEST_F(UpstreamFaultTest, DownEngineIsAdvertisedOverloadedAndRoutedAroundUntilItRecovers) {
  StartNodes("hearsay");
  ASSERT_NE(cluster_, nullptr);
  upstreams_[0]->mode = Mode::kDown;
  // Health probes (every second) fail: node 0 marks its engine unhealthy and gossip carries it.
  ASSERT_TRUE(WaitOverloaded(1, 0, true)) << cluster_->LogTail(0);
  EXPECT_TRUE(Healthy(cluster_->node(0).http_address)) << "the node itself stays up";

  // Clients of either node are served, by node 1's engine: node 0 routes around its own engine,
  // and node 1 does not send to node 0.
  const int before = upstreams_[1]->completions.load();
  for (int i = 0; i < 6; ++i) {
    Result<HttpResponse> r = Complete(i % 2, "down" + std::to_string(i));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200) << r->body;
    // The healthy engine's text, exactly.
    EXPECT_EQ(BodyJson(*r)["choices"][0].value("text", ""), "fine") << r->body;
  }
  EXPECT_EQ(upstreams_[1]->completions.load() - before, 6);
  EXPECT_EQ(upstreams_[0]->completions.load(), 0);

  // Recovery: the next health probe that succeeds clears the flag everywhere.
  upstreams_[0]->mode = Mode::kOk;
  ASSERT_TRUE(WaitOverloaded(1, 0, false)) << cluster_->LogTail(0);
  ASSERT_TRUE(WaitOverloaded(0, 0, false));
}

}  // namespace
}  // namespace hearsay::integration
