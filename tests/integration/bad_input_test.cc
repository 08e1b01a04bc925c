// Bad input over real HTTP: each case gets an OpenAI-style error JSON with the right status (or,
// for slow and idle clients, a closed connection within the configured timeout), and the node
// stays up and keeps answering valid requests after each.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "integration_env.h"

namespace hearsay::integration {
namespace {

using Clock = std::chrono::steady_clock;
using testkit::HttpHeaders;

constexpr uint64_t kMaxBody = 64 * 1024;
constexpr uint64_t kContextTokens = 2048;
constexpr auto kHeaderTimeout = 1000ms;
constexpr auto kReadTimeout = 1500ms;
constexpr auto kIdleTimeout = 1500ms;

class BadInputTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    LocalClusterOptions o = ClusterOptions(1);
    o.extra_flags = {"--max-body-bytes",
                     std::to_string(kMaxBody),
                     "--max-concurrent-requests",
                     "2",
                     "--header-timeout-ms",
                     std::to_string(kHeaderTimeout.count()),
                     "--read-timeout-ms",
                     std::to_string(kReadTimeout.count()),
                     "--idle-timeout-ms",
                     std::to_string(kIdleTimeout.count()),
                     "--context-tokens",
                     std::to_string(kContextTokens),
                     "--max-tokens",
                     "1024"};
    cluster_ = StartCluster(o).release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(cluster_, nullptr); }
  // After every case: the process runs, /health is 200 and a valid request is served.
  void TearDown() override {
    if (cluster_ == nullptr) return;
    ASSERT_TRUE(cluster_->running(0)) << cluster_->LogTail(0);
    EXPECT_TRUE(Healthy(address()));
    Result<HttpResponse> r = PostCompletion(address(), CompletionBody("still serving", 2));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200) << r->body;
  }

  static const std::string& address() { return cluster_->node(0).http_address; }

  // POSTs `body` to /v1/completions and checks the status and OpenAI error shape.
  static json ExpectError(const std::string& body, int status, const HttpHeaders& headers = {}) {
    Result<HttpResponse> r =
        testkit::HttpPostJson(address(), "/v1/completions", body, kCallTimeout, headers);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return json();
    EXPECT_EQ(r->status, status) << r->body;
    EXPECT_EQ(r->Header("content-type").value_or("").rfind("application/json", 0), 0u);
    json j = BodyJson(*r);
    EXPECT_TRUE(j.is_object() && j.contains("error") && j["error"].is_object()) << r->body;
    if (!j.is_object() || !j.contains("error")) return json();
    EXPECT_TRUE(j["error"]["message"].is_string()) << r->body;
    EXPECT_TRUE(j["error"].contains("type")) << r->body;
    return j["error"];
  }

  static LocalCluster* cluster_;
};
LocalCluster* BadInputTest::cluster_ = nullptr;

TEST_F(BadInputTest, MalformedJson) {
  json e = ExpectError("{\"model\": \"hearsay-sim\", \"prompt\": ", 400);
  EXPECT_EQ(e["type"], "invalid_request_error");
  ExpectError("not json at all", 400);
  ExpectError("[1, 2, 3]", 400);
  ExpectError("", 400);
}

TEST_F(BadInputTest, WrongTypesAndMissingFields) {
  json e = ExpectError(R"({"model": "hearsay-sim", "prompt": 5})", 400);
  EXPECT_EQ(e["param"], "prompt");
  e = ExpectError(R"({"model": "hearsay-sim", "prompt": "hi", "max_tokens": "ten"})", 400);
  EXPECT_EQ(e["param"], "max_tokens");
  e = ExpectError(R"({"model": "hearsay-sim", "prompt": "hi", "stream": "yes"})", 400);
  EXPECT_EQ(e["param"], "stream");
  e = ExpectError(R"({"model": "hearsay-sim", "prompt": "hi", "max_tokens": -1})", 400);
  EXPECT_EQ(e["param"], "max_tokens");
  e = ExpectError(R"({"model": "hearsay-sim"})", 400);
  EXPECT_EQ(e["param"], "prompt");
  e = ExpectError(R"({"prompt": "hi"})", 400);
  EXPECT_EQ(e["param"], "model");
  Result<HttpResponse> chat =
      testkit::HttpPostJson(address(), "/v1/chat/completions",
                            R"({"model": "hearsay-sim", "messages": "hi"})", kCallTimeout);
  ASSERT_TRUE(chat.ok());
  EXPECT_EQ(chat->status, 400) << chat->body;
  EXPECT_EQ(BodyJson(*chat)["error"]["param"], "messages") << chat->body;
}

TEST_F(BadInputTest, UnknownModel) {
  json e = ExpectError(R"({"model": "gpt-17", "prompt": "hi"})", 404);
  EXPECT_EQ(e["code"], "model_not_found");
}

TEST_F(BadInputTest, EmptyPrompt) {
  json e = ExpectError(R"({"model": "hearsay-sim", "prompt": ""})", 400);
  EXPECT_EQ(e["param"], "prompt");
}

TEST_F(BadInputTest, PromptOverTheContextLimit) {
  json e =
      ExpectError(CompletionBody(Words("long", static_cast<int>(kContextTokens) + 10), 16), 400);
  EXPECT_EQ(e["code"], "context_length_exceeded");
}

TEST_F(BadInputTest, BodyOverTheLimit) {
  const std::string body = CompletionBody(std::string(kMaxBody + 1024, 'a'), 2);
  ExpectError(body, 413);
  // Claimed in the header only: refused before the body is read.
  auto conn = testkit::RawConnection::Connect(address(), 5s);
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE((*conn)
                  ->Write("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                          "application/json\r\nContent-Length: 1000000000\r\n\r\n{",
                          5s)
                  .ok());
  Result<std::string> reply = (*conn)->ReadUntilClose(10s);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->rfind("HTTP/1.1 413", 0), 0u) << *reply;
}

TEST_F(BadInputTest, TooManyConcurrentRequestsGet429WithRetryAfter) {
  // Two long streams fill the limit of 2; a third request is refused, then served once they end.
  std::atomic<int> started{0};
  std::vector<Result<testkit::StreamOutcome>> results(2, InternalError("not run"));
  std::vector<std::thread> streams;
  for (int i = 0; i < 2; ++i) {
    streams.emplace_back([&, i] {
      results[i] = testkit::HttpPostStream(
          address(), "/v1/completions",
          CompletionBody("occupy slot " + std::to_string(i), 400, /*stream=*/true), 60s);
    });
  }
  // Wait until both are admitted (their first tokens are flowing), bounded.
  const bool both_running = testutil::Eventually([&] {
    auto m = Metrics(address());
    return m.ok() && testkit::SumMetric(*m, "hearsay_requests_in_flight") >= 2;
  });
  EXPECT_TRUE(both_running) << "two streams never ran at once";
  Result<HttpResponse> refused = PostCompletion(address(), CompletionBody("one too many", 2));
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  EXPECT_EQ(refused->status, 429) << refused->body;
  const std::string retry_after = refused->Header("retry-after").value_or("");
  EXPECT_FALSE(retry_after.empty()) << "429 carries Retry-After";
  EXPECT_GT(std::atoi(retry_after.c_str()), 0) << retry_after;
  EXPECT_EQ(BodyJson(*refused)["error"]["code"], "rate_limit_exceeded") << refused->body;
  for (std::thread& t : streams) t.join();
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(r->saw_done());
  }
}

TEST_F(BadInputTest, HopMarkerWithoutPeerAuthIsForbidden) {
  json e = ExpectError(CompletionBody("pretend to be a peer", 2), 403, {{"X-Hearsay-Hop", "1"}});
  EXPECT_EQ(e["type"], "permission_error");
  ExpectError(CompletionBody("pretend to be a peer", 2), 403,
              {{"X-Hearsay-Hop", "1"}, {"X-Hearsay-Peer-Auth", std::string(64, '0')}});
  ExpectError(CompletionBody("pretend to be a peer", 2), 403,
              {{"X-Hearsay-Hop", "1"}, {"X-Hearsay-Peer-Auth", "not hex"}});
}

// Reads until the server closes; returns how long that took, or fails the test.
std::chrono::milliseconds TimeToClose(testkit::RawConnection& conn, std::chrono::milliseconds cap,
                                      std::string* got) {
  const auto start = Clock::now();
  Result<std::string> r = conn.ReadUntilClose(cap);
  EXPECT_TRUE(r.ok()) << "the server did not close the connection within " << cap.count()
                      << " ms: " << r.status().ToString();
  if (r.ok()) *got = *r;
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
}

TEST_F(BadInputTest, SlowlorisHeadersAreCutOff) {
  auto conn = testkit::RawConnection::Connect(address(), 5s);
  ASSERT_TRUE(conn.ok());
  // Half a request head, then a trickle that never finishes it.
  ASSERT_TRUE((*conn)->Write("POST /v1/completions HTTP/1.1\r\nHost: x\r\n", 5s).ok());
  std::string got;
  const auto took = TimeToClose(**conn, kHeaderTimeout + 5s, &got);
  EXPECT_GE(took, kHeaderTimeout - 200ms);
  EXPECT_TRUE(got.empty() || got.rfind("HTTP/1.1 408", 0) == 0) << got;
}

TEST_F(BadInputTest, SlowBodyIsCutOff) {
  auto conn = testkit::RawConnection::Connect(address(), 5s);
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE((*conn)
                  ->Write("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                          "application/json\r\nContent-Length: 100\r\n\r\n{\"model\":",
                          5s)
                  .ok());
  std::string got;
  const auto took = TimeToClose(**conn, kReadTimeout + 5s, &got);
  EXPECT_LT(took, kReadTimeout + 5s);
  EXPECT_TRUE(got.empty() || got.rfind("HTTP/1.1 408", 0) == 0) << got;
}

TEST_F(BadInputTest, IdleConnectionsAreClosed) {
  // One that never sends a byte, and one that goes quiet after a complete keep-alive request.
  auto silent = testkit::RawConnection::Connect(address(), 5s);
  ASSERT_TRUE(silent.ok());
  auto kept = testkit::RawConnection::Connect(address(), 5s);
  ASSERT_TRUE(kept.ok());
  ASSERT_TRUE((*kept)->Write("GET /health HTTP/1.1\r\nHost: x\r\n\r\n", 5s).ok());
  const auto kept_since = Clock::now();
  std::string got;
  TimeToClose(**kept, kIdleTimeout + 5s, &got);
  const auto took = Clock::now() - kept_since;
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got;
  std::string nothing;
  TimeToClose(**silent, std::max(kHeaderTimeout, kIdleTimeout) + 5s, &nothing);
  EXPECT_TRUE(nothing.empty() || nothing.rfind("HTTP/1.1 408", 0) == 0) << nothing;
  EXPECT_GE(took, kIdleTimeout - 500ms) << "closed only after the idle timeout";
}

TEST_F(BadInputTest, GarbageRequestLine) {
  auto conn = testkit::RawConnection::Connect(address(), 5s);
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE((*conn)->Write("\x01\x02 NOT HTTP \xff\r\n\r\n", 5s).ok());
  std::string got;
  TimeToClose(**conn, 5s, &got);
  EXPECT_TRUE(got.empty() || got.rfind("HTTP/1.1 400", 0) == 0) << got;
}

TEST_F(BadInputTest, UnknownPathAndMethod) {
  Result<HttpResponse> r = testkit::HttpGet(address(), "/v2/nothing", kCallTimeout);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404);
  EXPECT_TRUE(BodyJson(*r).contains("error")) << r->body;
  r = testkit::HttpGet(address(), "/v1/completions", kCallTimeout);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 405);
}

}  // namespace
}  // namespace hearsay::integration
