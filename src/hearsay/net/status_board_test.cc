#include "hearsay/net/status_board.h"

#include <gtest/gtest.h>

namespace hearsay::net {
namespace {

using namespace std::chrono_literals;

class ManualClock final : public Clock {
 public:
  TimePoint Now() const override { return now_; }
  void Advance(Duration d) { now_ += d; }

 private:
  TimePoint now_{std::chrono::hours(1)};
};

// A recorder that counts what it was passed.
class Counting final : public node::DecisionRecorder {
 public:
  void OnRoute(const node::RouteRecord&) override { ++routes; }
  void OnServe(const node::ServeRecord&) override { ++serves; }
  int routes = 0;
  int serves = 0;
};

node::RouteRecord Routed(uint64_t id, const std::string& served_by, uint32_t prompt,
                         uint32_t cached, double ttft_ms, const std::string& result = "served") {
  node::RouteRecord r;
  r.request = id;
  r.served_by = served_by;
  r.prompt_tokens = prompt;
  r.cached_tokens = cached;
  r.ttft_ms = ttft_ms;
  node::RouteAttempt a;
  a.chosen = served_by;
  a.reason = "lowest-cost";
  a.expected_ttft_ms = ttft_ms - 1;
  a.estimated_cached_tokens = cached;
  a.result = result;
  node::CandidateRecord chosen, other, worse;
  chosen.node = served_by;
  chosen.priced = true;
  chosen.price.cost_ms = ttft_ms - 1;
  other.node = "z";
  other.priced = true;
  other.price.cost_ms = 50;
  worse.node = "y";
  worse.priced = true;
  worse.price.cost_ms = 90;
  a.candidates = {chosen, worse, other};
  r.attempts = {a};
  return r;
}

TEST(StatusBoardTest, WindowedRoutingAndDecisions) {
  ManualClock clock;
  Counting next;
  StatusBoard board(clock, "a", &next);
  board.SampleRouting(5, 7);
  board.OnClientFirstToken("a", 100, 50, 10);
  board.OnRoute(Routed(1, "a", 100, 50, 10));
  clock.Advance(30s);
  board.OnClientFirstToken("b", 100, 90, 30);
  board.OnRoute(Routed(2, "b", 100, 90, 30));
  board.OnClientFailed();
  node::RouteRecord failed = Routed(3, "", 100, 0, -1, "failed");
  failed.error = "no node could serve";
  board.OnRoute(failed);
  board.OnServedForPeer("c");
  board.OnServe(node::ServeRecord{});
  board.SampleRouting(6, 9);  // one bounce and two retries since the first sample
  EXPECT_EQ(next.routes, 3);  // passed on (the --records file)
  EXPECT_EQ(next.serves, 1);

  nlohmann::json r = board.RenderRouting();
  EXPECT_EQ(r["requests"], 3);
  EXPECT_EQ(r["served_local"], 1);
  EXPECT_EQ(r["forwarded"], 1);
  EXPECT_EQ(r["failed"], 1);
  EXPECT_EQ(r["bounces"], 1);
  EXPECT_EQ(r["retries"], 2);
  EXPECT_DOUBLE_EQ(r["hit_rate"].get<double>(), 140.0 / 200);
  EXPECT_EQ(r["ttft_p50_ms"], 10);
  EXPECT_EQ(r["ttft_p99_ms"], 30);
  EXPECT_EQ(r["served_by"]["b"], 1);
  EXPECT_EQ(r["served_for_peers"]["c"], 1);

  nlohmann::json d = board.RenderDecisions();
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0]["request"], 3);  // newest first
  EXPECT_TRUE(d[0]["served_by"].is_null());
  EXPECT_EQ(d[0]["error"], "no node could serve");
  EXPECT_EQ(d[1]["chosen"], "b");
  EXPECT_EQ(d[1]["runner_up"], "z");  // the cheapest other priced candidate
  EXPECT_EQ(d[1]["runner_up_expected_ttft_ms"], 50);
  EXPECT_EQ(d[1]["expected_ttft_ms"], 29);
  EXPECT_EQ(d[1]["actual_cached_tokens"], 90);

  // 31 s later the first request has left the window, the others not yet.
  clock.Advance(31s);
  r = board.RenderRouting();
  EXPECT_EQ(r["requests"], 2);
  EXPECT_EQ(r["served_local"], 0);
  clock.Advance(30s);
  board.SampleRouting(6, 9);
  r = board.RenderRouting();
  EXPECT_EQ(r["requests"], 0);
  EXPECT_EQ(r["bounces"], 0);
  EXPECT_TRUE(r["hit_rate"].is_null());
  EXPECT_TRUE(r["ttft_p50_ms"].is_null());
  EXPECT_TRUE(r["served_for_peers"].empty());
  EXPECT_EQ(board.RenderDecisions().size(), 3u);  // decisions are the last N, not windowed
}

TEST(StatusBoardTest, WatchedForTenSecondsAfterARead) {
  ManualClock clock;
  StatusBoard board(clock, "a");
  EXPECT_FALSE(board.Watched());
  board.MarkWatched();
  clock.Advance(9s);
  EXPECT_TRUE(board.Watched());
  clock.Advance(2s);
  EXPECT_FALSE(board.Watched());
}

TEST(StatusBoardTest, KeepsTheLastDecisionsAndGossipRates) {
  ManualClock clock;
  StatusBoard board(clock, "a");
  for (uint64_t i = 0; i < StatusBoard::kDecisions + 5; ++i) board.OnRoute(Routed(i, "a", 1, 0, 1));
  nlohmann::json d = board.RenderDecisions();
  ASSERT_EQ(d.size(), StatusBoard::kDecisions);
  EXPECT_EQ(d[0]["request"], StatusBoard::kDecisions + 4);

  EXPECT_TRUE(board.RenderGossip()["bytes_sent_per_s"].is_null());
  board.SampleGossip(1000, 500);
  clock.Advance(2s);
  board.SampleGossip(3000, 1500);
  board.CountSuspicion();
  nlohmann::json g = board.RenderGossip();
  EXPECT_DOUBLE_EQ(g["bytes_sent_per_s"].get<double>(), 1000);
  EXPECT_DOUBLE_EQ(g["bytes_received_per_s"].get<double>(), 500);
  EXPECT_EQ(g["suspicions"], 1);
  // The rate spans the window: samples older than it are dropped, one before it is kept.
  for (int i = 0; i < 70; ++i) {
    clock.Advance(1s);
    board.SampleGossip(3000 + 100 * (i + 1), 1500);
  }
  g = board.RenderGossip();
  EXPECT_NEAR(g["bytes_sent_per_s"].get<double>(), 100, 2);
  EXPECT_EQ(g["suspicions"], 0);
}

}  // namespace
}  // namespace hearsay::net
