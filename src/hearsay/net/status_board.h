// StatusBoard: the last minute of this node's routing, kept for GET /status (the JSON the web
// console and `hearsay status` read, docs/reference.md#get-status): requests it routed, where
// they were served, their hit rate and time to first token, bounces and retries, the last
// routing decisions with their reasons, requests it served for peers, suspicions it saw, and its
// gossip traffic per second.
//
// It is a node::DecisionRecorder: the node hands it a record when a request it routed ends
// (OnRoute) and when its engine served or bounced one (OnServe); it passes each record on to
// `next` (the --records file) when there is one. Rendering (Render*) reads only what it keeps,
// so a console polling /status costs the request path nothing but this bookkeeping.
//
// Thread-safety: none; the daemon's core thread calls every method.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

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
    uint32_t bounces = 0;
    uint32_t retries = 0;
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
  struct GossipSample {
    TimePoint at;
    uint64_t sent = 0;
    uint64_t received = 0;
  };
  // Drops what is older than the window.
  void Prune(TimePoint now);

  const Clock& clock_;
  std::string self_;
  node::DecisionRecorder* next_;
  std::deque<Routed> routed_;
  std::deque<ServedForPeer> served_for_peers_;
  std::deque<TimePoint> suspicions_;
  std::deque<GossipSample> gossip_;
  std::deque<Decision> decisions_;  // newest at the front
};

}  // namespace hearsay::net
