#include "hearsay/launch/status_view.h"

#include <gtest/gtest.h>

namespace hearsay::launch {
namespace {

using nlohmann::json;

// Abridged GET /status bodies of a 2-node cluster (docs/reference.md#get-status).
const json kSelf = json::parse(R"({
  "version": 1, "node": "a", "model": "m", "policy": "hearsay", "health": "ok", "draining": false,
  "members": [
    {"id": "a", "self": true, "state": "alive", "rtt_ms": null, "overloaded": false,
     "report_age_ms": 0, "models": ["m", "m2"],
     "load": {"queue_depth": 2, "running": 3, "queue_wait_ms": 12.5, "kv_used_tokens": 500,
              "kv_capacity_tokens": 1000, "kv_pinned_tokens": 100}},
    {"id": "b", "self": false, "state": "dead", "rtt_ms": 0.42, "overloaded": true,
     "report_age_ms": 1500, "load": null, "models": null}
  ],
  "routing": {"requests": 10, "served_local": 4, "forwarded": 6, "hit_rate": 0.5,
              "ttft_p50_ms": 20, "ttft_p99_ms": 80, "bounces": 1, "retries": 2,
              "served_by": {"a": 4, "b": 6}},
  "gossip": {"bytes_sent_per_s": 1000, "bytes_received_per_s": 900, "view_age_ms": 300,
             "suspicions": 1, "suspect_members": 0}})");

TEST(StatusViewTest, TabulatesMembersRoutingAndGossip) {
  const std::string t = RenderStatusTable(kSelf, {});
  EXPECT_NE(t.find("node a · model m · policy hearsay · health ok · 2 members, 1 alive"),
            std::string::npos)
      << t;
  // This node: load and its own last minute.
  EXPECT_NE(t.find("a *"), std::string::npos) << t;
  EXPECT_NE(t.find("12.5"), std::string::npos) << t;  // queue wait
  EXPECT_NE(t.find("50.0"), std::string::npos) << t;  // KV used %
  EXPECT_NE(t.find("10.0"), std::string::npos) << t;  // KV pinned %
  EXPECT_NE(t.find("80.0"), std::string::npos) << t;  // TTFT p99
  // A dead member without a reachable /status: its state, RTT, report age; the rest unknown.
  EXPECT_NE(t.find("dead"), std::string::npos) << t;
  EXPECT_NE(t.find("0.42"), std::string::npos) << t;
  EXPECT_NE(t.find("1.5 |"), std::string::npos) << t;
  EXPECT_NE(t.find("a -> b: 6"), std::string::npos) << t;
  EXPECT_NE(t.find("bounces 1 · retries 2"), std::string::npos) << t;
  // What each member serves; a member whose service has not arrived: '-'.
  EXPECT_NE(t.find("  a *: m, m2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("  b: -\n"), std::string::npos) << t;
  EXPECT_NE(t.find("gossip: 1000 B/s sent, 900 B/s received · oldest live view 300 ms"),
            std::string::npos)
      << t;
}

TEST(StatusViewTest, PeersOwnStatusFillsTheirRow) {
  json peer = {{"node", "b"},
               {"routing",
                {{"requests", 7},
                 {"served_local", 7},
                 {"forwarded", 0},
                 {"hit_rate", 0.25},
                 {"ttft_p50_ms", 11},
                 {"ttft_p99_ms", 33},
                 {"served_by", {{"b", 7}}}}}};
  const std::string t = RenderStatusTable(kSelf, {{"b", peer}});
  EXPECT_NE(t.find("25.0"), std::string::npos) << t;
  EXPECT_NE(t.find("33.0"), std::string::npos) << t;
}

TEST(StatusViewTest, ToleratesAnEmptyBody) {
  const std::string t = RenderStatusTable(json::object(), {});
  EXPECT_NE(t.find("0 members"), std::string::npos) << t;
}

}  // namespace
}  // namespace hearsay::launch
