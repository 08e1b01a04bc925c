// `hearsay node --engine openai --kv-events ...` end to end: a real daemon subscribes to a vLLM
// KV-event publisher the test runs (kv_events_test_publisher.h) and its index follows the events,
// as /cluster (the node's own gossiped cache entries) and /metrics show. The upstream engine
// itself is absent (nothing listens at its URL): the event stream works independently of it, and
// the node stays up throughout.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "hearsay/http/client.h"
#include "hearsay/http/test_util.h"
#include "hearsay/net/daemon.h"
#include "hearsay/testutil/eventually.h"
#include "hearsay/upstream/kv_events_test_publisher.h"
#include "hearsay/upstream/kv_events_test_util.h"

namespace hearsay::net::kv_events_daemon_test {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using upstream::EncodeKvSeq;
using upstream::testing::EncodeBatch;
using upstream::testing::TestPublisher;
using upstream::testing::TokenRun;
using upstream::testing::WireCleared;
using upstream::testing::WireForm;
using upstream::testing::WireRemoved;
using upstream::testing::WireStored;

class Getter {
 public:
  Getter() : client_(io_.io()) {}
  std::string Get(const std::string& host_port, const std::string& target) {
    auto body = std::make_shared<std::string>();
    auto done = std::make_shared<std::promise<void>>();
    std::future<void> f = done->get_future();
    http::ClientRequest req;
    req.method = "GET";
    req.host_port = host_port;
    req.target = target;
    req.response_timeout = 10s;
    http::ResponseHandlers h;
    h.on_headers = [](int, const http::Headers&) {};
    h.on_body = [body](std::string_view chunk) { body->append(chunk); };
    h.on_done = [done](Status) { done->set_value(); };
    client_.Send(std::move(req), std::move(h));
    EXPECT_EQ(f.wait_for(15s), std::future_status::ready) << target;
    return *body;
  }

 private:
  http::testing::IoThread io_;
  http::Client client_;
};

using testutil::Eventually;

// The value of one series in a /metrics text, or -1.
double Metric(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

TEST(KvEventsDaemonTest, IndexFollowsTheEngineEventsAndGapsReplay) {
  zmq::context_t ctx(1);
  TestPublisher pub(ctx, /*with_replay=*/true);

  DaemonConfig c;
  c.http_listen = "127.0.0.1:0";
  c.gossip_listen = "127.0.0.1:0";
  c.log_level = "warn";
  c.insecure = true;
  c.engine = "openai";
  c.upstream = "http://127.0.0.1:1";  // no engine: the event stream does not depend on it
  c.upstream_flavor = "vllm";
  ASSERT_TRUE(c.ApplyFlag("kv-events", pub.endpoint()).ok());
  ASSERT_TRUE(c.ApplyFlag("kv-events-replay", pub.replay_endpoint()).ok());
  ASSERT_TRUE(c.ApplyFlag("kv-events-topic", upstream::testing::kTestTopic).ok());
  spdlog::set_level(spdlog::level::warn);
  Result<std::unique_ptr<Daemon>> d = Daemon::Create(c);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  const std::string hp = (*d)->http_address();
  ASSERT_TRUE(pub.AwaitSubscriber());

  Getter client;
  auto own_entries = [&] {
    return json::parse(client.Get(hp, "/cluster"))["self"]["cache_entries"].get<int64_t>();
  };
  auto metric = [&](const std::string& series) {
    return Metric(client.Get(hp, "/metrics"), series);
  };
  const uint32_t b = static_cast<uint32_t>(c.block_size);

  // The view's size is exact (/metrics); gossip carries landmark blocks only (index 0, 16, ...),
  // so /cluster's own cache entries count the chains whose first block is held.
  auto view_blocks = [&] { return metric("hearsay_kv_events_view_blocks"); };

  // Two prompts of 3 blocks stored; the second's last block arrives in a batch the wire loses.
  pub.Publish(0, EncodeBatch(WireForm::kArray, 1.0,
                             {WireStored({1, 2, 3}, std::nullopt, TokenRun(10, 3 * b), b)}));
  ASSERT_TRUE(Eventually([&] { return view_blocks() == 3 && own_entries() == 1; }))
      << client.Get(hp, "/cluster");
  pub.Publish(1, EncodeBatch(WireForm::kMap, 2.0,
                             {WireStored({4, 5}, std::nullopt, TokenRun(5000, 2 * b), b)}));
  pub.Keep(2, EncodeBatch(WireForm::kArray, 3.0,
                          {WireStored({6}, int64_t{5}, TokenRun(5000 + 2 * b, b), b)}));
  ASSERT_TRUE(Eventually([&] { return view_blocks() == 5 && own_entries() == 2; }));
  // Batch 3 reveals the gap: batch 2 is replayed first. Then the engine evicts the first prompt:
  // its blocks leave the view and its landmark the gossip.
  pub.Publish(3, EncodeBatch(WireForm::kArray, 4.0, {WireRemoved({3, 2, 1})}));
  ASSERT_TRUE(Eventually([&] { return view_blocks() == 3 && own_entries() == 1; }))
      << client.Get(hp, "/cluster");
  EXPECT_EQ(pub.replay_requests(), 1);

  // A malformed batch is counted and skipped; the node stays up.
  pub.Send({upstream::testing::kTestTopic, EncodeKvSeq(4), "\xc1"});
  ASSERT_TRUE(Eventually([&] { return metric("hearsay_kv_events_malformed_total") == 1; }));

  // The engine clears its cache.
  pub.Publish(5, EncodeBatch(WireForm::kArray, 5.0, {WireCleared{}}));
  ASSERT_TRUE(Eventually([&] { return own_entries() == 0; })) << client.Get(hp, "/cluster");

  const std::string m = client.Get(hp, "/metrics");
  EXPECT_EQ(Metric(m, "hearsay_kv_events_batches_total"), 5) << m;  // 0, 1, 2 (replayed), 3, 5
  EXPECT_EQ(Metric(m, "hearsay_kv_events_gaps_total"), 1);
  EXPECT_EQ(Metric(m, "hearsay_kv_events_replays_total{result=\"ok\"}"), 1);
  EXPECT_EQ(Metric(m, "hearsay_kv_events_resets_total"), 0);
  EXPECT_EQ(Metric(m, "hearsay_kv_events_blocks_total{change=\"stored\"}"), 6);
  EXPECT_EQ(Metric(m, "hearsay_kv_events_blocks_total{change=\"removed\"}"), 3);
  EXPECT_EQ(Metric(m, "hearsay_kv_events_cleared_total"), 1);
  EXPECT_EQ(Metric(m, "hearsay_kv_events_view_blocks"), 0);
  EXPECT_TRUE((*d)->Shutdown());
}

TEST(KvEventsDaemonTest, GapWithoutReplayResetsAndIsCounted) {
  zmq::context_t ctx(1);
  TestPublisher pub(ctx, /*with_replay=*/false);
  DaemonConfig c;
  c.http_listen = "127.0.0.1:0";
  c.gossip_listen = "127.0.0.1:0";
  c.log_level = "warn";
  c.insecure = true;
  c.engine = "openai";
  c.upstream = "http://127.0.0.1:1";
  c.kv_events = pub.endpoint();
  c.kv_events_topic = upstream::testing::kTestTopic;
  Result<std::unique_ptr<Daemon>> d = Daemon::Create(c);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  const std::string hp = (*d)->http_address();
  ASSERT_TRUE(pub.AwaitSubscriber());
  Getter client;
  auto own_entries = [&] {
    return json::parse(client.Get(hp, "/cluster"))["self"]["cache_entries"].get<int64_t>();
  };
  const uint32_t b = static_cast<uint32_t>(c.block_size);
  pub.Publish(0, EncodeBatch(WireForm::kArray, 1.0,
                             {WireStored({1, 2}, std::nullopt, TokenRun(10, 2 * b), b)}));
  auto view_blocks = [&] {
    return Metric(client.Get(hp, "/metrics"), "hearsay_kv_events_view_blocks");
  };
  ASSERT_TRUE(Eventually([&] { return view_blocks() == 2 && own_entries() == 1; }));
  // Batch 1 is lost and there is no replay socket: the view is dropped, then rebuilt from 2 on.
  pub.Publish(
      2, EncodeBatch(WireForm::kArray, 3.0, {WireStored({7}, std::nullopt, TokenRun(900, b), b)}));
  ASSERT_TRUE(Eventually([&] { return view_blocks() == 1; })) << client.Get(hp, "/metrics");
  const std::string m = client.Get(hp, "/metrics");
  EXPECT_EQ(Metric(m, "hearsay_kv_events_resets_total"), 1) << m;
  EXPECT_EQ(Metric(m, "hearsay_kv_events_gaps_total"), 1);
  EXPECT_TRUE((*d)->Shutdown());
}

TEST(KvEventsDaemonTest, ConfigErrorsNameTheSetting) {
  DaemonConfig c;
  c.insecure = true;
  c.kv_events = "tcp://127.0.0.1:5557";
  Status s = c.Validate();  // engine sim
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("engine.kv_events"), std::string::npos) << s.message();
  c.engine = "openai";
  c.upstream = "http://127.0.0.1:8000";
  EXPECT_TRUE(c.Validate().ok()) << c.Validate().message();
  c.kv_events = "127.0.0.1:5557";
  EXPECT_FALSE(c.Validate().ok());
  c.kv_events = "tcp://127.0.0.1:5557";
  c.kv_events_replay = "5558";
  EXPECT_FALSE(c.Validate().ok());
  EXPECT_TRUE(c.ApplyToml("[engine]\nkv_events = \"tcp://h:1\"\nkv_events_replay = \"tcp://h:2\"\n"
                          "kv_events_topic = \"t\"\n",
                          "node.toml")
                  .ok());
  EXPECT_EQ(c.kv_events_replay, "tcp://h:2");
  EXPECT_EQ(c.kv_events_topic, "t");
}

}  // namespace
}  // namespace hearsay::net::kv_events_daemon_test
