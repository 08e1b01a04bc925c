// Decision records: one line per request that says what the router believed, what it chose and
// why, and what then happened, so that a real run and its simulation compare line by line.
//
// Two kinds, joined on (entry, request):
// - RouteRecord, written by the entry node when a client request ends: every routing attempt
//   (each candidate's view and the policy's price of it, the choice and its reason, and how the
//   attempt ended: served, bounced or failed), then the outcome the client saw (serving node,
//   cached tokens the engine reported, time to first token and to the end);
// - ServeRecord, written by the node whose engine served a request (or bounced it): the engine's
//   own queue wait and prefill time, and its cached tokens.
// Hosts attach a DecisionRecorder to the node (Node::SetRecorder): the daemon and `hearsay sim`
// write JSON lines (ToJson), one object per record.
//
// Thread-safety: plain values; a recorder is called on the node's core thread.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "hearsay/route/policy.h"

namespace hearsay::node {

// One candidate as the entry node saw it when it routed.
struct CandidateRecord {
  std::string node;
  bool is_self = false;
  bool usable = true;
  double one_way_delay_ms = 0;
  // The load view (route::LoadView).
  uint32_t queued = 0;
  uint32_t running = 0;
  uint64_t queued_prefill_tokens = 0;
  // The member's own queue-wait estimate, < 0 when it gave none.
  double reported_wait_ms = -1;
  double load_age_ms = 0;
  bool overloaded = false;
  // The cache view.
  uint32_t cached_tokens = 0;
  uint32_t cached_tokens_max = 0;
  bool cache_exact = false;
  double cost_scale = 1;
  // The policy's price of it; `priced` false for policies that price nothing.
  bool priced = false;
  route::Price price;
};

// One routing decision for a request.
struct RouteAttempt {
  // When the decision was made, in ms after the request arrived.
  double at_ms = 0;
  std::vector<CandidateRecord> candidates;
  std::string chosen;
  std::string reason;
  double expected_ttft_ms = -1;
  double fallback_ttft_ms = -1;
  uint32_t estimated_cached_tokens = 0;
  // "served", "bounced" (the peer sent it back unserved), "failed" (the forward failed before
  // the client saw anything) or "cancelled".
  std::string result;
};

struct RouteRecord {
  std::string entry;
  // The entry node's id for the request (the host's request id).
  uint64_t request = 0;
  std::string policy;
  // The entry node's clock when the request arrived, in ms since its epoch.
  double arrived_ms = 0;
  uint32_t prompt_tokens = 0;
  std::vector<RouteAttempt> attempts;
  // The outcome: empty served_by and a non-empty error when the request failed.
  std::string served_by;
  uint32_t cached_tokens = 0;
  double ttft_ms = -1;
  double e2e_ms = -1;
  std::string error;
};

struct ServeRecord {
  std::string node;
  // The entry node and its request id (this node for a client request served here).
  std::string entry;
  uint64_t request = 0;
  bool forwarded = false;
  uint32_t prompt_tokens = 0;
  // The engine's own account: prompt tokens found cached, the wait before its prefill began and
  // the prefill (upstreams that report no prefill time count it all as queue wait).
  uint32_t cached_tokens = 0;
  double queued_ms = -1;
  double prefill_ms = -1;
  // A forward the sender allowed to bounce: this node's own expected time on arrival and what the
  // sender asked; bounced if it was sent back unserved.
  bool bounced = false;
  double own_estimate_ms = -1;
  double bounce_above_ms = -1;
};

class DecisionRecorder {
 public:
  virtual ~DecisionRecorder() = default;
  virtual void OnRoute(const RouteRecord& record) = 0;
  virtual void OnServe(const ServeRecord& record) = 0;
};

// One JSON object per record, with "kind": "route" or "serve"; field names as above.
nlohmann::json ToJson(const RouteRecord& record);
nlohmann::json ToJson(const ServeRecord& record);

}  // namespace hearsay::node
