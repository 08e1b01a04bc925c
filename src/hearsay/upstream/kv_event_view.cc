// KvEventView: see kv_event_view.h.
#include "hearsay/upstream/kv_event_view.h"

#include <algorithm>
#include <unordered_set>
#include <utility>
#include <variant>

namespace hearsay::upstream {

using prefix::BlockEvent;
using prefix::BlockKey;

KvEventView::KvEventView(prefix::BlockKeyer keyer, KvEventViewOptions options)
    : keyer_(std::move(keyer)), options_(options) {}

void KvEventView::Apply(const KvEventBatch& batch, std::vector<BlockKey>* removed_keys,
                        bool* cleared) {
  ++stats_.batches;
  stats_.unknown_events += batch.unknown_events;
  for (const KvEvent& event : batch.events) {
    if (const auto* stored = std::get_if<KvBlockStored>(&event)) {
      Store(*stored);
    } else if (const auto* removed = std::get_if<KvBlockRemoved>(&event)) {
      for (const EngineBlockHash& h : removed->block_hashes) {
        if (Drop(h, removed_keys)) {
          ++stats_.removed_blocks;
        } else {
          ++stats_.unknown_removed;
        }
      }
    } else {
      ++stats_.cleared;
      ClearAll(removed_keys);
      if (cleared != nullptr) *cleared = true;
    }
  }
}

void KvEventView::Store(const KvBlockStored& e) {
  const size_t b = keyer_.tokens_per_block();
  if (e.block_size != b) {
    ++stats_.block_size_mismatch;
    return;
  }
  const bool other_medium = !e.medium.empty() && e.medium != "GPU";
  const bool other_group = e.group_idx.has_value() && *e.group_idx != 0;
  if (e.lora_id.has_value() || !e.lora_name.empty() || e.has_extra_keys || other_medium ||
      other_group) {
    ++stats_.unkeyable;
    return;
  }
  BlockKey prev = 0;
  uint32_t first_index = 0;
  if (e.parent_block_hash.has_value()) {
    auto parent = blocks_.find(*e.parent_block_hash);
    if (parent == blocks_.end()) {
      stats_.unknown_parent += e.block_hashes.size();
      return;
    }
    prev = parent->second.key;
    first_index = parent->second.index + 1;
  }
  // AppendKeysFrom reads blocks first_block.. of a whole prompt: put one placeholder block in
  // front so block 1 chains from `prev` (block 0's placeholder tokens are never read).
  scratch_.assign(b, 0);
  scratch_.insert(scratch_.end(), e.token_ids.begin(), e.token_ids.end());
  std::vector<BlockKey> keys;
  if (e.parent_block_hash.has_value()) {
    keyer_.AppendKeysFrom(scratch_, 1, prev, &keys);
  } else {
    keyer_.AppendKeys(e.token_ids, &keys);
  }
  for (size_t i = 0; i < keys.size() && i < e.block_hashes.size(); ++i) {
    const uint32_t index = first_index + static_cast<uint32_t>(i);
    auto [it, inserted] = blocks_.try_emplace(e.block_hashes[i], Block{keys[i], index});
    if (!inserted) continue;  // at-least-once delivery: a repeated store changes nothing
    order_.push_back(e.block_hashes[i]);
    ++stats_.stored_blocks;
    held_.Add(keys[i], index, i > 0 ? keys[i - 1] : prev);
  }
  while (blocks_.size() > options_.max_blocks && !order_.empty()) {
    EngineBlockHash oldest = std::move(order_.front());
    order_.pop_front();
    if (Drop(oldest, nullptr)) ++stats_.evicted_over_bound;
  }
  // Removals leave stale hashes in order_: compact it when they dominate.
  if (order_.size() > 2 * blocks_.size() + 1024) {
    std::deque<EngineBlockHash> kept;
    std::unordered_set<EngineBlockHash> seen;
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      if (blocks_.contains(*it) && seen.insert(*it).second) kept.push_front(std::move(*it));
    }
    order_ = std::move(kept);
  }
}

bool KvEventView::Drop(const EngineBlockHash& hash, std::vector<BlockKey>* removed_keys) {
  auto it = blocks_.find(hash);
  if (it == blocks_.end()) return false;
  const Block block = it->second;
  blocks_.erase(it);
  if (held_.Release(block.key) && removed_keys != nullptr) removed_keys->push_back(block.key);
  return true;
}

void KvEventView::ClearAll(std::vector<BlockKey>* removed_keys) {
  // Children before parents, as every BlockEvent stream does.
  held_.ReleaseAll(removed_keys);
  blocks_.clear();
  order_.clear();
}

void KvEventView::Reset() {
  ++stats_.resets;
  ClearAll(nullptr);
}

size_t KvEventView::CachedPrefixTokens(std::span<const BlockKey> keys) const {
  return held_.PrefixBlocks(keys) * keyer_.tokens_per_block();
}

void KvEventView::DrainEvents(std::vector<BlockEvent>& out) { held_.DrainEvents(out); }

void KvEventView::AppendSnapshot(std::vector<BlockEvent>& out) const { held_.AppendSnapshot(out); }

}  // namespace hearsay::upstream
