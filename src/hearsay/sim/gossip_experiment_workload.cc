#include "hearsay/sim/gossip_experiment_workload.h"

namespace hearsay::sim::gossip_experiment {
namespace {

using prefix::BlockEvent;
using prefix::BlockKey;

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

PromptModel::PromptModel(uint64_t seed) : conv_zipf_(kConversations, 0.9), seed_(seed) {
  Rng rng(seed);
  for (int s = 0; s < kSystems; ++s) {
    sys_len_.push_back(static_cast<int>(rng.UniformInt(4, 64)));
  }
}

std::vector<BlockKey> PromptModel::Draw(Rng& rng) const {
  const uint64_t conv = conv_zipf_.Sample(rng);
  const uint64_t h = Mix(conv ^ seed_);
  const int sys = static_cast<int>(h % kSystems);
  const int conv_len = 4 + static_cast<int>((h >> 20) % 125);
  std::vector<BlockKey> chain;
  chain.reserve(static_cast<size_t>(sys_len_[sys] + conv_len));
  BlockKey k = Mix(seed_ ^ 0xabcdef);
  for (int i = 0; i < sys_len_[sys]; ++i) {
    k = Mix(k ^ Mix((static_cast<uint64_t>(sys) << 32) | static_cast<uint64_t>(i)));
    chain.push_back(k);
  }
  for (int i = 0; i < conv_len; ++i) {
    k = Mix(k ^ Mix(((conv + 1) << 24) ^ static_cast<uint64_t>(i) ^ 0x5555));
    chain.push_back(k);
  }
  return chain;
}

void SyntheticCache::Insert(const std::vector<BlockKey>& chain, std::vector<BlockEvent>* events) {
  const uint64_t now = ++clock_;
  BlockKey parent = 0;
  for (size_t i = 0; i < chain.size(); ++i) {
    const BlockKey k = chain[i];
    auto it = blocks_.find(k);
    if (it != blocks_.end()) {
      Touch(k, it->second, now);
    } else {
      if (i > 0) {
        Block& p = blocks_.at(parent);
        if (p.children++ == 0) leaves_.erase({p.last_use, parent});
      }
      blocks_.emplace(k, Block{parent, static_cast<uint32_t>(i), 0, now, i > 0});
      leaves_.insert({now, k});
      events->push_back({BlockEvent::Kind::kAdded, k, static_cast<uint32_t>(i)});
    }
    parent = k;
  }
  while (blocks_.size() > capacity_ && !leaves_.empty()) {
    const auto [use, k] = *leaves_.begin();
    leaves_.erase(leaves_.begin());
    const Block b = blocks_.at(k);
    blocks_.erase(k);
    events->push_back({BlockEvent::Kind::kRemoved, k, b.index});
    if (b.has_parent) {
      Block& p = blocks_.at(b.parent);
      if (--p.children == 0) leaves_.insert({p.last_use, b.parent});
    }
  }
}

uint32_t SyntheticCache::Matched(const std::vector<BlockKey>& chain) const {
  uint32_t n = 0;
  for (BlockKey k : chain) {
    if (!blocks_.contains(k)) break;
    ++n;
  }
  return n;
}

void SyntheticCache::Touch(BlockKey k, Block& b, uint64_t now) {
  if (b.children == 0) {
    leaves_.erase({b.last_use, k});
    leaves_.insert({now, k});
  }
  b.last_use = now;
}

}  // namespace hearsay::sim::gossip_experiment
