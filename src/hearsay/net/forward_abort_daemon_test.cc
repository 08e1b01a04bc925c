// Forwards to a member that gossip declares dead, or suspects while they are silent, end at once
// (net::Daemon in process, the simulated engine, loopback sockets; docs/daemon.md, "Peer
// protocol"): the entry node does not wait for the peer client's idle timeout on a peer that
// stopped answering.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "hearsay/http/client.h"
#include "hearsay/http/test_util.h"
#include "hearsay/net/blocking_client_test_util.h"
#include "hearsay/net/daemon.h"
#include "hearsay/net/daemon_test_util.h"
#include "hearsay/testutil/eventually.h"

namespace hearsay::net::forward_abort_daemon_test {
namespace {

using testing::Metric;
using testing::Start;
using testing::Words;

using namespace std::chrono_literals;
using json = nlohmann::json;
using testutil::Eventually;

DaemonConfig Config() {
  DaemonConfig c = testing::LoopbackConfig();
  c.insecure = true;
  c.debug_faults = true;
  return c;
}

// One completion request in flight, with timeouts far beyond the peer client's idle timeout:
// whatever ends it, it is not this client.
class PendingCall {
 public:
  PendingCall(http::Client& client, const std::string& host_port, const json& body)
      : state_(std::make_shared<State>()) {
    http::ClientRequest req;
    req.method = "POST";
    req.host_port = host_port;
    req.target = "/v1/completions";
    req.body = body.dump();
    req.headers = {{"content-type", "application/json"}};
    req.response_timeout = 10min;
    req.idle_timeout = 10min;
    http::ResponseHandlers h;
    auto state = state_;
    h.on_headers = [state](int status, const http::Headers& headers) {
      state->response.status = status;
      state->response.headers = headers;
    };
    h.on_body = [state](std::string_view chunk) { state->response.body.append(chunk); };
    h.on_done = [state](Status s) {
      state->response.done = std::move(s);
      state->done.store(true);
    };
    client.Send(std::move(req), std::move(h));
  }
  bool done() const { return state_->done.load(); }
  // Valid once done().
  const testing::BlockingResponse& response() const { return state_->response; }

 private:
  struct State {
    testing::BlockingResponse response;
    std::atomic<bool> done{false};
  };
  std::shared_ptr<State> state_;
};

json Completion(const std::string& prompt, int max_tokens, bool stream) {
  return {
      {"model", "hearsay-sim"}, {"prompt", prompt}, {"max_tokens", max_tokens}, {"stream", stream}};
}

// A (policy paper: always the longest match) forwards to B, which holds the prefix. B's engine
// then stalls mid-answer (POST /debug/faults engine_slowdown) and A stops hearing B's gossip
// (block), so A suspects B, then declares it dead, while both forwards are silent but connected:
// the peer client alone would wait 30 s of silence. A aborts both (`reason`, a label of
// hearsay_forwards_aborted_total): the streaming client gets its error event, and the one that
// reads one JSON body is served again by A.
void StallTheHolderAndCutItsGossip(uint64_t suspect_silence_ms, const std::string& reason) {
  DaemonConfig ca = Config();
  ca.policy = "paper";
  ca.suspect_silence_ms = suspect_silence_ms;
  auto a = Start(ca);
  ASSERT_TRUE(a);
  DaemonConfig cb = Config();
  cb.join = {a->gossip_address()};
  cb.engine_preset = "consumer";  // slow enough that both answers are still under way
  auto b = Start(cb);
  ASSERT_TRUE(b);
  testing::BlockingClient control;
  const std::string shared = Words("doc", 1024);
  const json warm = Completion(shared + " q0", 1, false);
  ASSERT_EQ(
      control.Post(b->http_address(), "/v1/completions", warm, {{"x-hearsay-hop", "1"}}).status,
      200);
  ASSERT_TRUE(Eventually([&] {
    json j = json::parse(control.Get(a->http_address(), "/cluster").body);
    for (const auto& m : j["members"]) {
      if (m["id"] == b->node_id() && m["cache_entries"].get<int>() > 0) return true;
    }
    return false;
  }));

  http::testing::IoThread io;
  http::Client client(io.io());
  PendingCall streamed(client, a->http_address(), Completion(shared + " q1", 4000, true));
  PendingCall one_body(client, a->http_address(), Completion(shared + " q2", 300, false));
  auto metric = [&](const std::string& series) {
    return Metric(control.Get(a->http_address(), "/metrics").body, series);
  };
  // Both forwards reached their first token at B.
  ASSERT_TRUE(Eventually([&] {
    return metric("hearsay_requests_total{decision=\"forwarded\"}") == 2;
  })) << control.Get(a->http_address(), "/metrics").body;
  ASSERT_EQ(control.Post(b->http_address(), "/debug/faults", json{{"engine_slowdown", 1e6}}).status,
            200);
  ASSERT_EQ(control.Post(a->http_address(), "/debug/faults", json{{"block", {b->gossip_address()}}})
                .status,
            200);

  // Gossip suspects B within about a second and declares it dead within seconds (well within
  // the bound, itself below the idle timeout the forwards would otherwise wait for).
  ASSERT_TRUE(Eventually([&] { return streamed.done() && one_body.done(); }, 25s));
  for (const std::string r : {"member_dead", "suspect_silent"}) {
    EXPECT_EQ(metric("hearsay_forwards_aborted_total{reason=\"" + r + "\"}"), r == reason ? 2 : 0)
        << r;
  }

  // The stream had begun: it ends with an error event, then [DONE].
  const testing::BlockingResponse& s = streamed.response();
  EXPECT_EQ(s.status, 200);
  EXPECT_NE(s.body.find("data: {\"error\""), std::string::npos) << s.body.substr(0, 400);
  EXPECT_NE(s.body.find("failed mid-answer"), std::string::npos);
  EXPECT_NE(s.body.rfind("data: [DONE]"), std::string::npos);
  // The client reading one body saw nothing yet: A served it again, whole.
  const testing::BlockingResponse& o = one_body.response();
  ASSERT_EQ(o.status, 200) << o.body;
  EXPECT_EQ(json::parse(o.body)["usage"]["completion_tokens"], 300);
  EXPECT_EQ(*http::FindHeader(o.headers, "x-hearsay-served-by"), a->node_id());
}

TEST(ForwardAbortDaemonTest, AForwardToAMemberDeclaredDeadEndsAtOnce) {
  StallTheHolderAndCutItsGossip(/*suspect_silence_ms=*/0, "member_dead");
}

// With the default limits.suspect_silence_ms the forwards end while B is only suspected, seconds
// before it is declared dead.
TEST(ForwardAbortDaemonTest, ASilentForwardToASuspectedMemberEndsBeforeItsDeath) {
  StallTheHolderAndCutItsGossip(DaemonConfig{}.suspect_silence_ms, "suspect_silent");
}

}  // namespace
}  // namespace hearsay::net::forward_abort_daemon_test
