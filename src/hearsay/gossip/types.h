// Vocabulary of the gossip layer: member states, the load a node reports, and the overload flag
// with hysteresis.
//
// Thread-safety: plain values; OverloadTracker is owned by one gossip::Node on the core thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hearsay::gossip {

// A member's liveness as this node believes it. Overloaded is not a state: a busy node that
// answers probes stays kAlive.
enum class MemberState : uint8_t {
  kAlive = 0,
  kSuspect = 1,  // missed a probe; dies when the suspicion timeout expires unless it refutes
  kDead = 2,     // declared failed; its cache summary is dropped
  kLeft = 3,     // left gracefully; treated like kDead by routing
};

// "alive", "suspect", "dead" or "left".
std::string_view MemberStateName(MemberState state);

// Work this node sent one member and has not yet had answered, where the member's own load report
// leaves it out (node/shared_backlog.h says when a node lists a member). Peers sum what every
// entry node lists for a member as a floor on its queue that the member cannot lower.
struct BacklogEntry {
  std::string member;     // the member's NodeId
  uint32_t requests = 0;  // this node's requests there still waiting for a first token
  uint32_t work_ms = 0;   // their prefills' work not yet worked off, in ms
  friend bool operator==(const BacklogEntry&, const BacklogEntry&) = default;
};

// Limits of a load report's backlog list (enforced by the writer and by the wire decoder).
inline constexpr size_t kMaxBacklogEntries = 16;
inline constexpr uint32_t kMaxBacklogWorkMs = 3'600'000;  // an hour
inline constexpr uint32_t kMaxBacklogRequests = 1u << 16;

// What a node's engine reports about its own load. Only the owning node writes it.
struct LoadReport {
  uint32_t queue_depth = 0;         // requests waiting for a batch slot
  uint32_t running = 0;             // requests in the running batch
  uint64_t kv_used_tokens = 0;      // KV cache in use, in tokens
  uint64_t kv_capacity_tokens = 0;  // KV cache capacity, in tokens (0 = unknown)
  double prefill_ms_per_token = 0;  // measured prefill cost per uncached token
  bool overloaded = false;          // computed by the gossip node (hysteresis); ignored by SetLoad
  // Prompt tokens still to prefill (queued and running, net of cache hits): the backlog a count
  // of requests cannot show, since one queued prompt may be 30 tokens or 30,000.
  uint64_t waiting_prefill_tokens = 0;
  uint64_t running_context_tokens = 0;  // KV tokens the running batch holds (its decode cost)
  uint32_t queue_wait_us = 0;           // the engine's own estimate of a new request's queue wait
  // Measured time between two output tokens of one request, in microseconds (0: not measured):
  // what prices a peer's decode batch on its own hardware.
  uint32_t decode_us_per_token = 0;
  // Sorted by member, each once, at most kMaxBacklogEntries, none naming the node itself.
  std::vector<BacklogEntry> backlog = {};

  friend bool operator==(const LoadReport&, const LoadReport&) = default;
};

// High- and low-water marks of the overload flag. A node enters overload when its queue depth or
// its pinned KV (running_context_tokens over kv_capacity_tokens) reaches the high mark, and leaves
// only when both are at or below the low marks, so the flag does not flap around a single
// threshold. Pinned KV, not used KV: an LRU prefix cache runs full by design (evictable cached
// prefixes are what routing is after), so a full cache is not overload; KV that running requests
// hold, which no eviction can free, is.
struct OverloadThresholds {
  uint32_t enter_queue_depth = 64;
  uint32_t exit_queue_depth = 32;
  double enter_kv_fraction = 0.97;
  double exit_kv_fraction = 0.90;
};

// The overload flag with hysteresis.
// Invariants: overloaded() changes only when Update() sees a report across the opposite mark.
class OverloadTracker {
 public:
  explicit OverloadTracker(OverloadThresholds t) : t_(t) {}

  // Feeds one report; returns the flag after it.
  bool Update(const LoadReport& r) {
    const double kv = r.kv_capacity_tokens == 0 ? 0.0
                                                : static_cast<double>(r.running_context_tokens) /
                                                      static_cast<double>(r.kv_capacity_tokens);
    if (!overloaded_) {
      overloaded_ = r.queue_depth >= t_.enter_queue_depth || kv >= t_.enter_kv_fraction;
    } else {
      overloaded_ = !(r.queue_depth <= t_.exit_queue_depth && kv <= t_.exit_kv_fraction);
    }
    return overloaded_;
  }
  bool overloaded() const { return overloaded_; }

 private:
  OverloadThresholds t_;
  bool overloaded_ = false;
};

}  // namespace hearsay::gossip
