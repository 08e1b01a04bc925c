// PeerIndex: what this node believes each peer's engine holds in its prefix cache, learned from
// gossip, and the one query routing needs: how deep does a prompt's key chain match each peer.
//
// Peers are named by NodeId. Each known peer also gets a dense PeerSlot in [0, slot_limit()),
// stable until RemovePeer(), so a policy can keep per-peer arrays and read Match() results by
// slot. A slot freed by RemovePeer() may be given to a later peer.
//
// Generations: every update carries the sender's generation. A higher generation than known
// means the peer restarted with an empty cache: everything believed about the old generation
// vanishes at once (O(1)), then the update applies. A lower generation is stale: it is rejected
// with FAILED_PRECONDITION and changes nothing. Equal generations apply normally.
//
// Match semantics (conservative run): for a chain k_0..k_{n-1}, peer p matches
//     m_p = max { m : p is believed to hold every one of k_0..k_{m-1} },
// the longest run of held keys from the start. With chained keys and an exact, fresh view this
// equals the deepest held key + 1, since holding k_i implies holding k_0..k_i. A gossiped view
// can be stale or lossy, though, and then only the run is safe: an engine reuses KV only for a
// contiguous prefix, so a gap at k_j means the engine would recompute from block j whatever it
// holds deeper. The run is also what keeps a lossy summary harmless later: under a filter with
// false-positive rate e, a false hit extends a true run by j blocks with probability e^j, where
// "deepest held key" would turn one false hit anywhere in the chain into a deep phantom match.
// A policy should read m_p * block_tokens as the tokens p is expected to have cached (an upper
// bound under staleness, to be discounted by its age), and the run lets Match stop as soon as no
// peer is still matching.
//
// Strides: a peer may advertise only every s-th block of its chains (gossip landmarks: the
// blocks whose index is a multiple of s), and peers may use different strides (each chooses its
// own from the cluster size it sees). SetStride records s per peer (default 1: every block), and
// MatchStrided matches each peer on the sub-chain k_0, k_s, k_2s, ... of its own stride: m
// landmarks held mean blocks 0..(m-1)s are held, so the estimate is (m-1)s + 1 blocks, at most
// s - 1 below the truth for a fresh view. Matching a peer at another stride than it advertises
// would stop at the first landmark it does not publish, so each stride in use costs one pass.
//
// Extensibility: every peer's belief is an exact key set today, stored as a column of one shared
// inverted index (see peer_index_table.h). A compact belief (a per-peer Bloom-like filter or
// truncated keys, fed by lossy snapshots) can be added as a second kind of peer that Match tests
// per step while the peer is still in the alive set; the API below does not change.
// BlockEvent::block_index is accepted and ignored by the exact index.
//
// Costs: ApplyEvents O(events), pipelined with prefetching; ApplySnapshot O(keys); generation
// bump and RemovePeer O(1) plus amortized cleanup (a bounded sweep after each mutation); Match
// O(depth matched), with no allocation; Keys() O(table size), for debugging and snapshots.
//
// Bad input never aborts: unknown peers, stale generations, invalid event kinds, duplicate adds,
// removals of keys not held, empty or huge chains and too-small output buffers all return a
// Status (or are documented no-ops), and a rejected call changes nothing.
//
// Thread-safety: none; the index belongs to its node's core thread. Const methods may run
// concurrently with each other (Match keeps its scratch on the stack).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "hearsay/common/ids.h"
#include "hearsay/common/status.h"
#include "hearsay/prefix/block_event.h"
#include "hearsay/prefix/peer_index_table.h"

namespace hearsay::prefix {

// A peer's dense handle inside one PeerIndex.
using PeerSlot = uint32_t;
inline constexpr PeerSlot kNoPeerSlot = UINT32_MAX;

struct PeerIndexOptions {
  // Peers known at once, clamped to [1, PeerIndex::kMaxPeersLimit]. Sizes the per-key bitsets
  // of popular keys (max_peers / 32 bytes each), so keep it near the cluster size.
  size_t max_peers = 1024;
  // An update that could leave a peer holding more blocks is rejected (RESOURCE_EXHAUSTED), so
  // a misbehaving peer cannot exhaust memory. Counted conservatively: current + adds in batch.
  uint64_t max_blocks_per_peer = uint64_t{1} << 24;
  // Salts the key hash (draw it from the node's Rng).
  uint64_t hash_seed = 0;
};

class PeerIndex {
 public:
  static constexpr size_t kMaxPeersLimit = HolderTable::kMaxColumns / 2;

  explicit PeerIndex(PeerIndexOptions options = {});

  PeerIndex(const PeerIndex&) = delete;
  PeerIndex& operator=(const PeerIndex&) = delete;

  // ---- Peers ----

  // Records that `peer` is alive at `generation`: registers an unknown peer (holding nothing),
  // clears a known one whose generation is older, and does nothing for an equal one. Returns
  // the slot; FAILED_PRECONDITION if `generation` is older than known, RESOURCE_EXHAUSTED if
  // max_peers are already known.
  Result<PeerSlot> ObservePeer(const NodeId& peer, Generation generation);
  // Forgets `peer` and everything it held, in O(1); NOT_FOUND if unknown. Frees its slot.
  Status RemovePeer(const NodeId& peer);

  // ---- Updates (from gossip) ----

  // Applies add/remove events from `peer` at `generation`, in order. Duplicate adds and removals
  // of keys not held are no-ops. Errors (nothing changes): NOT_FOUND for an unknown peer,
  // FAILED_PRECONDITION for a stale generation, INVALID_ARGUMENT for an unknown event kind,
  // RESOURCE_EXHAUSTED past max_blocks_per_peer.
  Status ApplyEvents(const NodeId& peer, Generation generation, std::span<const BlockEvent> events);
  // Replaces everything `peer` holds with `keys` (duplicates allowed). Errors as ApplyEvents.
  Status ApplySnapshot(const NodeId& peer, Generation generation, std::span<const BlockKey> keys);
  // Records that `peer`'s keys are the blocks whose index is a multiple of `stride` (see the
  // top of this file). Errors: NOT_FOUND, FAILED_PRECONDITION as ApplyEvents; INVALID_ARGUMENT
  // for a stride of 0. The keys held are unchanged (a new stride comes with a snapshot, or with
  // the events of a run that changes them).
  Status SetStride(const NodeId& peer, Generation generation, uint32_t stride);

  // ---- Queries ----

  // Writes m_p (see the top of this file) for every slot into out[0, slot_limit()): 0 for free
  // slots and non-matching peers. INVALID_ARGUMENT if out.size() < slot_limit(). An empty
  // chain matches 0 everywhere. Never allocates.
  Status Match(std::span<const BlockKey> chain, std::span<uint32_t> out) const;

  // Writes, for every slot, the blocks of `chain` (every block's key, not only landmarks) that
  // peer is believed to hold, matching it at its own stride: (m - 1) * stride + 1 for m
  // landmarks matched as a run, 0 for none, free slots and unknown peers. INVALID_ARGUMENT if
  // out.size() < slot_limit(). Never allocates; one pass over the chain per stride in use.
  Status MatchStrided(std::span<const BlockKey> chain, std::span<uint32_t> out) const;
  // The stride of the peer in `slot` (1 unless set); 0 for a free or out-of-range slot.
  uint32_t StrideOf(PeerSlot slot) const;

  // The slot of `peer`, or nullopt if unknown.
  std::optional<PeerSlot> FindSlot(const NodeId& peer) const;
  // The peer in `slot`, or nullptr if the slot is free or out of range.
  const NodeId* PeerAt(PeerSlot slot) const;
  // The generation known for `peer`; NOT_FOUND if unknown.
  Result<Generation> GenerationOf(const NodeId& peer) const;
  // How many distinct blocks `peer` is believed to hold; NOT_FOUND if unknown.
  Result<uint64_t> BlocksHeld(const NodeId& peer) const;
  // Same, by slot: 0 for a free or out-of-range slot.
  uint64_t BlocksHeld(PeerSlot slot) const;
  // Whether the peer in `slot` is believed to hold `key` (false for a free slot).
  bool Holds(PeerSlot slot, BlockKey key) const;
  // Every key `peer` is believed to hold, ascending; NOT_FOUND if unknown. O(table size).
  Result<std::vector<BlockKey>> Keys(const NodeId& peer) const;

  // Known peers.
  size_t num_peers() const { return by_id_.size(); }
  // One past the highest slot in use: the size Match() needs for `out`.
  PeerSlot slot_limit() const { return slot_limit_; }
  const PeerIndexOptions& options() const { return options_; }
  // Bytes held by the key table (buckets and bitsets).
  size_t MemoryBytes() const { return table_.MemoryBytes(); }
  // Distinct keys in the table, including not-yet-swept garbage of cleared peers.
  size_t table_size() const { return table_.size(); }

 private:
  // Invariants: in_use iff `id` maps to this slot in by_id_; an in-use peer's `column` is live
  // in table_ and column_slot_[column] is this slot; `held` counts the keys of that column.
  struct PeerState {
    NodeId id;
    Generation generation = 0;
    Column column = 0;
    uint64_t held = 0;
    uint32_t stride = 1;
    bool in_use = false;
  };

  // Checks a match's arguments and zeroes `out`'s slots.
  Status StartMatch(size_t chain_size, std::span<uint32_t> out) const;
  // The match of Match(), over the n keys key_at(0..n-1), reporting each column that stops
  // matching (or reaches the end) with emit(slot, depth). Slots never emitted matched 0.
  template <typename KeyAt, typename Emit>
  void MatchRun(size_t n, KeyAt key_at, Emit emit) const;

  // The in-use slot of `peer`, or an error for unknown peers and stale generations.
  Result<PeerSlot> SlotForUpdate(const NodeId& peer, Generation generation) const;
  // Gives the peer in `slot` a fresh, empty column at `generation`.
  void Restart(PeerSlot slot, Generation generation);
  Column NewColumn(PeerSlot slot);
  // Runs a sweep step proportional to `work` and shrinks the table if it emptied.
  void Maintain(size_t work);

  PeerIndexOptions options_;
  HolderTable table_;
  std::vector<PeerState> peers_;       // by slot; size() == slot_limit_
  std::vector<PeerSlot> column_slot_;  // by column; kNoPeerSlot unless live
  std::unordered_map<NodeId, PeerSlot> by_id_;
  PeerSlot slot_limit_ = 0;
};

}  // namespace hearsay::prefix
