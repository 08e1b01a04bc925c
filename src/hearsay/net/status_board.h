// StatusBoard: the last minute of this node's routing, kept for GET /status (the JSON the web
// console and `hearsay status` read, docs/reference.md#get-status): requests it routed, where
// they were served, their hit rate and time to first token, bounces and retries, requests it
// served for peers, suspicions it saw, its gossip traffic per second, and its last routing
// decisions with their reasons.
//
// The windowed figures come from what the daemon already has at each request's first token and
// end (OnClientFirstToken, OnClientFailed, OnServedForPeer: a few stores per request) and from
// the node's counters sampled every refresh tick. The decisions come from the node's decision
// records (it is a node::DecisionRecorder), which cost the node a record per request: the daemon
// attaches the board as the node's recorder only while someone reads /status (see Watched), and
// the board passes every record on to `next` (the --records file) when there is one.
//
// Thread-safety: none; the daemon's core thread calls every method.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "hearsay/env/clock.h"
#include "hearsay/env/time.h"
#include "hearsay/node/decision_record.h"

namespace hearsay::net {

class StatusBoard final : public node::DecisionRecorder {
 public:
  // The window every windowed figure covers.
  static constexpr Duration kWindow = std::chrono::seconds(60);
  // How many routing decisions RenderDecisions lists.
  static constexpr size_t kDecisions = 20;

  StatusBoard(const Clock& clock, std::string self, node::DecisionRecorder* next = nullptr)
      : clock_(clock), self_(std::move(self)), next_(next) {}

  void OnRoute(const node::RouteRecord& record) override;
  void OnServe(const node::ServeRecord& record) override;

  // A client request's first token: the node whose engine served it, its prompt and cached
  // tokens (the serving engine's count), and its time to first token.
  void OnClientFirstToken(std::string_view served_by, uint32_t prompt_tokens,
                          uint32_t cached_tokens, double ttft_ms);
  // A client request that failed before its first token.
  void OnClientFailed();
  // A forward from the peer `entry` that this node's engine began to serve.
  void OnServedForPeer(std::string_view entry);
  // Samples the node's cumulative bounce and retry counters (every refresh tick).
  void SampleRouting(uint64_t forwards_bounced, uint64_t forward_failures);
  // Marks /status as read now; Watched() says whether it was within the last kWatchWindow.
  void MarkWatched() { watched_at_ = clock_.Now(); }
  bool Watched() const { return watched_at_ && clock_.Now() - *watched_at_ < kWatchWindow; }
  // How long after a read of /status the board asks for decision records.
  static constexpr Duration kWatchWindow = std::chrono::seconds(10);

  // A member turned suspect (the daemon sees the change).
  void CountSuspicion();
  // Samples this node's cumulative gossip byte counters (the daemon's refresh tick), for the
  // rate over the window.
  void SampleGossip(uint64_t bytes_sent, uint64_t bytes_received);

  // {"window_s", "requests", "served_local", "forwarded", "failed", "hit_rate", "ttft_p50_ms",
  //  "ttft_p99_ms", "bounces", "retries", "served_by": {node: n}, "served_for_peers": {entry: n}}
  // over the last kWindow (rates and percentiles null when there is nothing to compute from).
  nlohmann::json RenderRouting();
  // The last kDecisions routing decisions, newest first.
  nlohmann::json RenderDecisions() const;
  // {"bytes_sent_per_s", "bytes_received_per_s", "suspicions"} over the window.
  nlohmann::json RenderGossip();

 private:
  struct Routed {
    TimePoint at;
    std::string served_by;  // empty: failed
    uint32_t prompt_tokens = 0;
    uint32_t cached_tokens = 0;
    double ttft_ms = -1;
  };
  struct CounterSample {
    TimePoint at;
    uint64_t a = 0;
    uint64_t b = 0;
  };
  struct ServedForPeer {
    TimePoint at;
    std::string entry;
  };
  // One routing decision, kept as plain values (rendered only when /status is asked for).
  struct Decision {
    uint64_t request = 0;
    uint32_t prompt_tokens = 0;
    std::string served_by;  // empty: failed (`error` says why)
    uint32_t actual_cached_tokens = 0;
    double ttft_ms = -1;
    size_t attempts = 0;
    std::string chosen;
    std::string reason;
    uint32_t expected_cached_tokens = 0;
    double expected_ttft_ms = -1;
    std::string runner_up;
    double runner_up_expected_ttft_ms = -1;
    std::string error;
  };
  // The change of a sampled pair of counters over the window (per second with `per_second`);
  // null without two samples.
  static std::pair<nlohmann::json, nlohmann::json> Delta(const std::deque<CounterSample>& s,
                                                         bool per_second);
  static void PruneSamples(std::deque<CounterSample>& s, TimePoint cut);
  // Drops what is older than the window.
  void Prune(TimePoint now);

  const Clock& clock_;
  std::string self_;
  node::DecisionRecorder* next_;
  std::deque<Routed> routed_;
  std::deque<ServedForPeer> served_for_peers_;
  std::deque<TimePoint> suspicions_;
  std::deque<CounterSample> gossip_;   // bytes sent, received
  std::deque<CounterSample> routing_;  // forwards bounced, forward failures
  std::optional<TimePoint> watched_at_;
  std::deque<Decision> decisions_;  // newest at the front
};

}  // namespace hearsay::net
