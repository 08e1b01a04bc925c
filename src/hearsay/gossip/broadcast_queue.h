// BroadcastQueue: membership updates waiting to be piggybacked on outgoing messages (SWIM
// dissemination, after memberlist's transmit-limited queue).
//
// Each update is sent a bounded number of times (the caller passes retransmit_mult * log10(n+1)),
// least-sent first, newest first among equals. A queue made with refutations_first (signed
// clusters) puts refutations ahead of the rest: an "alive" above a member's first incarnation.
// Signed updates are 2.5 times larger, a cluster-wide join's announcements then fill the
// piggyback for tens of seconds at N = 1,024, and a suspicion whose refutation waits behind them
// times out (docs/gossip-security.md, "Signed membership"). A
// newer update about a member replaces the queued one, so the queue holds at most one update per
// member id.
//
// A transmission is counted per recipient and burst, not per message: messages sent to the same
// recipient within kBurst of the counted one (the datagrams of one delta exchange, a repeated
// notice) all carry the update but count once. Counting each datagram would spend the whole quota
// on one or two peers (an exchange is often 8-12 datagrams), and under loss some members would
// hear of a suspicion only through their own probes, seconds late.
//
// Ownership: plain value owned by gossip::Node. Thread-safety: none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "hearsay/env/time.h"
#include "hearsay/gossip/wire.h"

namespace hearsay::gossip {

class BroadcastQueue {
 public:
  // Messages to one recipient this close together are one transmission (a burst).
  static constexpr Duration kBurst = std::chrono::milliseconds(10);

  explicit BroadcastQueue(bool refutations_first = false) : refutations_first_(refutations_first) {}

  // Queues `u`, replacing any queued update about u.id.
  void Push(MemberUpdate u);
  // Takes updates for one message to `to` at `now`: `prefer` (a member id, may be empty) first if
  // queued, then the least-sent, until their encoded size would exceed budget_bytes. Each taken
  // update counts one transmission, unless its last counted one went to `to` less than kBurst
  // before `now`, and leaves the queue after transmit_limit of them.
  std::vector<MemberUpdate> Take(size_t budget_bytes, int transmit_limit, const NodeId& prefer,
                                 const Address& to, TimePoint now);
  // The queued update about `id`, if any.
  const MemberUpdate* Find(const NodeId& id) const;
  size_t size() const { return items_.size(); }

 private:
  struct Item {
    MemberUpdate update;
    int transmits = 0;
    uint64_t seq = 0;
    Address last_to;  // recipient and time of the last counted transmission
    TimePoint last_at{};
  };
  // Order key: (not a refutation first, transmits, -seq) encoded with UINT64_MAX - seq, then id.
  using Key = std::tuple<bool, int, uint64_t, NodeId>;
  Key KeyOf(const Item& i) const {
    const bool refutation =
        refutations_first_ && i.update.state == MemberState::kAlive && i.update.incarnation > 0;
    return {!refutation, i.transmits, UINT64_MAX - i.seq, i.update.id};
  }

  // Invariants: order_ holds exactly KeyOf(item) for every item in items_.
  bool refutations_first_;
  std::map<NodeId, Item> items_;
  std::set<Key> order_;
  uint64_t next_seq_ = 1;
};

}  // namespace hearsay::gossip
