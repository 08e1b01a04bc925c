#include "hearsay/upstream/held_blocks.h"

#include <algorithm>

namespace hearsay::upstream {

using prefix::BlockEvent;
using prefix::BlockKey;

bool HeldBlocks::Add(BlockKey key, uint32_t index, BlockKey parent) {
  Block& b = blocks_[key];
  if (b.count++ != 0) return false;
  b.index = index;
  b.parent = parent;
  events_.push_back({BlockEvent::Kind::kAdded, key, index});
  return true;
}

std::optional<HeldBlocks::Block> HeldBlocks::Release(BlockKey key) {
  auto it = blocks_.find(key);
  if (it == blocks_.end() || --it->second.count != 0) return std::nullopt;
  const Block gone = it->second;
  events_.push_back({BlockEvent::Kind::kRemoved, key, gone.index});
  blocks_.erase(it);
  return gone;
}

void HeldBlocks::ReleaseAll(std::vector<BlockKey>* removed) {
  std::vector<BlockEvent> gone;
  gone.reserve(blocks_.size());
  for (const auto& [key, b] : blocks_) gone.push_back({BlockEvent::Kind::kRemoved, key, b.index});
  std::sort(gone.begin(), gone.end(), [](const BlockEvent& a, const BlockEvent& b) {
    return a.block_index != b.block_index ? a.block_index > b.block_index : a.key < b.key;
  });
  for (const BlockEvent& e : gone) {
    events_.push_back(e);
    if (removed != nullptr) removed->push_back(e.key);
  }
  blocks_.clear();
}

const HeldBlocks::Block* HeldBlocks::Find(BlockKey key) const {
  auto it = blocks_.find(key);
  return it == blocks_.end() ? nullptr : &it->second;
}

size_t HeldBlocks::PrefixBlocks(std::span<const BlockKey> keys) const {
  size_t n = 0;
  while (n < keys.size() && blocks_.contains(keys[n])) ++n;
  return n;
}

void HeldBlocks::DrainEvents(std::vector<BlockEvent>& out) {
  out.insert(out.end(), events_.begin(), events_.end());
  events_.clear();
}

void HeldBlocks::AppendSnapshot(std::vector<BlockEvent>& out) const {
  std::vector<BlockEvent> held;
  held.reserve(blocks_.size());
  for (const auto& [key, b] : blocks_) held.push_back({BlockEvent::Kind::kAdded, key, b.index});
  std::sort(held.begin(), held.end(), [](const BlockEvent& a, const BlockEvent& b) {
    return a.block_index != b.block_index ? a.block_index < b.block_index : a.key < b.key;
  });
  out.insert(out.end(), held.begin(), held.end());
}

}  // namespace hearsay::upstream
