// The gossip experiment's synthetic workload (gossip_experiment.h): a shared prompt distribution
// and each node's own prefix cache, which turns the prompts it serves into block events.
//
// Thread-safety: none; deterministic for a given seed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hearsay/env/rng.h"
#include "hearsay/prefix/block_event.h"

namespace hearsay::sim::gossip_experiment {

// The shared prompt distribution: system prompts, and conversations chained after one each.
class PromptModel {
 public:
  static constexpr int kSystems = 200;
  static constexpr int kConversations = 20000;

  explicit PromptModel(uint64_t seed);

  // The block-key chain of one request drawn from `rng`.
  std::vector<prefix::BlockKey> Draw(Rng& rng) const;

 private:
  ZipfSampler conv_zipf_;
  uint64_t seed_;
  std::vector<int> sys_len_;
};

// A node's own prefix cache: LRU over leaves, like the radix tree, emitting block events.
// Invariants: leaves_ holds exactly the blocks with no children, keyed by their last use.
class SyntheticCache {
 public:
  explicit SyntheticCache(size_t capacity) : capacity_(capacity) {}

  // Inserts (or touches) `chain`; appends the resulting events.
  void Insert(const std::vector<prefix::BlockKey>& chain, std::vector<prefix::BlockEvent>* events);

  // Leading blocks of `chain` held.
  uint32_t Matched(const std::vector<prefix::BlockKey>& chain) const;
  bool Contains(prefix::BlockKey k) const { return blocks_.contains(k); }

 private:
  struct Block {
    prefix::BlockKey parent;
    uint32_t index;
    uint32_t children;
    uint64_t last_use;
    bool has_parent;
  };
  void Touch(prefix::BlockKey k, Block& b, uint64_t now);

  size_t capacity_;
  uint64_t clock_ = 0;
  std::unordered_map<prefix::BlockKey, Block> blocks_;
  std::set<std::pair<uint64_t, prefix::BlockKey>> leaves_;
};

}  // namespace hearsay::sim::gossip_experiment
