// A whole node (net::Daemon, engine openai) in front of a fake engine on loopback: engine keying
// makes the node's cache estimates match what the engine reports, a failing /tokenize never fails
// a request, and an engine whose reported cached tokens disagree raises the drift alarm.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <future>
#include <nlohmann/json.hpp>
#include <regex>

#include "hearsay/http/client.h"
#include "hearsay/http/test_util.h"
#include "hearsay/net/blocking_client_test_util.h"
#include "hearsay/net/daemon.h"
#include "hearsay/net/fake_tokenizing_engine_test_util.h"

namespace hearsay::net::keying_daemon_test {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using testing::FakeTokenizingEngine;

using Reply = testing::BlockingResponse;
using Caller = testing::BlockingClient;

// The value of one sample line of the Prometheus text, or -1.
double Metric(const std::string& text, const std::string& series) {
  const size_t pos = text.find("\n" + series + " ");
  if (pos == std::string::npos) return -1;
  return std::stod(text.substr(pos + series.size() + 2));
}

DaemonConfig NodeConfig(const std::string& upstream, const std::string& tokenizer) {
  DaemonConfig c;
  c.http_listen = "127.0.0.1:0";
  c.gossip_listen = "127.0.0.1:0";
  c.insecure = true;
  c.log_level = "warn";
  c.model = "tiny";
  c.engine = "openai";
  c.upstream = upstream;
  c.upstream_flavor = "llamacpp";
  c.capacity_tokens = 1 << 20;
  c.block_size = 4;
  c.tokenizer = tokenizer;
  // A loaded machine must not turn engine keying into the bytes fallback mid-test: a request keyed
  // one way finds nothing tracked the other way (the deadline has its own test,
  // prompt_tokenizer_test.cc).
  c.tokenize_timeout_ms = 30000;
  return c;
}

std::unique_ptr<Daemon> StartNode(DaemonConfig c) {
  spdlog::set_level(spdlog::level::warn);
  Result<std::unique_ptr<Daemon>> d = Daemon::Create(std::move(c));
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? std::move(d).value() : nullptr;
}

// Prompts in families that share long prefixes (a few-shot header per family), with varied
// lengths, so the engine reports partial hits of many sizes.
std::string Prompt(int family, int i) {
  std::string s = "Family " + std::to_string(family) + " header:";
  for (int k = 0; k < 30; ++k) s += " shared context sentence number " + std::to_string(k) + ".";
  s += " Question " + std::to_string(i) + ":";
  for (int k = 0; k < i % 7; ++k) s += " extra detail " + std::to_string(k * i);
  return s;
}

json Completion(const std::string& prompt) {
  return {{"model", "tiny"}, {"prompt", prompt}, {"max_tokens", 1}};
}

// Sends the workload; returns |estimated - reported| / prompt tokens from /metrics.
double RunWorkload(Daemon& d, Caller& c, int n, double* estimated, double* reported) {
  for (int i = 0; i < n; ++i) {
    Reply r = c.Call("POST", d.http_address(), "/v1/completions",
                     Completion(Prompt(i % 4, i / 4)).dump());
    EXPECT_EQ(r.status, 200) << r.body;
  }
  const std::string m = c.Call("GET", d.http_address(), "/metrics").body;
  *estimated = Metric(m, "hearsay_upstream_cached_tokens_total{kind=\"estimated\"}");
  *reported = Metric(m, "hearsay_upstream_cached_tokens_total{kind=\"reported\"}");
  return Metric(m, "hearsay_upstream_cache_drift_ratio");
}

TEST(KeyingDaemonTest, EngineKeyingMatchesTheEnginesReportedCachedTokens) {
  FakeTokenizingEngine engine;
  auto d = StartNode(NodeConfig(engine.url(), "engine"));
  ASSERT_TRUE(d);
  Caller c;
  double est = 0, rep = 0;
  const double drift = RunWorkload(*d, c, 48, &est, &rep);
  const std::string m = c.Call("GET", d->http_address(), "/metrics").body;
  EXPECT_EQ(Metric(m, "hearsay_tokenize_total{result=\"engine\"}"), 48) << m;
  EXPECT_EQ(Metric(m, "hearsay_upstream_evidence_total"), 48);
  EXPECT_GT(rep, 1000);  // the workload does hit the cache
  // Block-granular estimates (4 tokens) trail the engine's token-exact counts by < 1 block.
  EXPECT_LT(std::abs(est - rep) / rep, 0.05) << "estimated " << est << " reported " << rep;
  EXPECT_LT(drift, 0.05);
  EXPECT_EQ(Metric(m, "hearsay_upstream_cache_estimates_unreliable"), 0);
  std::printf("engine keying: estimated %.0f reported %.0f cached tokens, drift ratio %.4f\n", est,
              rep, drift);
  EXPECT_TRUE(d->Shutdown());
}

TEST(KeyingDaemonTest, AChatRequestIsKeyedWithTheEnginesTemplate) {
  FakeTokenizingEngine engine;
  auto d = StartNode(NodeConfig(engine.url(), "engine"));
  ASSERT_TRUE(d);
  Caller c;
  json chat = {{"model", "tiny"},
               {"max_tokens", 1},
               {"messages", {{{"role", "user"}, {"content", Prompt(1, 1)}}}}};
  for (int i = 0; i < 2; ++i) {
    Reply r = c.Call("POST", d->http_address(), "/v1/chat/completions", chat.dump());
    ASSERT_EQ(r.status, 200) << r.body;
  }
  const std::string m = c.Call("GET", d->http_address(), "/metrics").body;
  EXPECT_EQ(engine.template_calls, 2);
  EXPECT_EQ(Metric(m, "hearsay_tokenize_total{result=\"engine\"}"), 2) << m;
  const double est = Metric(m, "hearsay_upstream_cached_tokens_total{kind=\"estimated\"}");
  const double rep = Metric(m, "hearsay_upstream_cached_tokens_total{kind=\"reported\"}");
  // Second turn: the engine has all but the last token; the estimate is within one block.
  EXPECT_GT(rep, 100);
  EXPECT_LE(std::abs(est - rep), 4) << "estimated " << est << " reported " << rep;
  EXPECT_TRUE(d->Shutdown());
}

TEST(KeyingDaemonTest, AFailingTokenizeEndpointNeverFailsTheRequest) {
  FakeTokenizingEngine engine;
  engine.tokenize_mode = FakeTokenizingEngine::TokenizeMode::kError;
  auto d = StartNode(NodeConfig(engine.url(), "engine"));
  ASSERT_TRUE(d);
  Caller c;
  for (int i = 0; i < 3; ++i) {
    Reply r = c.Call("POST", d->http_address(), "/v1/completions", Completion(Prompt(0, i)).dump());
    EXPECT_EQ(r.status, 200) << r.body;
  }
  const std::string m = c.Call("GET", d->http_address(), "/metrics").body;
  EXPECT_EQ(Metric(m, "hearsay_tokenize_total{reason=\"error\",result=\"fallback\"}"), 3) << m;
  EXPECT_EQ(Metric(m, "hearsay_tokenize_total{result=\"engine\"}"), 0);
  EXPECT_EQ(engine.completions, 3);
  EXPECT_TRUE(d->Shutdown());
}

TEST(KeyingDaemonTest, AnEngineThatDisagreesWithTheEstimatesRaisesTheDriftAlarm) {
  FakeTokenizingEngine engine;
  engine.lie_about_cache = true;  // it reports 0 cached tokens whatever it holds
  auto d = StartNode(NodeConfig(engine.url(), "bytes"));
  ASSERT_TRUE(d);
  Caller c;
  double est = 0, rep = 0;
  const double drift = RunWorkload(*d, c, 48, &est, &rep);
  const std::string m = c.Call("GET", d->http_address(), "/metrics").body;
  EXPECT_EQ(rep, 0);
  EXPECT_GT(est, 1000);  // the node believed the shared prefixes were cached
  EXPECT_GE(drift, 0.2) << m;
  EXPECT_EQ(Metric(m, "hearsay_upstream_cache_estimates_unreliable"), 1) << m;
  EXPECT_EQ(Metric(m, "hearsay_upstream_cache_drift_alarms_total"), 1);
  // Flagged, the node routes only on what the engine reported cached, which is nothing: the
  // tracked cache (gossiped and used for local routing) is empty.
  EXPECT_EQ(Metric(m, "hearsay_engine_kv_used_tokens"), 0) << m;
  std::printf("lying engine: estimated %.0f reported %.0f, drift ratio %.3f, flagged\n", est, rep,
              drift);
  EXPECT_TRUE(d->Shutdown());
}

// The engine's answer reaches the client unchanged: exactly its text, with nothing of the
// simulated engine's placeholder tokens mixed in (an upstream reports no first token id).
TEST(KeyingDaemonTest, TheEnginesTextReachesTheClientUnchanged) {
  FakeTokenizingEngine engine;
  auto d = StartNode(NodeConfig(engine.url(), "bytes"));
  ASSERT_TRUE(d);
  Caller c;
  Reply r = c.Call("POST", d->http_address(), "/v1/completions", Completion(Prompt(0, 1)).dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["choices"][0]["text"], "ok") << r.body;

  json streamed = Completion(Prompt(0, 2));
  streamed["stream"] = true;
  r = c.Call("POST", d->http_address(), "/v1/completions", streamed.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  std::string text;
  for (size_t pos = 0; (pos = r.body.find("data: {", pos)) != std::string::npos;) {
    const size_t end = r.body.find("\n\n", pos);
    const json chunk = json::parse(r.body.substr(pos + 6, end - pos - 6));
    if (!chunk["choices"].empty()) text += chunk["choices"][0].value("text", "");
    pos = end;
  }
  EXPECT_EQ(text, "ok") << r.body;
  EXPECT_TRUE(d->Shutdown());
}

}  // namespace
}  // namespace hearsay::net::keying_daemon_test
