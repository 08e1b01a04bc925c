// Daemon clusters in process on loopback: joining, converging and forwarding to the prefix
// holder, a peer failing before the first token, and the debug faults that block, lose and
// delay what a node sends.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "hearsay/net/blocking_client_test_util.h"
#include "hearsay/net/daemon.h"
#include "hearsay/net/daemon_test_util.h"
#include "hearsay/testutil/eventually.h"

namespace hearsay::net {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using testing::BlockingClient;
using testing::BlockingResponse;
using testing::ClusterConfig;
using testing::CompletionBody;
using testing::SignedHopHeaders;
using testing::SseEvents;
using testing::Start;
using testing::Words;
using testutil::Eventually;

class ClusterTest : public ::testing::TestWithParam<bool> {};

TEST_P(ClusterTest, JoinsConvergesAndForwardsToThePrefixHolder) {
  const bool insecure = GetParam();
  auto a = Start(ClusterConfig(insecure));
  ASSERT_TRUE(a);
  std::vector<std::unique_ptr<Daemon>> nodes;
  for (int i = 0; i < 2; ++i) {
    DaemonConfig c = ClusterConfig(insecure);
    c.join = {a->gossip_address()};
    nodes.push_back(Start(c));
    ASSERT_TRUE(nodes.back());
  }
  Daemon& b = *nodes[0];
  BlockingClient client;
  auto alive_members = [&](Daemon& d) {
    json j = json::parse(client.Get(d.http_address(), "/cluster").body);
    int alive = 0;
    for (const auto& m : j["members"]) alive += m["state"] == "alive" ? 1 : 0;
    return alive;
  };
  ASSERT_TRUE(Eventually([&] {
    return alive_members(*a) == 2 && alive_members(b) == 2 && alive_members(*nodes[1]) == 2;
  })) << client.Get(a->http_address(), "/cluster").body;
  json cluster = json::parse(client.Get(a->http_address(), "/cluster").body);
  EXPECT_EQ(cluster["self"]["id"], a->node_id());
  // Generations exceed 2^53: strings, so JavaScript and jq read them exactly.
  ASSERT_TRUE(cluster["self"]["generation"].is_string());
  EXPECT_EQ(cluster["self"]["generation"], std::to_string(a->generation()));
  for (const auto& m : cluster["members"]) EXPECT_TRUE(m["generation"].is_string()) << m;
  for (const auto& m : cluster["members"]) {
    EXPECT_FALSE(m["api_address"].get<std::string>().empty());
  }

  // B serves a long prompt itself (a hop request is served where it lands).
  const std::string shared = Words("ctx", 2048);
  http::Headers hop = {{"x-hearsay-hop", "1"}};
  if (!insecure) hop = SignedHopHeaders(CompletionBody(shared + " first question", 2), b.node_id());
  BlockingResponse r = client.Post(b.http_address(), "/v1/completions",
                                   CompletionBody(shared + " first question", 2), hop);
  ASSERT_EQ(r.status, 200) << r.body;
  // A learns through gossip that B holds it.
  ASSERT_TRUE(Eventually([&] {
    json j = json::parse(client.Get(a->http_address(), "/cluster").body);
    for (const auto& m : j["members"]) {
      if (m["id"] == b.node_id() && m["cache_entries"].get<int>() > 0) return true;
    }
    return false;
  })) << client.Get(a->http_address(), "/cluster").body;

  // A sibling entering at A is forwarded to B and hits B's cache; non-streaming and streaming.
  r = client.Post(a->http_address(), "/v1/completions",
                  CompletionBody(shared + " second question", 4));
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_GE(j["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 2000);
  EXPECT_EQ(j["usage"]["completion_tokens"], 4);
  EXPECT_EQ(j["system_fingerprint"], a->node_id());
  // The answer names the node that served it and the one it entered at.
  EXPECT_EQ(*http::FindHeader(r.headers, "x-hearsay-served-by"), b.node_id());
  EXPECT_EQ(*http::FindHeader(r.headers, "x-hearsay-entry"), a->node_id());
  r = client.Post(a->http_address(), "/v1/completions",
                  CompletionBody(shared + " third question", 3, /*stream=*/true));
  ASSERT_EQ(r.status, 200);
  std::vector<std::string> ev = SseEvents(r.body);
  ASSERT_GE(ev.size(), 3u);
  EXPECT_EQ(ev.back(), "[DONE]");
  EXPECT_EQ(*http::FindHeader(r.headers, "x-hearsay-served-by"), b.node_id());
  EXPECT_EQ(*http::FindHeader(r.headers, "x-hearsay-entry"), a->node_id());
  EXPECT_GE(
      json::parse(ev[ev.size() - 2])["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(),
      2000);
  json stats = json::parse(client.Get(a->http_address(), "/cluster").body)["stats"];
  EXPECT_EQ(stats["forwarded"], 2) << stats.dump();
  const std::string metrics = client.Get(a->http_address(), "/metrics").body;
  EXPECT_NE(metrics.find("hearsay_requests_total{decision=\"forwarded\"} 2"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("hearsay_peers{state=\"alive\"} 2"), std::string::npos);
  EXPECT_EQ(metrics.find("hearsay_gossip_messages_total{direction=\"received\"} 0"),
            std::string::npos);

  // B leaves gracefully; A sees it as left.
  EXPECT_TRUE(b.Shutdown());
  EXPECT_TRUE(Eventually([&] {
    json jj = json::parse(client.Get(a->http_address(), "/cluster").body);
    for (const auto& m : jj["members"]) {
      if (m["id"] == b.node_id()) return m["state"] == "left";
    }
    return false;
  }));
}

INSTANTIATE_TEST_SUITE_P(KeyedAndInsecure, ClusterTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Insecure" : "Keyed"; });

TEST(DaemonTest, APeerFailingBeforeTheFirstTokenCostsARetryNotTheRequest) {
  // A (policy paper: always the longest match) forwards to B, which refuses with 429 because
  // its one slot is busy: A must retry (here: serve locally), and its client gets a 200.
  DaemonConfig ca = ClusterConfig(false);
  ca.policy = "paper";
  auto a = Start(ca);
  ASSERT_TRUE(a);
  DaemonConfig cb = ClusterConfig(false);
  cb.join = {a->gossip_address()};
  cb.max_concurrent_requests = 1;
  auto b = Start(cb);
  ASSERT_TRUE(b);
  BlockingClient client;
  const std::string shared = Words("doc", 1024);
  ASSERT_EQ(client
                .Post(b->http_address(), "/v1/completions", CompletionBody(shared + " q1", 1),
                      SignedHopHeaders(CompletionBody(shared + " q1", 1), b->node_id()))
                .status,
            200);
  ASSERT_TRUE(Eventually([&] {
    json j = json::parse(client.Get(a->http_address(), "/cluster").body);
    for (const auto& m : j["members"]) {
      if (m["id"] == b->node_id() && m["cache_entries"].get<int>() > 0) return true;
    }
    return false;
  }));
  // Occupy B's only slot.
  auto busy = std::async(std::launch::async, [&] {
    BlockingClient c;
    return c.Post(b->http_address(), "/v1/completions", CompletionBody("keep busy", 150),
                  SignedHopHeaders(CompletionBody("keep busy", 150), b->node_id()));
  });
  ASSERT_TRUE(Eventually([&] { return b->in_flight() == 1; }, 5s));
  BlockingResponse r =
      client.Post(a->http_address(), "/v1/completions", CompletionBody(shared + " q2", 2));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["usage"]["completion_tokens"], 2);
  const std::string metrics = client.Get(a->http_address(), "/metrics").body;
  EXPECT_NE(metrics.find("hearsay_requests_total{decision=\"retried\"} 1"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("hearsay_requests_total{decision=\"local\"} 1"), std::string::npos);
  EXPECT_EQ(busy.get().status, 200);
}

// Node A, with debug faults on, and node B joined to it; both open (no cluster key).
class DebugFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DaemonConfig ca = ClusterConfig(true);
    ca.debug_faults = true;
    a_ = Start(ca);
    ASSERT_TRUE(a_);
    DaemonConfig cb = ClusterConfig(true);
    cb.join = {a_->gossip_address()};
    b_ = Start(cb);
    ASSERT_TRUE(b_);
  }
  BlockingResponse Faults(const json& body) {
    return client_.Post(a_->http_address(), "/debug/faults", body);
  }
  // A's count of gossip datagrams it dropped for `reason`.
  double Dropped(const std::string& reason) {
    const std::string m = client_.Get(a_->http_address(), "/metrics").body;
    return testing::Metric(m, "hearsay_transport_dropped_total{reason=\"" + reason + "\"}");
  }

  std::unique_ptr<Daemon> a_;
  std::unique_ptr<Daemon> b_;
  BlockingClient client_;
};

TEST_F(DebugFaultsTest, BlockGossipTraffic) {
  EXPECT_EQ(Faults({{"block", {"x"}}}).status, 400);
  EXPECT_EQ(Faults({{"nope", 1}}).status, 400);
  BlockingResponse r = Faults({{"block", {b_->gossip_address()}}});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(Eventually([&] { return Dropped("blocked") >= 2; }));
  // Healing: an empty list unblocks.
  EXPECT_EQ(Faults({{"block", json::array()}}).status, 200);
}

// Delay and loss (the stand-in for netem): bad values are refused; with loss 1 every gossip
// datagram node A sends is lost and counted; zero and zero heal.
TEST_F(DebugFaultsTest, LoseAndDelayWhatTheNodeSends) {
  EXPECT_EQ(Faults({{"loss", 1.5}}).status, 400);
  EXPECT_EQ(Faults({{"delay_ms", -1}}).status, 400);
  EXPECT_EQ(Faults({{"loss", "x"}}).status, 400);
  // A bad key applies nothing, not even the good ones beside it.
  EXPECT_EQ(Faults({{"delay_ms", 5}, {"loss", 2}}).status, 400);
  EXPECT_EQ(Faults({{"engine_slowdown", 0.5}}).status, 400);
  BlockingResponse r = Faults({{"engine_slowdown", 1}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["delay_ms"], 0);
  r = Faults({{"delay_ms", 2}, {"loss", 1}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["loss"], 1);
  EXPECT_EQ(json::parse(r.body)["delay_ms"], 2);
  EXPECT_TRUE(Eventually([&] { return Dropped("fault_loss") >= 2; }));
  r = Faults({{"delay_ms", 0}, {"loss", 0}});
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body)["loss"], 0);
  EXPECT_EQ(json::parse(r.body)["delay_ms"], 0);
}

}  // namespace
}  // namespace hearsay::net
