// Shared backlog: the work entry nodes have sent each member and not yet had answered, published
// by each in its own signed load report and summed by every peer as a floor on the member's queue.
//
// A member that lies about its load hides its queue, but the entry nodes together built that
// queue: each knows its own requests there still waiting for a first token. So each node lists,
// in its load report (gossip::LoadReport::backlog), the members whose own reports leave its
// requests out: those where more of its requests were sent well before the member's latest
// report (`report_margin`, for the report's trip through gossip) than the report counts running
// and queued. An honest member counts every sender's requests, so honest clusters list nothing.
// A peer pricing member M floors M's queue wait at the sum, over the reporters, of the work each
// lists at M, less the time since its report arrived, each reporter's share weighted by how far
// this node believes that reporter's own claims (a member lying about itself counts for little),
// and judges the member's answers against that floor too (route/hearsay_policy.h).
//
// A list is signed by its reporter, but what it says about others is only its word: a member
// honest about itself could list work it never sent at honest members, which would then look
// busy and draw nothing (slander). So at a member this node has no reason of its own to doubt,
// the largest `trimmed_listers` peers' shares count only up to the next largest: that many
// listers alone move nothing, and a queue counts once others corroborate it. Where this node has
// its own reason (its own list names the member, or the member's answers to it fell short of
// its claims: PeerTrust), every share counts. The node's own list always counts in full: it is
// what the node itself sent.
//
// Thread-safety: none; owned by one node's core.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <unordered_map>
#include <vector>

#include "hearsay/common/ids.h"
#include "hearsay/env/time.h"
#include "hearsay/gossip/types.h"

namespace hearsay::node {

struct SharedBacklogOptions {
  // Publish this node's list, and floor peers' waits by the sum.
  bool enabled = true;
  // A request counts as left out of a member's report if it was sent this long before the report
  // arrived here: about a gossip round, the age a report has when it arrives. (A request listed
  // too early floors an honest member's wait at this node's own work there, which is real.) The
  // adversarial trace (8 nodes with 1 and 3 liars, 32 with 1 and 3; seeds 1-3): mean TTFT 1.14,
  // 1.50, 1.14, 1.41× its honest value at 250 ms, 1.17, 1.61, 1.15, 1.50× at 500 ms; at 0 the
  // honest 8-node run is 2% slower (docs/adversarial.md).
  Duration report_margin = FromMillis(250);
  // Entries listed, the most work first (at most gossip::kMaxBacklogEntries).
  size_t max_entries = gossip::kMaxBacklogEntries;
  // At a member this node has no reason of its own to doubt, the largest this many peers' shares
  // count only up to the next largest, in [0, SharedBacklog::kMaxTrimmed]. 1: one slanderer
  // alone moves nothing (the adversarial experiment: 1.00-1.04x the honest mean TTFT, 1.08-2.21x
  // with 0). 0: every list counts in full (an ablation). On the adversarial trace with liars,
  // seeds 1-6: 1.16, 1.35, 1.14, 1.38x at 1, 1.12, 1.42, 1.13, 1.41x at 0 (docs/adversarial.md).
  size_t trimmed_listers = 1;
};

// What this node knows of one member when it writes its list.
struct BacklogSource {
  NodeId member;
  // This node's requests there waiting for a first token, and how many of them were sent at
  // least report_margin before the member's latest report arrived.
  size_t requests = 0;
  size_t sent_before_report = 0;
  double work_ms = 0;
  // What the member's latest report counts (running plus queued requests).
  size_t reported_requests = 0;
};

// The list this node publishes: the sources whose reports leave its requests out, the most work
// first, at most options.max_entries, sorted by member (gossip::LoadReport::backlog's order).
std::vector<gossip::BacklogEntry> ListBacklog(std::span<const BacklogSource> sources,
                                              const SharedBacklogOptions& options);

// The sum over reporters, rebuilt before each routing decision.
class SharedBacklog {
 public:
  static constexpr size_t kMaxTrimmed = 4;

  // At a member not doubted and not in this node's own list, the largest `count` peers' shares
  // count only up to the next largest (`count` clamped to kMaxTrimmed).
  void set_trimmed(size_t count) { trimmed_ = std::min(count, kMaxTrimmed); }
  void Clear() { work_.clear(); }
  // This node has its own reason to doubt `member`'s claims (its answers fell short of them):
  // every share at it counts.
  void Doubt(const NodeId& member) { work_[member].doubted = true; }
  // This node's own list, `age` old: counted in full.
  void AddOwn(const NodeId& self, std::span<const gossip::BacklogEntry> list, Duration age);
  // A peer's list, its report `age` old here, counted at `weight` (clamped to [0, 1]); an entry
  // naming the reporter itself is skipped.
  void Add(const NodeId& reporter, std::span<const gossip::BacklogEntry> list, Duration age,
           double weight);
  // The work listed at `member`, in ms (0 if none): this node's own share and the peers' shares,
  // the largest trimmed ones capped as set_trimmed() says.
  double WorkMs(const NodeId& member) const { return work_.empty() ? 0 : Find(member); }
  bool empty() const { return work_.empty(); }

 private:
  struct Shares {
    double own = 0;
    double peers = 0;
    bool doubted = false;
    // The largest peers' shares, largest first: the first trimmed_ count up to the next one
    // unless the member is doubted or this node lists it too.
    std::array<double, kMaxTrimmed + 1> top{};
  };
  void AddShare(Shares& s, double ms) const;
  double Find(const NodeId& member) const;

  size_t trimmed_ = 1;
  std::unordered_map<NodeId, Shares> work_;
};

}  // namespace hearsay::node
