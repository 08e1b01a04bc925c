// HeldBlocks: a reference-counted set of block keys that records every change of the set as a
// BlockEvent. It is what an estimate of an engine's prefix cache holds: CacheTracker (predictions
// and evidence) and KvEventView (the engine's own KV events) keep one each, and gossip reads it
// through DrainEvents and AppendSnapshot.
//
// A key is held while it has references. Its first reference gives its block index (position in
// its chain) and the key before it in that chain (its parent; index > 0 only), and appends kAdded;
// its last release appends kRemoved with the same index. Equal keys mean equal prefixes, so every
// reference to a key agrees on both.
//
// Invariants: blocks_ holds no zero count; events_ is every change since the last DrainEvents, in
// order.
//
// Thread-safety: none; the owner's thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "hearsay/prefix/block_event.h"

namespace hearsay::upstream {

class HeldBlocks {
 public:
  struct Block {
    uint32_t count = 0;           // references
    uint32_t index = 0;           // position in its chain
    prefix::BlockKey parent = 0;  // the key before it in its chain (index > 0 only)
  };

  // Adds a reference to `key`, block `index` of a chain whose previous key is `parent`. True when
  // the key was not held before (then kAdded is recorded).
  bool Add(prefix::BlockKey key, uint32_t index, prefix::BlockKey parent = 0);
  // Drops a reference to `key`. The block when that was its last (then kRemoved is recorded);
  // nullopt otherwise, or when the key is not held.
  std::optional<Block> Release(prefix::BlockKey key);
  // Drops every key, children before parents (by descending index, then key), recording kRemoved
  // for each and appending each key to `removed` when given.
  void ReleaseAll(std::vector<prefix::BlockKey>* removed);

  // The held block `key`, or null.
  const Block* Find(prefix::BlockKey key) const;
  bool Holds(prefix::BlockKey key) const { return blocks_.contains(key); }
  size_t size() const { return blocks_.size(); }
  bool empty() const { return blocks_.empty(); }
  // How many leading keys of `keys` are held.
  size_t PrefixBlocks(std::span<const prefix::BlockKey> keys) const;

  // Moves the recorded events to the end of `out`.
  void DrainEvents(std::vector<prefix::BlockEvent>& out);
  // Appends kAdded for every held key, parents before children (by index, then key).
  void AppendSnapshot(std::vector<prefix::BlockEvent>& out) const;

 private:
  std::unordered_map<prefix::BlockKey, Block> blocks_;
  std::vector<prefix::BlockEvent> events_;
};

}  // namespace hearsay::upstream
