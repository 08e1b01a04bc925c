// KvEventView: what a vLLM engine holds in its prefix cache according to its own KV-cache events
// (kv_events_decoder.h), in the node's block keys.
//
// Keying. vLLM names a block by its own hash, which hearsay cannot compute (it chains the
// engine's hash function, seed and extra keys). BlockStored carries the block's token ids and its
// parent's vLLM hash, so the view computes the node's key for each stored block by chaining from
// the parent's key: it keeps a map vLLM hash -> (node key, position). A block whose parent the
// view does not know (stored before the view started, or lost in a gap) cannot be keyed and is
// skipped (counted). Keys match what the router computes for a prompt only when the node's
// tokens are the engine's tokens (token-id keying with the engine's tokenizer, see
// docs/engines.md) and the block sizes agree; a BlockStored of another block size is skipped
// (counted), and so are blocks whose engine hash covers more than tokens (LoRA adapters, extra
// keys such as multimodal hashes or a cache salt), blocks of another medium than the GPU and
// blocks of a KV-cache group other than the first.
//
// Model. The view holds a set of vLLM blocks; a node key is held while some vLLM block maps to
// it (reference counted: two engine blocks can share one node key). BlockRemoved drops blocks,
// AllBlocksCleared drops all. The number of vLLM blocks is bounded (max_blocks): past it the
// oldest stored block is dropped, so a view that misses removals cannot grow without bound.
// Every change to the set of held node keys appends a BlockEvent (kAdded on first reference,
// kRemoved on last).
//
// Invariants:
//  - blocks_ and order_ hold the same vLLM hashes (order_ may hold stale entries, skipped);
//  - held_ counts, for each node key k, the blocks_ entries with key k (held_blocks.h).
//
// Thread-safety: none; the core thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <unordered_map>
#include <vector>

#include "hearsay/prefix/block_event.h"
#include "hearsay/prefix/block_keys.h"
#include "hearsay/upstream/held_blocks.h"
#include "hearsay/upstream/kv_events_decoder.h"

namespace hearsay::upstream {

struct KvEventViewOptions {
  // Most vLLM blocks tracked (a vLLM cache of N GPU blocks needs N).
  size_t max_blocks = size_t{1} << 20;
};

// Counters for /metrics.
struct KvEventViewStats {
  uint64_t batches = 0;
  uint64_t stored_blocks = 0;        // blocks keyed and added
  uint64_t removed_blocks = 0;       // blocks dropped by BlockRemoved
  uint64_t cleared = 0;              // AllBlocksCleared events
  uint64_t resets = 0;               // Reset() calls (stream gaps without replay)
  uint64_t unknown_parent = 0;       // blocks skipped: parent not in the view
  uint64_t block_size_mismatch = 0;  // BlockStored events skipped: another block size
  uint64_t unkeyable = 0;            // BlockStored events skipped: LoRA, extra keys, medium, group
  uint64_t unknown_removed = 0;      // BlockRemoved hashes the view did not hold
  uint64_t evicted_over_bound = 0;
  uint64_t unknown_events = 0;  // events of unknown type in decoded batches
};

class KvEventView {
 public:
  KvEventView(prefix::BlockKeyer keyer, KvEventViewOptions options);

  // Applies one decoded batch, in order. Appends to `removed_keys` every node key this batch
  // stopped holding (the caller makes other estimates of the same engine forget them), and to
  // `cleared` true when the batch held an AllBlocksCleared.
  void Apply(const KvEventBatch& batch, std::vector<prefix::BlockKey>* removed_keys, bool* cleared);

  // Forgets everything (the stream lost events that cannot be replayed): kRemoved for every held
  // key. Later blocks chain only from blocks stored after this.
  void Reset();

  // Leading tokens of the prompt with keys `keys` the engine holds (a multiple of the block size).
  size_t CachedPrefixTokens(std::span<const prefix::BlockKey> keys) const;
  bool Holds(prefix::BlockKey key) const { return held_.Holds(key); }

  void DrainEvents(std::vector<prefix::BlockEvent>& out);
  void AppendSnapshot(std::vector<prefix::BlockEvent>& out) const;

  size_t blocks() const { return blocks_.size(); }
  size_t held_keys() const { return held_.size(); }
  const KvEventViewStats& stats() const { return stats_; }

 private:
  struct Block {
    prefix::BlockKey key = 0;
    uint32_t index = 0;
  };

  void Store(const KvBlockStored& e);
  // Drops one vLLM block; true when it was held.
  bool Drop(const EngineBlockHash& hash, std::vector<prefix::BlockKey>* removed_keys);
  void ClearAll(std::vector<prefix::BlockKey>* removed_keys);

  prefix::BlockKeyer keyer_;
  KvEventViewOptions options_;
  std::unordered_map<EngineBlockHash, Block> blocks_;
  std::deque<EngineBlockHash> order_;  // insertion order, for the bound
  HeldBlocks held_;
  std::vector<prefix::TokenId> scratch_;
  KvEventViewStats stats_;
};

}  // namespace hearsay::upstream
