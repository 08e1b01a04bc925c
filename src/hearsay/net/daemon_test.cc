// net::Daemon in process: real sockets on ephemeral loopback ports, real threads, bounded waits.
#include "hearsay/net/daemon.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "hearsay/http/client.h"
#include "hearsay/http/host_port.h"
#include "hearsay/http/test_util.h"
#include "hearsay/net/blocking_client_test_util.h"
#include "hearsay/net/daemon_test_util.h"
#include "hearsay/net/key_admin.h"
#include "hearsay/net/peer_auth.h"
#include "hearsay/testutil/eventually.h"

namespace hearsay::net {

using http::FormatHostPort;
using http::HostPort;
using http::ParseHostPort;
namespace {

using testing::ClusterConfig;
using testing::CompletionBody;
using testing::kTestClusterKey;
using testing::SignedHopHeaders;
using testing::SseEvents;
using testing::Start;
using testing::Words;
using testutil::Eventually;

using namespace std::chrono_literals;
using json = nlohmann::json;

using Response = testing::BlockingResponse;
using TestClient = testing::BlockingClient;

// The sum of the samples in `metrics` (Prometheus text) whose line begins with `prefix`.
double MetricSum(const std::string& metrics, const std::string& prefix) {
  double sum = 0;
  size_t pos = 0;
  while (pos < metrics.size()) {
    size_t end = metrics.find('\n', pos);
    if (end == std::string::npos) end = metrics.size();
    const std::string line = metrics.substr(pos, end - pos);
    if (line.rfind(prefix, 0) == 0) sum += std::stod(line.substr(line.rfind(' ') + 1));
    pos = end + 1;
  }
  return sum;
}

TEST(DaemonTest, RefusesToStartWithoutKeyOrWithABadOne) {
  DaemonConfig c = ClusterConfig(true);
  c.insecure = false;
  Result<std::unique_ptr<Daemon>> d = Daemon::Create(c);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kFailedPrecondition);
  c.cluster_key_file = "/nonexistent/key";
  EXPECT_EQ(Daemon::Create(c).status().code(), StatusCode::kNotFound);
  const std::string bad = ::testing::TempDir() + "/hearsay_bad.key";
  std::ofstream(bad) << "not-a-key\n";
  c.cluster_key_file = bad;
  d = Daemon::Create(c);
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find(bad), std::string::npos);
  std::remove(bad.c_str());
}

TEST(DaemonTest, RefusesToStartWithABadBlockKeySecretFile) {
  DaemonConfig c = ClusterConfig(false);
  c.block_key_secret_file = "/nonexistent/block.key";
  Result<std::unique_ptr<Daemon>> d = Daemon::Create(c);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kNotFound);
  EXPECT_NE(d.status().message().find("block_key_secret_file"), std::string::npos)
      << d.status().message();
  const std::string bad = ::testing::TempDir() + "/hearsay_bad_block.key";
  std::ofstream(bad) << "not-a-key\n";
  c.block_key_secret_file = bad;
  d = Daemon::Create(c);
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find(bad), std::string::npos) << d.status().message();
  std::remove(bad.c_str());
  c.block_key_secret_file = testing::ClusterKeyFile("daemon_test");
  EXPECT_TRUE(Daemon::Create(c).ok());
}

TEST(DaemonTest, PortInUseIsAnError) {
  auto a = Start(ClusterConfig(true));
  ASSERT_TRUE(a);
  DaemonConfig c = ClusterConfig(true);
  c.http_listen = a->http_address();
  Result<std::unique_ptr<Daemon>> d = Daemon::Create(c);
  EXPECT_EQ(d.status().code(), StatusCode::kUnavailable) << d.status().ToString();
  c = ClusterConfig(true);
  c.gossip_listen = a->gossip_address();
  d = Daemon::Create(c);
  EXPECT_EQ(d.status().code(), StatusCode::kUnavailable) << d.status().ToString();
}

// `id` is `prefix`, lower-case hex digits, '-', lower-case hex digits.
bool IsResponseId(std::string_view id, std::string_view prefix) {
  if (!id.starts_with(prefix)) return false;
  id.remove_prefix(prefix.size());
  const size_t dash = id.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == id.size()) return false;
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  for (size_t i = 0; i < id.size(); ++i) {
    if (i != dash && !hex(id[i])) return false;
  }
  return true;
}

TEST(DaemonTest, AnswersCompletionsAndChatStreamingAndNot) {
  auto d = Start(ClusterConfig(true));
  ASSERT_TRUE(d);
  TestClient client;
  const std::string hp = d->http_address();
  const std::string prompt = Words("alpha", 100);

  Response r = client.Post(hp, "/v1/completions", CompletionBody(prompt, 5));
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_FALSE(j["choices"][0]["text"].get<std::string>().empty());
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 100);
  EXPECT_EQ(j["usage"]["completion_tokens"], 5);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  // Ids are "cmpl-" or "chatcmpl-", then the generation and the request number in hex.
  const std::string first_id = j["id"];
  EXPECT_TRUE(IsResponseId(first_id, "cmpl-")) << first_id;

  // The same prompt again hits the engine's prefix cache (all but the last token).
  r = client.Post(hp, "/v1/completions", CompletionBody(prompt, 5, /*stream=*/true));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(*http::FindHeader(r.headers, "content-type"), "text/event-stream");
  std::vector<std::string> ev = SseEvents(r.body);
  ASSERT_GE(ev.size(), 4u);
  EXPECT_EQ(ev.back(), "[DONE]");
  json usage = json::parse(ev[ev.size() - 2]);
  EXPECT_EQ(usage["usage"]["prompt_tokens_details"]["cached_tokens"], 99);
  EXPECT_EQ(usage["usage"]["completion_tokens"], 5);
  std::string text;
  for (size_t i = 0; i + 2 < ev.size(); ++i) {
    text += json::parse(ev[i])["choices"][0]["text"].get<std::string>();
  }
  EXPECT_FALSE(text.empty());

  json chat = {{"model", "hearsay-sim"},
               {"messages", {{{"role", "user"}, {"content", "hello there"}}}},
               {"max_tokens", 3}};
  r = client.Post(hp, "/v1/chat/completions", chat);
  ASSERT_EQ(r.status, 200) << r.body;
  j = json::parse(r.body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["usage"]["completion_tokens"], 3);
  chat["stream"] = true;
  r = client.Post(hp, "/v1/chat/completions", chat);
  ASSERT_EQ(r.status, 200);
  ev = SseEvents(r.body);
  ASSERT_GE(ev.size(), 3u);
  EXPECT_EQ(ev.back(), "[DONE]");
  EXPECT_EQ(json::parse(ev[0])["object"], "chat.completion.chunk");
  const std::string chat_id = json::parse(ev[0])["id"];
  EXPECT_TRUE(IsResponseId(chat_id, "chatcmpl-")) << chat_id;
  // The generation's part is shared, the request number's differs.
  EXPECT_EQ(chat_id.substr(4, chat_id.rfind('-') - 4), first_id.substr(0, first_id.rfind('-')));
  EXPECT_NE(chat_id.substr(chat_id.rfind('-')), first_id.substr(first_id.rfind('-')));
  EXPECT_EQ(json::parse(ev[0])["choices"][0]["delta"]["role"], "assistant");

  // Models, health, metrics.
  r = client.Get(hp, "/v1/models");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body)["data"][0]["id"], "hearsay-sim");
  r = client.Get(hp, "/health");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body)["status"], "ok");
  r = client.Get(hp, "/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("hearsay_requests_total{decision=\"local\"} 4"), std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("hearsay_ttft_seconds_count 4"), std::string::npos);
  EXPECT_NE(r.body.find("hearsay_engine_kv_capacity_tokens 262144"), std::string::npos);
  EXPECT_TRUE(d->Shutdown());
}

// GET /status is the documented JSON of docs/reference.md; GET / is the console that reads it.
TEST(DaemonTest, StatusAndConsole) {
  auto d = Start(ClusterConfig(true));
  ASSERT_TRUE(d);
  TestClient client;
  const std::string hp = d->http_address();
  // Nobody reads /status yet: the request is counted, but the node records no decision.
  Response r = client.Post(hp, "/v1/completions", CompletionBody(Words("s", 40), 2));
  ASSERT_EQ(r.status, 200) << r.body;
  r = client.Get(hp, "/status");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body)["routing"]["requests"], 1);
  EXPECT_TRUE(json::parse(r.body)["decisions"].empty());
  // Now that /status is read, decisions are recorded.
  r = client.Post(hp, "/v1/completions", CompletionBody(Words("t", 40), 2));
  ASSERT_EQ(r.status, 200) << r.body;
  r = client.Get(hp, "/status");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(*http::FindHeader(r.headers, "access-control-allow-origin"), "*");
  const json s = json::parse(r.body);
  for (const char* key : {"version", "node", "generation", "model", "policy", "health", "draining",
                          "members", "routing", "decisions", "gossip", "totals"}) {
    EXPECT_TRUE(s.contains(key)) << key;
  }
  EXPECT_EQ(s["version"], 1);
  EXPECT_TRUE(s["generation"].is_string());
  ASSERT_EQ(s["members"].size(), 1u);
  const json& self = s["members"][0];
  EXPECT_EQ(self["id"], d->node_id());
  EXPECT_EQ(self["self"], true);
  EXPECT_EQ(self["models"][0], "hearsay-sim");
  for (const char* key : {"queue_depth", "running", "queue_wait_ms", "kv_used_tokens",
                          "kv_capacity_tokens", "kv_pinned_tokens", "prefill_ms_per_token"}) {
    EXPECT_TRUE(self["load"].contains(key)) << key;
  }
  for (const char* key : {"trust", "cache_trust", "time_trust", "delivery", "ttft_ratio", "samples",
                          "listed_work_ms", "reported_work_ms"}) {
    EXPECT_TRUE(self["trust"].contains(key)) << key;
  }
  // Its value depends on the host's timing (a stalled first token is evidence too), so only its
  // range is the shape's; PeerTrustTest holds the values.
  EXPECT_GT(self["trust"]["trust"].get<double>(), 0.0);
  EXPECT_LE(self["trust"]["trust"].get<double>(), 1.0);
  // Both requests in the last minute's routing; the second in the decisions.
  EXPECT_EQ(s["routing"]["requests"], 2);
  EXPECT_EQ(s["routing"]["served_local"], 2);
  EXPECT_EQ(s["routing"]["served_by"][d->node_id()], 2);
  EXPECT_EQ(s["routing"]["prompt_tokens"], 80);
  EXPECT_TRUE(s["routing"]["ttft_p50_ms"].is_number());
  ASSERT_EQ(s["decisions"].size(), 1u);
  EXPECT_EQ(s["decisions"][0]["chosen"], d->node_id());
  EXPECT_EQ(s["decisions"][0]["served_by"], d->node_id());
  EXPECT_FALSE(s["decisions"][0]["reason"].get<std::string>().empty());
  EXPECT_EQ(s["totals"]["client_requests"], 2);

  r = client.Get(hp, "/");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(*http::FindHeader(r.headers, "content-type"), "text/html; charset=utf-8");
  EXPECT_NE(r.body.find("<title>hearsay console</title>"), std::string::npos);
  EXPECT_NE(r.body.find("fetchJson(\"/status\")"), std::string::npos);
  // Self-contained: nothing is loaded from elsewhere.
  EXPECT_EQ(r.body.find("src=\"http"), std::string::npos);
  EXPECT_EQ(r.body.find("href=\"http"), std::string::npos);
  EXPECT_TRUE(d->Shutdown());
}

TEST(DaemonTest, BadInputGetsTheRightStatus) {
  DaemonConfig c = ClusterConfig(false);
  c.max_body_bytes = 4096;
  c.context_tokens = 300;
  c.max_tokens = 100;
  auto d = Start(c);
  ASSERT_TRUE(d);
  TestClient client;
  const std::string hp = d->http_address();
  auto status_of = [&](const std::string& body) {
    Response r = client.Call("POST", hp, "/v1/completions", body);
    EXPECT_NE(r.body.find("\"error\""), std::string::npos) << r.body;
    return r.status;
  };
  EXPECT_EQ(status_of("{not json"), 400);
  EXPECT_EQ(status_of("[1,2]"), 400);
  EXPECT_EQ(status_of(R"({"model":"hearsay-sim"})"), 400);
  EXPECT_EQ(status_of(R"({"model":"hearsay-sim","prompt":""})"), 400);
  EXPECT_EQ(status_of(R"({"model":"hearsay-sim","prompt":"x","max_tokens":"5"})"), 400);
  EXPECT_EQ(status_of(R"({"model":"gpt-4","prompt":"x"})"), 404);
  EXPECT_EQ(status_of(CompletionBody(Words("w", 250), 100).dump()), 400);  // over the context
  EXPECT_EQ(status_of(CompletionBody(std::string(5000, 'a'), 1).dump()), 413);
  Response r = client.Get(hp, "/v1/completions");
  EXPECT_EQ(r.status, 405);
  r = client.Get(hp, "/nope");
  EXPECT_EQ(r.status, 404);
  r = client.Post(hp, "/debug/faults", json{{"block", json::array()}});
  EXPECT_EQ(r.status, 404);  // only with --debug-faults

  // Hop requests need a peer authenticator made for this request and this node.
  r = client.Post(hp, "/v1/completions", CompletionBody("hi there", 1), {{"x-hearsay-hop", "1"}});
  EXPECT_EQ(r.status, 403);
  r = client.Post(hp, "/v1/completions", CompletionBody("hi there", 1),
                  {{"x-hearsay-hop", "1"}, {"x-hearsay-peer-auth", std::string(64, 'a')}});
  EXPECT_EQ(r.status, 403);
  auto key = gossip::ClusterKey::Parse(kTestClusterKey);
  ASSERT_TRUE(key.ok());
  // A hop signed for another node, or replayed, is refused as well.
  r = client.Post(hp, "/v1/completions", CompletionBody("hi there", 2),
                  SignedHopHeaders(CompletionBody("hi there", 2), "another-node"));
  EXPECT_EQ(r.status, 403);
  const http::Headers signed_hop = SignedHopHeaders(CompletionBody("hi there", 2), d->node_id());
  r = client.Post(hp, "/v1/completions", CompletionBody("hi there", 2), signed_hop);
  ASSERT_EQ(r.status, 200) << r.body;
  // A hop is always answered as a stream, with the peer headers and a usage chunk.
  EXPECT_EQ(*http::FindHeader(r.headers, "x-hearsay-prompt-tokens"), "2");
  EXPECT_EQ(*http::FindHeader(r.headers, "x-hearsay-cached-tokens"), "0");
  EXPECT_EQ(*http::FindHeader(r.headers, "x-hearsay-node"), d->node_id());
  std::vector<std::string> ev = SseEvents(r.body);
  ASSERT_GE(ev.size(), 3u);
  EXPECT_EQ(json::parse(ev[ev.size() - 2])["usage"]["completion_tokens"], 2);
  // The same request again, byte for byte: a replay.
  r = client.Post(hp, "/v1/completions", CompletionBody("hi there", 2), signed_hop);
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_NE(r.body.find("replayed"), std::string::npos) << r.body;

  // The server stays up, and counted the errors.
  r = client.Get(hp, "/metrics");
  EXPECT_NE(r.body.find("hearsay_http_errors_total{status=\"403\"} 4"), std::string::npos);
  EXPECT_NE(r.body.find("hearsay_peer_auth_failures_total 4"), std::string::npos);
  // Every 4xx answer is a rejected request: the two counters agree.
  const double client_errors = MetricSum(r.body, "hearsay_http_errors_total{status=\"4");
  EXPECT_GE(client_errors, 14) << r.body;  // the 413 is the HTTP server's own (rejections_total)
  EXPECT_EQ(MetricSum(r.body, "hearsay_requests_rejected_total"), client_errors) << r.body;
  // An error names the node that made it, as served-by and entry.
  r = client.Get(hp, "/nope");
  EXPECT_EQ(*http::FindHeader(r.headers, "x-hearsay-served-by"), d->node_id());
  EXPECT_EQ(*http::FindHeader(r.headers, "x-hearsay-entry"), d->node_id());
  EXPECT_TRUE(d->Shutdown());
}

// SIGTERM's drain: in-flight requests finish while /health answers 503 "draining" (it is not
// refused: a load balancer's health check sees the node go) and new completions get 503.
TEST(DaemonTest, DrainAnswersHealthWith503WhileRequestsFinish) {
  DaemonConfig c = ClusterConfig(true);
  c.max_tokens = 100000;
  c.context_tokens = 110000;
  c.drain_timeout_ms = 60000;
  auto d = Start(c);
  ASSERT_TRUE(d);
  const std::string hp = d->http_address();
  Result<HostPort> port = ParseHostPort(hp);
  ASSERT_TRUE(port.ok());
  TestClient client;
  std::future<bool> drained;
  {
    // A stream that ends only when this test closes its connection keeps the drain going.
    http::testing::RawClient busy(port->port);
    ASSERT_TRUE(busy.connected());
    const std::string body = CompletionBody("busy now", 100000, true).dump();
    ASSERT_TRUE(
        busy.Send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                  "application/json\r\nContent-Length: " +
                  std::to_string(body.size()) + "\r\n\r\n" + body));
    ASSERT_TRUE(busy.ReadUntil("data: "));
    drained = std::async(std::launch::async, [&] { return d->Shutdown(); });
    Response health;
    ASSERT_TRUE(Eventually([&] {
      health = client.Get(hp, "/health");
      return health.status == 503;
    })) << health.status
        << " " << health.done.ToString();
    EXPECT_EQ(json::parse(health.body)["status"], "draining");
    Response r = client.Post(hp, "/v1/completions", CompletionBody("late", 1));
    EXPECT_EQ(r.status, 503) << r.body;
    EXPECT_EQ(d->in_flight(), 1);  // the stream is still served
    EXPECT_EQ(drained.wait_for(0s), std::future_status::timeout);
  }  // closing the stream ends the last request: the drain completes
  EXPECT_TRUE(drained.get());
}

TEST(DaemonTest, OverTheConcurrencyLimitGets429WithRetryAfter) {
  DaemonConfig c = ClusterConfig(true);
  c.max_concurrent_requests = 1;
  c.max_tokens = 100000;  // the busy answer below would take ~10 minutes
  c.context_tokens = 110000;
  auto d = Start(c);
  ASSERT_TRUE(d);
  const std::string hp = d->http_address();
  Result<HostPort> port = ParseHostPort(hp);
  ASSERT_TRUE(port.ok());
  TestClient client;
  {
    // The one slot is held by a stream that ends only when this test closes its connection, not
    // after a fixed answer length: on a loaded machine a bounded answer could finish before the
    // second request arrives, which then got 200 instead of 429.
    http::testing::RawClient busy(port->port);
    ASSERT_TRUE(busy.connected());
    const std::string body = CompletionBody("busy now", 100000, true).dump();
    ASSERT_TRUE(
        busy.Send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                  "application/json\r\nContent-Length: " +
                  std::to_string(body.size()) + "\r\n\r\n" + body));
    ASSERT_TRUE(busy.ReadUntil("data: "));  // streaming: the slot is taken
    ASSERT_EQ(d->in_flight(), 1);
    Response r = client.Post(hp, "/v1/completions", CompletionBody("me too", 1));
    EXPECT_EQ(r.status, 429);
    EXPECT_EQ(*http::FindHeader(r.headers, "retry-after"), "1");
  }  // closing the connection cancels the busy request and frees the slot
  ASSERT_TRUE(Eventually([&] { return d->in_flight() == 0; }, 5s));
  Response r = client.Post(hp, "/v1/completions", CompletionBody("me too", 1));
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(d->Shutdown());
}

TEST(DaemonTest, ClientDisconnectCancelsTheRequest) {
  auto d = Start(ClusterConfig(true));
  ASSERT_TRUE(d);
  Result<HostPort> hp = ParseHostPort(d->http_address());
  ASSERT_TRUE(hp.ok());
  {
    http::testing::RawClient raw(hp->port);
    ASSERT_TRUE(raw.connected());
    const std::string body = CompletionBody("long answer", 1000, true).dump();
    ASSERT_TRUE(
        raw.Send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                 "application/json\r\nContent-Length: " +
                 std::to_string(body.size()) + "\r\n\r\n" + body));
    ASSERT_TRUE(raw.ReadUntil("data: "));  // streaming has begun
    EXPECT_EQ(d->in_flight(), 1);
  }  // closes the connection mid-stream
  EXPECT_TRUE(Eventually([&] { return d->in_flight() == 0; }, 5s));
  TestClient client;
  EXPECT_TRUE(Eventually([&] {
    return client.Get(d->http_address(), "/metrics")
               .body.find("hearsay_requests_cancelled_total 1") != std::string::npos;
  }));
  EXPECT_TRUE(d->Shutdown());
}

// --io-threads 0: the sockets share the core thread. Same answers, streams and cancellation.
TEST(DaemonTest, IoOnTheCoreThreadServesAndCancels) {
  DaemonConfig c = ClusterConfig(true);
  c.io_threads = 0;
  auto d = Start(c);
  ASSERT_TRUE(d);
  TestClient client;
  const std::string hp = d->http_address();
  const std::string prompt = Words("beta", 64);
  Response r = client.Post(hp, "/v1/completions", CompletionBody(prompt, 4));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["usage"]["completion_tokens"], 4);
  r = client.Post(hp, "/v1/completions", CompletionBody(prompt, 4, /*stream=*/true));
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<std::string> ev = SseEvents(r.body);
  ASSERT_GE(ev.size(), 3u);
  EXPECT_EQ(ev.back(), "[DONE]");
  EXPECT_EQ(json::parse(ev[ev.size() - 2])["usage"]["prompt_tokens_details"]["cached_tokens"], 63);

  Result<HostPort> port = ParseHostPort(hp);
  ASSERT_TRUE(port.ok());
  {
    http::testing::RawClient raw(port->port);
    ASSERT_TRUE(raw.connected());
    const std::string body = CompletionBody("long answer", 1000, true).dump();
    ASSERT_TRUE(
        raw.Send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                 "application/json\r\nContent-Length: " +
                 std::to_string(body.size()) + "\r\n\r\n" + body));
    ASSERT_TRUE(raw.ReadUntil("data: "));
    EXPECT_EQ(d->in_flight(), 1);
  }
  EXPECT_TRUE(Eventually([&] { return d->in_flight() == 0; }, 5s));
  r = client.Get(hp, "/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("hearsay_requests_total{decision=\"local\"} 3"), std::string::npos)
      << r.body;
  EXPECT_TRUE(d->Shutdown());
}

// A body built to be slow (one object of many keys, near the body limit) is parsed in time
// linear in its size, so /health of the same node answers meanwhile (with a quadratic parse, a
// body like this held the I/O thread for about 27 s).
TEST(DaemonTest, HostileBodyDoesNotStallHealth) {
  DaemonConfig c = ClusterConfig(true);
  c.max_json_members = 1 << 20;  // let the parser, not the budget, meet every key
  auto d = Start(c);
  ASSERT_TRUE(d);
  std::string metadata = "{";
  for (int i = 0; i < 100000; ++i) {
    if (i > 0) metadata.push_back(',');
    metadata.push_back('"');
    metadata.append(std::to_string(i));
    metadata.append("\":0");
  }
  metadata.push_back('}');
  const std::string body =
      R"({"model":"hearsay-sim","prompt":"x","max_tokens":2,"metadata":)" + metadata + "}";
  ASSERT_LT(body.size(), size_t{1} << 20);
  auto hostile = std::async(std::launch::async, [&] {
    TestClient client;
    return client.Call("POST", d->http_address(), "/v1/completions", body);
  });
  TestClient client;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(client.Get(d->http_address(), "/health").status, 200);
  EXPECT_EQ(hostile.get().status, 200);
  // Over the default budget, the same body is refused with a clear 400.
  auto strict = Start(ClusterConfig(true));
  ASSERT_TRUE(strict);
  const Response r = client.Call("POST", strict->http_address(), "/v1/completions", body);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("request_too_complex"), std::string::npos) << r.body.substr(0, 300);
  EXPECT_TRUE(d->Shutdown());
  EXPECT_TRUE(strict->Shutdown());
}

TEST(DaemonTest, EncodedBodiesAre415AndErrorsQuoteLittle) {
  auto d = Start(ClusterConfig(true));
  ASSERT_TRUE(d);
  TestClient client;
  Response r = client.Post(d->http_address(), "/v1/completions", CompletionBody("hi", 1),
                           {{"content-encoding", "gzip"}});
  EXPECT_EQ(r.status, 415);
  EXPECT_NE(r.body.find("unsupported_content_encoding"), std::string::npos) << r.body;
  r = client.Get(d->http_address(), "/" + std::string(5000, 'p'));
  EXPECT_EQ(r.status, 404);
  EXPECT_LT(r.body.size(), 300u);
  EXPECT_TRUE(d->Shutdown());
}

TEST(DaemonTest, DebugFaultsNeedTheAdminToken) {
  DaemonConfig c = ClusterConfig(false);
  c.debug_faults = true;
  auto d = Start(c);
  ASSERT_TRUE(d);
  TestClient client;
  const json block = {{"block", json::array()}};
  const gossip::ClusterKey key = *gossip::ClusterKey::Parse(kTestClusterKey);
  const auto sign = [&](std::string_view receiver) {
    return SignAdminRequest(key, "POST", "/debug/faults", block.dump(), receiver, UnixMillisNow());
  };
  Response r = client.Post(d->http_address(), "/debug/faults", block);
  EXPECT_EQ(r.status, 403) << r.body;
  r = client.Post(d->http_address(), "/debug/faults", block,
                  {{"x-hearsay-admin-token", sign("another-node")}});
  EXPECT_EQ(r.status, 403) << r.body;  // made for another node
  const std::string good = sign(d->node_id());
  r = client.Post(d->http_address(), "/debug/faults", block, {{"x-hearsay-admin-token", good}});
  EXPECT_EQ(r.status, 200) << r.body;
  r = client.Post(d->http_address(), "/debug/faults", block, {{"x-hearsay-admin-token", good}});
  EXPECT_EQ(r.status, 403) << r.body;  // a replay
  EXPECT_TRUE(d->Shutdown());
}

}  // namespace
}  // namespace hearsay::net
