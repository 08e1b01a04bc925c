// Listener: the effects a gossip::Node reports to the node that owns it.
//
// The owner (node/) implements it to keep its peer index and load view current. Calls happen on
// the core thread, synchronously inside the gossip node's handlers; a listener must not call back
// into the gossip node. Every method has an empty default, so an owner overrides what it uses.
//
// Identity is (id, generation). A change of generation, or a member leaving the kAlive/kSuspect
// states, means the peer's cache state is gone: the owner drops what it knew about that peer.
#pragma once

#include <span>

#include "hearsay/common/ids.h"
#include "hearsay/gossip/service.h"
#include "hearsay/gossip/types.h"
#include "hearsay/gossip/usage.h"
#include "hearsay/prefix/block_event.h"

namespace hearsay::gossip {

class Listener {
 public:
  virtual ~Listener() = default;
  // A member appeared, changed state, or restarted with a new generation.
  virtual void OnMemberChanged(const NodeId& /*id*/, Generation /*generation*/,
                               MemberState /*state*/) {}
  // Incremental changes to a peer's advertised cache (landmark blocks only; see Config).
  virtual void OnPeerCacheEvents(const NodeId& /*id*/, Generation /*generation*/,
                                 std::span<const prefix::BlockEvent> /*events*/) {}
  // A peer's landmark stride became known or changed: its advertised keys are the blocks whose
  // index is a multiple of `stride`. Reported before the cache events or snapshot at that stride.
  virtual void OnPeerStride(const NodeId& /*id*/, Generation /*generation*/, uint32_t /*stride*/) {}
  // A peer's advertised cache was replaced by a snapshot: `live` is everything it now holds.
  virtual void OnPeerCacheSnapshot(const NodeId& /*id*/, Generation /*generation*/,
                                   std::span<const prefix::BlockEvent> /*live*/) {}
  // A newer load report of a peer arrived (piggybacked or by anti-entropy).
  virtual void OnPeerLoad(const NodeId& /*id*/, Generation /*generation*/,
                          const LoadReport& /*load*/) {}
  // A peer's service record (what it serves) arrived or changed. Reported after the cache
  // events of the same delta; a peer that restarts reports it again for its new generation.
  virtual void OnPeerService(const NodeId& /*id*/, Generation /*generation*/,
                             const Service& /*service*/) {}
  // A peer's usage record (its per-tenant offered traffic, usage.h) arrived or changed. Reported
  // after OnPeerService of the same delta.
  virtual void OnPeerUsage(const NodeId& /*id*/, Generation /*generation*/,
                           const UsageRecord& /*usage*/) {}
};

}  // namespace hearsay::gossip
