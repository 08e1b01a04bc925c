// The daemon's injected link delay (POST /debug/faults "delay_ms", docs/daemon.md) on a whole
// forward: net::Daemon in process, the simulated engine, loopback sockets. The entry holds the
// forward and then its answer for the delay each, so the client's first token comes at least two
// delays after its request, and the answer (streamed or not) arrives whole and in order.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "hearsay/http/client.h"
#include "hearsay/net/blocking_client_test_util.h"
#include "hearsay/net/daemon.h"
#include "hearsay/net/daemon_test_util.h"
#include "hearsay/testutil/eventually.h"

namespace hearsay::net {
namespace {

using testing::Start;
using testing::Words;
using testutil::Eventually;

using json = nlohmann::json;

json Completion(const std::string& prompt, int max_tokens, bool stream) {
  return {
      {"model", "hearsay-sim"}, {"prompt", prompt}, {"max_tokens", max_tokens}, {"stream", stream}};
}

TEST(DelayedForwardDaemonTest, AForwardTakesTwoDelaysAndItsAnswerArrivesWhole) {
  // A (policy paper: the longest match) forwards to B, which holds the prefix.
  DaemonConfig ca = testing::LoopbackConfig();
  ca.insecure = true;
  ca.debug_faults = true;
  ca.policy = "paper";
  auto a = Start(ca);
  ASSERT_TRUE(a);
  DaemonConfig cb = testing::LoopbackConfig();
  cb.insecure = true;
  cb.join = {a->gossip_address()};
  auto b = Start(cb);
  ASSERT_TRUE(b);
  testing::BlockingClient client;
  const std::string shared = Words("doc", 1024);
  ASSERT_EQ(client
                .Post(b->http_address(), "/v1/completions", Completion(shared + " q0", 1, false),
                      {{"x-hearsay-hop", "1"}})
                .status,
            200);
  ASSERT_TRUE(Eventually([&] {
    json j = json::parse(client.Get(a->http_address(), "/cluster").body);
    for (const auto& m : j["members"]) {
      if (m["id"] == b->node_id() && m["cache_entries"].get<int>() > 0) return true;
    }
    return false;
  }));
  constexpr int kDelayMs = 60;
  ASSERT_EQ(client.Post(a->http_address(), "/debug/faults", json{{"delay_ms", kDelayMs}}).status,
            200);

  // Not streamed: served by B, whole, and not before the request and its answer crossed the
  // delayed link (a lower bound the delay guarantees, whatever the host's speed).
  const auto start = std::chrono::steady_clock::now();
  const testing::BlockingResponse one =
      client.Post(a->http_address(), "/v1/completions", Completion(shared + " q1", 20, false));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(*http::FindHeader(one.headers, "x-hearsay-served-by"), b->node_id());
  EXPECT_EQ(json::parse(one.body)["usage"]["completion_tokens"], 20);
  EXPECT_GE(took, std::chrono::milliseconds(2 * kDelayMs));

  // Streamed: every chunk, the usage, then [DONE], in that order.
  json streamed = Completion(shared + " q2", 30, true);
  streamed["stream_options"] = {{"include_usage", true}};
  const testing::BlockingResponse s = client.Post(a->http_address(), "/v1/completions", streamed);
  ASSERT_EQ(s.status, 200) << s.body;
  EXPECT_EQ(s.body.find("\"error\""), std::string::npos) << s.body.substr(0, 400);
  const size_t finish = s.body.find("\"finish_reason\":\"length\"");
  const size_t usage = s.body.find("\"completion_tokens\":30");
  const size_t done = s.body.rfind("data: [DONE]");
  ASSERT_NE(finish, std::string::npos) << s.body.substr(0, 400);
  ASSERT_NE(usage, std::string::npos);
  ASSERT_NE(done, std::string::npos);
  EXPECT_LT(finish, done);
  EXPECT_LT(usage, done);
  EXPECT_EQ(*http::FindHeader(s.headers, "x-hearsay-served-by"), b->node_id());
}

}  // namespace
}  // namespace hearsay::net
