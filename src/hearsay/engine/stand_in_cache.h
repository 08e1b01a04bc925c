// TEMPORARY stand-in for prefix::RadixTree until it lands: a per-token trie. Not committed.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "hearsay/prefix/block_event.h"

namespace hearsay::engine {

struct StandInOptions {
  uint32_t tokens_per_block = 16;
};

class StandInCache {
 public:
  StandInCache(uint64_t capacity, StandInOptions o) : capacity_(capacity), o_(o) {
    nodes_.push_back({});
  }
  size_t Match(std::span<const uint32_t> t) const {
    uint32_t n = 0;
    size_t i = 0;
    for (; i < t.size(); ++i) {
      auto it = child_.find(Key(n, t[i]));
      if (it == child_.end()) break;
      n = it->second;
    }
    return i;
  }
  void Insert(std::span<const uint32_t> t) {
    uint32_t n = 0;
    ++clock_;
    for (size_t i = 0; i < t.size(); ++i) {
      auto it = child_.find(Key(n, t[i]));
      uint32_t c;
      if (it == child_.end()) {
        c = static_cast<uint32_t>(nodes_.size());
        Node nn;
        nn.parent = n;
        nn.tok = t[i];
        nn.depth = static_cast<uint32_t>(i + 1);
        nn.key = nodes_[n].key * 1000003 + t[i] + 1;
        nodes_.push_back(nn);
        nodes_[n].kids++;
        child_[Key(n, t[i])] = c;
        ++size_;
        if (nn.depth % o_.tokens_per_block == 0) {
          events_.push_back(
              {prefix::BlockEvent::Kind::kAdded, nn.key, nn.depth / o_.tokens_per_block - 1});
        }
      } else {
        c = it->second;
      }
      nodes_[c].last = clock_;
      n = c;
    }
  }
  void Pin(std::span<const uint32_t> t, size_t len, int delta) {
    uint32_t n = 0;
    ++clock_;
    for (size_t i = 0; i < len; ++i) {
      n = child_.at(Key(n, t[i]));
      if (nodes_[n].pins == 0 && delta > 0) ++pinned_;
      nodes_[n].pins += delta;
      if (nodes_[n].pins == 0 && delta < 0) --pinned_;
      nodes_[n].last = clock_;
    }
  }
  uint64_t size_tokens() const { return size_; }
  uint64_t pinned_tokens() const { return pinned_; }
  uint64_t capacity() const { return capacity_; }
  uint64_t Evict(uint64_t want) {
    uint64_t freed = 0;
    while (freed < want) {
      uint32_t best = 0;
      for (uint32_t i = 1; i < nodes_.size(); ++i) {
        const Node& x = nodes_[i];
        if (x.dead || x.kids || x.pins) continue;
        if (best == 0 || x.last < nodes_[best].last) best = i;
      }
      if (best == 0) break;
      // Remove the leaf.
      Node& x = nodes_[best];
      x.dead = true;
      child_.erase(Key(x.parent, x.tok));
      nodes_[x.parent].kids--;
      --size_;
      ++freed;
      if (x.depth % o_.tokens_per_block == 0) {
        events_.push_back(
            {prefix::BlockEvent::Kind::kRemoved, x.key, x.depth / o_.tokens_per_block - 1});
      }
    }
    return freed;
  }
  void DrainEvents(std::vector<prefix::BlockEvent>& out) {
    out.insert(out.end(), events_.begin(), events_.end());
    events_.clear();
  }

 private:
  struct Node {
    uint32_t parent = 0;
    uint32_t tok = 0;
    uint32_t depth = 0;
    uint32_t pins = 0;
    uint32_t kids = 0;
    uint64_t last = 0;
    uint64_t key = 0;
    bool dead = false;
  };
  static uint64_t Key(uint32_t n, uint32_t t) { return (uint64_t{n} << 32) | t; }
  uint64_t capacity_;
  StandInOptions o_;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, uint32_t> child_;
  uint64_t size_ = 0, pinned_ = 0, clock_ = 0;
  std::vector<prefix::BlockEvent> events_;
};

}  // namespace hearsay::engine
