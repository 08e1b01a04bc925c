// HolderTable: the inverted index behind PeerIndex. It maps each block key to the set of
// *columns* believed to hold it, where a column is one incarnation of one peer (PeerIndex gives a
// peer a fresh column whenever its old belief must vanish: restart, snapshot, removal).
//
// Layout: one open-addressing hash table (linear probing, backward-shift deletion, no
// tombstones, at most 3/4 full) of 16-byte buckets whose probe runs start at a cache-line
// boundary, so a lookup is usually one cache line and batches can prefetch it. The bucket array
// is a FlatArray (huge pages when large). A key held by at most
// kInline columns lists them inside its bucket; a more popular key points to a bitset over all
// columns in a shared arena, so intersecting "who is still matching" with "who holds k_i" costs
// a few word ANDs however many peers hold k_i.
//
// Retiring a column is O(1): it is cleared from the live mask and its entries become garbage
// that no query reports (Contains() checks the mask; Match starts its alive set from the mask).
// The garbage is reclaimed by an incremental sweep (Sweep(), a budget of buckets per call, run
// by PeerIndex after each mutation) or by any rehash. A retired column is reused only after a
// full sweep pass that started after its retirement, so a reused column never inherits stale
// entries. If no column is free, AllocateColumn() forces a full clean.
//
// Thread-safety: none. Const methods are safe to call concurrently with each other only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "hearsay/prefix/block_event.h"
#include "hearsay/prefix/flat_array.h"

namespace hearsay::prefix {

// One incarnation of one peer inside a HolderTable.
using Column = uint16_t;

class HolderTable {
 public:
  // Holders listed inside a bucket; one more holder moves the key to a bitset.
  static constexpr uint16_t kInline = 3;
  // The most columns a table can have (a column must fit the 16-bit bucket fields).
  static constexpr size_t kMaxColumns = 32768;

  // Invariants:
  //   count == 0 means the bucket is empty (key is meaningless); otherwise count is the number
  //   of distinct columns (live or retired) the bucket references.
  //   count <= kInline: cols[0..count) are those columns, in no order.
  //   count > kInline: the columns are the set bits of bitset set_id() in the arena.
  struct Bucket {
    BlockKey key;
    uint16_t count;
    uint16_t cols[kInline];

    uint32_t set_id() const { return cols[0] | (static_cast<uint32_t>(cols[1]) << 16); }
  };
  static_assert(sizeof(Bucket) == 16);

  // A table for columns [0, max_columns) (clamped to [1, kMaxColumns]); `hash_seed` salts the
  // bucket hash so peers cannot aim keys at one probe run without knowing it.
  HolderTable(size_t max_columns, uint64_t hash_seed);

  // ---- Columns ----

  // Marks the lowest free column live and returns it; nullopt only if every column is live.
  std::optional<Column> AllocateColumn();
  // Makes live column `c` hold nothing, in O(1); its old entries are reclaimed later.
  void RetireColumn(Column c);
  bool IsLive(Column c) const { return (live_[c >> 6] >> (c & 63)) & 1; }
  // The live mask, one bit per column; only the first live_words() words can be nonzero.
  const uint64_t* live_mask() const { return live_.data(); }
  size_t live_words() const { return live_words_; }
  // Columns retired but not yet reusable.
  size_t retired_columns() const { return retired_.size(); }

  // ---- Keys ----

  // Records that live column `c` holds `key`; false if it already did.
  bool Add(BlockKey key, Column c);
  // Records that live column `c` no longer holds `key`; false if it did not.
  bool Remove(BlockKey key, Column c);
  // Whether live column `c` holds `key` (false for a retired or free column).
  bool Contains(BlockKey key, Column c) const;
  // The bucket of `key`, or nullptr. Its holders may include retired columns: mask them.
  const Bucket* Find(BlockKey key) const {
    const Bucket& b = buckets_[Probe(key)];
    return b.count == 0 ? nullptr : &b;
  }
  // The bitset of a bucket with count > kInline (words_per_set() words).
  const uint64_t* SetBits(const Bucket& b) const { return &sets_[size_t{b.set_id()} * words_]; }
  size_t words_per_set() const { return words_; }
  // Hints the CPU to load `key`'s home cache line (for pipelined batches).
  void Prefetch(BlockKey key) const {
    const char* line = reinterpret_cast<const char*>(buckets_.data() + Home(key));
    PrefetchLine(line);
  }
  // Grows now, if needed, so that `extra` more keys fit without a rehash.
  void Reserve(size_t extra);
  // Calls f(key) for every key live column `c` holds, in table order. O(capacity).
  template <typename F>
  void ForEachKeyOf(Column c, F&& f) const {
    if (!IsLive(c)) return;
    for (const Bucket& b : buckets_) {
      if (b.count != 0 && BucketHas(b, c)) f(b.key);
    }
  }

  // ---- Maintenance ----

  // Cleans up to `budget` buckets of retired columns' entries; no-op if none are retired.
  void Sweep(size_t budget);
  // Halves the table while it is at most 1/8 full (and above the minimum size).
  void MaybeShrink();

  // Buckets in use (including those holding only garbage), and the table size.
  size_t size() const { return size_; }
  size_t capacity() const { return buckets_.size(); }
  // Bytes held by buckets and the bitset arena.
  size_t MemoryBytes() const;

 private:
  enum class ColumnState : uint8_t { kFree, kLive, kRetired };
  static constexpr size_t kMinCapacity = 16;

  // MurmurHash3's 64-bit finalizer: keys are already hashes, but the salt and the mix keep a
  // table's probe runs unpredictable to whoever chose the keys.
  static uint64_t MixKey(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
  }
  // A key's home is the first bucket of a cache line (4 buckets): a probe run usually stays in
  // its home line, so one prefetch covers a lookup, an insert or an erase.
  size_t Home(BlockKey key) const { return (MixKey(key ^ seed_) >> (shift_ + 2)) << 2; }
  bool BucketHas(const Bucket& b, Column c) const;
  // Index of `key`'s bucket, or of the empty bucket where it would go.
  size_t Probe(BlockKey key) const {
    const size_t mask = buckets_.size() - 1;
    size_t i = Home(key);
    while (buckets_[i].count != 0 && buckets_[i].key != key) i = (i + 1) & mask;
    return i;
  }
  void EraseAt(size_t i);
  // Drops retired columns from `b`, demoting a bitset that falls to kInline; returns the count.
  uint16_t Clean(Bucket& b);
  uint32_t AllocSet();
  void FreeSet(uint32_t id);
  void Demote(Bucket& b);
  // Rebuilds at `capacity` buckets, dropping all garbage; frees every retired column.
  void Rehash(size_t capacity);
  void FinishPass();
  void RecomputeLiveWords();

  uint64_t seed_;
  size_t words_;  // words per bitset: ceil(max_columns / 64)
  int shift_;     // 64 - log2(capacity)
  size_t size_ = 0;
  FlatArray<Bucket> buckets_;
  std::vector<uint64_t> sets_;  // the bitset arena, words_ words per set
  std::vector<uint32_t> free_sets_;

  // Invariants: state_[c] == kLive iff bit c of live_ is set; retired_ lists exactly the
  // kRetired columns; covered_by_[c] is the sweep pass that, once finished, leaves no bucket
  // referencing retired column c; live_words_ covers the highest live column.
  std::vector<ColumnState> state_;
  std::vector<uint64_t> live_;
  std::vector<uint64_t> covered_by_;
  std::vector<Column> retired_;
  size_t live_words_ = 0;
  // The sweep visits buckets [cursor_, capacity) of pass pass_; every bucket before cursor_ has
  // been cleaned of every column retired before pass pass_ began.
  size_t cursor_ = 0;
  uint64_t pass_ = 0;
};

}  // namespace hearsay::prefix
