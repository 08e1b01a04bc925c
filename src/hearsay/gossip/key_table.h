// KeyTable<V>: a flat open-addressing map from BlockKey to a small value, for OriginStore.
//
// Every replica of every origin keeps one, and each replicated cache write inserts or updates a
// key, so a node-based std::unordered_map cost one allocation per write and a pointer chase per
// lookup. This table stores (key, value) in one array with linear probing and backward-shift
// erase (no tombstones), at a load factor of at most 1/2. Keys come from peers, so they are mixed
// before probing; a peer that crafts colliding keys only slows its own origin's table.
//
// Iteration order is the array order: deterministic for a given history of operations, but
// unrelated to insertion order. Pointers returned by Find/TryEmplace are valid until the next
// insert or erase. Thread-safety: none (plain value).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "hearsay/prefix/block_event.h"

namespace hearsay::gossip {

template <typename V>
class KeyTable {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // The value of `key`, or null.
  V* Find(prefix::BlockKey key) {
    if (size_ == 0) return nullptr;
    for (size_t i = Home(key);; i = (i + 1) & mask_) {
      Bucket& b = buckets_[i];
      if (!b.used) return nullptr;
      if (b.key == key) return &b.value;
    }
  }
  const V* Find(prefix::BlockKey key) const { return const_cast<KeyTable*>(this)->Find(key); }
  bool Contains(prefix::BlockKey key) const { return Find(key) != nullptr; }

  // Inserts (key, value) unless key is present; returns its value and whether it was inserted.
  std::pair<V*, bool> TryEmplace(prefix::BlockKey key, const V& value) {
    if (2 * (size_ + 1) > buckets_.size()) Grow();
    for (size_t i = Home(key);; i = (i + 1) & mask_) {
      Bucket& b = buckets_[i];
      if (!b.used) {
        b = Bucket{key, value, true};
        ++size_;
        return {&b.value, true};
      }
      if (b.key == key) return {&b.value, false};
    }
  }

  // Removes key if present.
  void Erase(prefix::BlockKey key) {
    if (size_ == 0) return;
    size_t i = Home(key);
    while (true) {
      if (!buckets_[i].used) return;
      if (buckets_[i].key == key) break;
      i = (i + 1) & mask_;
    }
    // Backward shift: pull later entries of the probe run into the hole when their home allows.
    size_t hole = i;
    for (size_t j = (hole + 1) & mask_; buckets_[j].used; j = (j + 1) & mask_) {
      const size_t home = Home(buckets_[j].key);
      // Entry j may move to `hole` if its home is not cyclically in (hole, j].
      const bool stays = hole < j ? (home > hole && home <= j) : (home > hole || home <= j);
      if (stays) continue;
      buckets_[hole] = buckets_[j];
      hole = j;
    }
    buckets_[hole].used = false;
    --size_;
  }

  void Reserve(size_t n) {
    while (2 * n > buckets_.size()) Grow();
  }

  // Calls fn(key, value) for every entry, in array order.
  template <typename F>
  void ForEach(F&& fn) const {
    for (const Bucket& b : buckets_) {
      if (b.used) fn(b.key, b.value);
    }
  }

 private:
  struct Bucket {
    prefix::BlockKey key = 0;
    V value{};
    bool used = false;
  };

  size_t Home(prefix::BlockKey key) const {
    uint64_t x = key;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return static_cast<size_t>(x ^ (x >> 31)) & mask_;
  }

  void Grow() {
    std::vector<Bucket> old = std::move(buckets_);
    const size_t cap = old.empty() ? 16 : old.size() * 2;
    buckets_.assign(cap, Bucket{});
    mask_ = cap - 1;
    size_ = 0;
    for (const Bucket& b : old) {
      if (b.used) TryEmplace(b.key, b.value);
    }
  }

  // Invariants: buckets_.size() is 0 or a power of two, mask_ == size - 1; size_ == number of
  // used buckets <= buckets_.size() / 2; every used bucket is reachable from its home by a run
  // of used buckets.
  std::vector<Bucket> buckets_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace hearsay::gossip
