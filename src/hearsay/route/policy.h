// Policy: the one interface every routing policy implements.
//
// For every request an entry node builds a plain snapshot (a RouteRequest and one Candidate per
// member, self included) from its own radix tree, the peer index, gossiped load and measured
// delays, and asks its Policy where to send the request. route/ sits below gossip/ and engine/,
// so it never sees them: the node layer fills the snapshot. The policy answers with a Decision;
// the node then dispatches and reports back:
//
//   Decision d = policy.Choose(request, candidates, rng);
//   ... dispatch to d.slot (or elsewhere, after a failure) ...
//   policy.OnSent(actual_slot, request);          // every dispatch, self included
//   ... first token arrives, with the engine's cached-token count ...
//   policy.OnOutcome({...});                     // evidence for learning
//
// A request whose `forwarded` hop marker is set is always served by the entry node: a request is
// forwarded at most once. Every policy obeys this (and the "no usable candidate -> self" rule)
// through the non-virtual Choose(), which calls the policy's DoChoose() only when there is a real
// choice to make.
//
// Slots: the node gives each member (self included) a small dense index, stable while that
// member lives, so that policies can keep per-member state in flat arrays. When a slot is reused
// for another member, or a member restarts (new generation), the node calls OnMemberReset().
//
// Time: the core never reads a clock, so the node passes `now` (from its Clock) in the request.
//
// Ownership: the snapshot is borrowed for the duration of one call; a policy keeps no pointer
// into it. Thread-safety: none; a policy belongs to one node's core thread.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>

#include "hearsay/env/rng.h"
#include "hearsay/env/time.h"
#include "hearsay/prefix/block_event.h"

namespace hearsay::route {

// A member's index in the entry node's membership table (see the header comment).
using Slot = uint32_t;
inline constexpr Slot kNoSlot = std::numeric_limits<Slot>::max();

// Slots at or above this are routed but get no per-member state (leases, learning, sent ledger).
inline constexpr Slot kMaxTrackedSlots = 1 << 16;

// One request, as the policy sees it.
struct RouteRequest {
  uint64_t request_id = 0;
  // The entry node's clock reading when the request is routed.
  TimePoint now{};
  // Prompt length in tokens (or bytes, when no tokenizer is used).
  uint32_t prompt_tokens = 0;
  // The prompt's block key chain: key i covers blocks 0..i. Only full blocks have keys.
  std::span<const prefix::BlockKey> key_chain;
  // Tokens per block (the chain covers key_chain.size() * block_tokens tokens).
  uint32_t block_tokens = 16;
  // The entry node's own slot.
  Slot entry_slot = 0;
  // The hop marker: the request was already forwarded once, so it must be served here.
  bool forwarded = false;
};

// A member's load, as last reported (gossiped for peers, live for self). The fields mirror
// engine::EngineLoad, which the node copies in.
struct LoadView {
  // Requests waiting to be admitted, or for their first token (EngineLoad::waiting_requests).
  uint32_t queued = 0;
  // Requests admitted and not finished (EngineLoad::running_requests).
  uint32_t running = 0;
  // Prompt tokens still to prefill, net of cache hits (EngineLoad::waiting_prefill_tokens).
  uint64_t queued_prefill_tokens = 0;
  // Context tokens held by the running batch (0 if unknown; EngineLoad::kv_pinned_tokens is a
  // good stand-in).
  uint64_t running_context_tokens = 0;
  // KV cache use and capacity, in tokens (capacity 0 = unknown). `hearsay` reads the capacity
  // only to lease no prompt to a member whose cache cannot hold it.
  uint64_t kv_used_tokens = 0;
  uint64_t kv_capacity_tokens = 0;
  // The member's own estimate of how long a request submitted when it measured this waits
  // before its prefill starts (EngineLoad::estimated_queue_wait). When absent, policies estimate
  // it from the counts above with their cost model.
  std::optional<Duration> queue_wait;
  // The member's overload flag (with hysteresis, set by the member itself).
  bool overloaded = false;
  // How old the report is: time since the member measured it (0 for self and for the oracle's
  // exact view). Requests this node sent within the last age + one-way delay are not in it yet.
  Duration age{0};
};

// One member the request could go to.
struct Candidate {
  Slot slot = 0;
  // The member's name, for logs and reasons; may be empty. Borrowed for the call.
  std::string_view node_id;
  bool is_self = false;
  // Alive and reachable. Suspect and dead members are not usable; overloaded ones still are.
  bool usable = true;
  // Measured one-way network delay from the entry node (0 for self).
  Duration one_way_delay{0};
  // Estimated prompt tokens the member already holds: exact from the own radix tree for self,
  // from the peer index for peers (matched blocks × block_tokens, capped at the prompt).
  uint32_t cached_tokens = 0;
  // The most the view allows the member to hold, when that is more than cached_tokens: a gossiped
  // view knows only every s-th block, s being that peer's own landmark stride (it grows with the
  // cluster; the node fills this field at each peer's s), so a peer that holds landmark m but not
  // m + 1 may hold anything up to the block before landmark m + 1. 0 (or <= cached_tokens) =
  // exactly cached_tokens.
  uint32_t cached_tokens_max = 0;
  // True when cached_tokens is exact (self, or every member for the oracle).
  bool cache_exact = false;
  // Age of the cache view behind cached_tokens (0 when exact).
  Duration cache_age{0};
  // The member's prefill cost relative to the policy's PrefillCostModel (1 = same hardware;
  // 2 = twice as slow). The node derives it from the gossiped measured prefill cost per token
  // (EngineLoad::prefill_ms_per_token) over the cost model's own, or leaves 1 when unknown.
  double cost_scale = 1.0;
  // The same for its decode batch (from its gossiped decode time per token, which depends on its
  // own hardware more than its prefill does on a memory-bound engine); <= 0: cost_scale.
  double decode_cost_scale = 0;
  LoadView load;
  // How far the entry node believes this member's claims (node/peer_trust.h), each in (0, 1], 1 =
  // believed: cache_trust scales the cached tokens it is credited with, and its expected prefill
  // is divided by time_trust (its answers took that much longer than its claims promised); how
  // time_trust applies to its claimed queue wait is in hearsay_policy.h. Only `hearsay` reads
  // them; the other policies take claims at face value.
  double cache_trust = 1.0;
  double time_trust = 1.0;
  // The queue wait the entry node's own record shows at this member, whatever it claims, in ms
  // (PeerTrustView::hidden_wait_ms): a floor on the wait of a member whose claims are discounted
  // (hearsay_policy.h). Only `hearsay` reads it.
  double hidden_wait_ms = 0;
  // The work the entry nodes report sent to this member and not yet answered where its own load
  // reports leave it out, in ms (node/shared_backlog.h): a floor on its queue wait that the
  // member cannot lower. Only `hearsay` reads it.
  double shared_wait_ms = 0;
  // Members with the same nonzero host_group run their engines on the same processors
  // (gossip::Service::host_group, which the node hashes); 0: processors of its own.
  uint64_t host_group = 0;
};

// Whether a policy may send to `c`: self always, peers when usable.
inline bool IsUsable(const Candidate& c) { return c.usable || c.is_self; }

// Why a policy chose what it chose (for logs, metrics and tests).
enum class Reason : uint8_t {
  kHopForced,      // the request was already forwarded: served here
  kNoCandidate,    // no usable candidate: served here
  kLocalPolicy,    // the policy always serves locally
  kLoadBalance,    // chosen for load alone
  kLongestMatch,   // the longest (estimated) prefix match
  kNoMatch,        // no member holds any of the prefix: served here
  kAllOverloaded,  // every usable member advertises overload
  kLowestCost,     // the lowest expected time to first token
  kNearTie,        // drawn at random among near-equal expected times
};

// The reason's name, for example "lowest-cost".
std::string_view ReasonName(Reason reason);

struct Decision {
  Slot slot = kNoSlot;
  // The policy's expected time to first token at the chosen member, in ms; < 0 if it has none.
  double expected_ttft_ms = -1;
  // The policy's price of its best other choice, in ms (its expected time to first token, plus
  // any work it would add that the policy prices); < 0 if none. A node may tell a peer it
  // forwards to: "bounce it back if you would take longer than this".
  double fallback_ttft_ms = -1;
  // The expected time to first token at the chosen member had its claims been believed (no
  // trust discount, Candidate::cache_trust and time_trust), in ms; < 0 if the policy has none.
  // The node compares the answer's time with it (node/peer_trust.h).
  double claimed_ttft_ms = -1;
  // Of claimed_ttft_ms, the prefill of what the member's claims leave uncached (< 0: none).
  double claimed_prefill_ms = -1;
  // The policy's raw estimate of the tokens the chosen member holds (before any discount).
  // Pass it back in Outcome so the policy can learn how good its estimates are.
  uint32_t estimated_cached_tokens = 0;
  Reason reason = Reason::kLocalPolicy;
};

// One candidate's price in the policy's last decision, for decision records
// (node/decision_record.h): the parts of its expected time to first token, in ms.
struct Price {
  Slot slot = kNoSlot;
  double delay_ms = 0;
  double wait_ms = 0;
  // The cached tokens the price assumes, after the policy's discounts.
  double credit_tokens = 0;
  double prefill_ms = 0;
  // A policy's own terms (`hearsay`: the price of the extra work under load, and of holding up
  // the requests running there).
  double work_ms = 0;
  double interference_ms = 0;
  // What the policy minimizes: delay + wait + prefill + work + interference.
  double cost_ms = 0;
};

// What happened to a dispatched request, once its first token arrived.
struct Outcome {
  Slot slot = 0;
  uint64_t request_id = 0;
  TimePoint now{};
  uint32_t prompt_tokens = 0;
  // Decision::estimated_cached_tokens of the decision that sent it there.
  uint32_t estimated_cached_tokens = 0;
  // The engine's own count of prompt tokens it found cached.
  uint32_t actual_cached_tokens = 0;
  // Observed time to first token, as the entry node saw it.
  Duration ttft{0};
};

class Policy {
 public:
  virtual ~Policy() = default;

  // The registry name of this policy (for example "hearsay").
  virtual std::string_view name() const = 0;

  // Picks the member to serve `request`. Serves locally when the request was already forwarded
  // or no candidate is usable; otherwise the policy decides. `candidates` should hold one entry
  // per member, self included; if self is missing, the entry slot is used.
  Decision Choose(const RouteRequest& request, std::span<const Candidate> candidates, Rng& rng);

  // Records that `request` was dispatched to `slot` (called for every dispatch, self included),
  // so the policy's load view counts what this node sent since the last load report.
  virtual void OnSent(Slot slot, const RouteRequest& request) {
    (void)slot;
    (void)request;
  }

  // Feeds back what the serving engine reported. Policies that do not learn ignore it.
  virtual void OnOutcome(const Outcome& outcome) { (void)outcome; }

  // Records that request `request_id`, dispatched to `slot`, finished (its last token, or an
  // error, reached the router). Only the simulator's central routers call it: the peers' routers
  // (dynamo-kv, sgl-cache-aware) count the requests they have in flight.
  virtual void OnFinished(Slot slot, uint64_t request_id) {
    (void)slot;
    (void)request_id;
  }

  // Records that the dispatch of request `request_id` to `slot` ended before the member served
  // it: the member refused or failed it before its first token, so it does no work for it (a
  // prompt that can never fit a member's cache is refused at once). The node calls it for each
  // such forward, not for a bounce (the member's queue was long). Policies that count what they
  // sent forget that send. Default: ignored.
  virtual void OnAbandoned(Slot slot, uint64_t request_id) {
    (void)slot;
    (void)request_id;
  }

  // Another replica of the same router dispatched `request` to `slot`, estimating that `slot`
  // holds `cached_tokens` of it (Dynamo's replica sync shares these decisions). Default: ignored.
  virtual void OnPeerDecision(Slot slot, const RouteRequest& request, uint32_t cached_tokens) {
    (void)slot;
    (void)request;
    (void)cached_tokens;
  }

  // Forgets everything learned about `slot` (the member restarted, or the slot was reused).
  virtual void OnMemberReset(Slot slot) { (void)slot; }

  // The prices of the last DoChoose() call, one per candidate it priced (in candidate order),
  // valid until the next call; empty for policies that price nothing and after a forced choice.
  virtual std::span<const Price> LastPrices() const { return {}; }

 protected:
  // Called by Choose() only when the request was not forwarded and at least one candidate is
  // usable. `self` is the index of the self candidate in `candidates`, or -1 if absent.
  virtual Decision DoChoose(const RouteRequest& request, std::span<const Candidate> candidates,
                            int self, Rng& rng) = 0;
};

// A decision to serve at the entry node.
Decision ServeLocally(const RouteRequest& request, Reason reason);

}  // namespace hearsay::route
