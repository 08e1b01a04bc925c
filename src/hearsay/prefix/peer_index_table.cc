#include "hearsay/prefix/peer_index_table.h"

#include <algorithm>
#include <bit>

#include "hearsay/common/check.h"

namespace hearsay::prefix {
namespace {

// Whether `size` entries exceed the 3/4 maximum load of `capacity` buckets.
inline bool Overloaded(size_t size, size_t capacity) { return size > capacity / 4 * 3; }

}  // namespace

HolderTable::HolderTable(size_t max_columns, uint64_t hash_seed)
    : seed_(MixKey(hash_seed ^ 0x9e3779b97f4a7c15ULL)) {
  max_columns = std::clamp<size_t>(max_columns, 1, kMaxColumns);
  words_ = (max_columns + 63) / 64;
  state_.assign(max_columns, ColumnState::kFree);
  live_.assign(words_, 0);
  covered_by_.assign(max_columns, 0);
  buckets_ = FlatArray<Bucket>(kMinCapacity);
  shift_ = 64 - std::countr_zero(kMinCapacity);
}

bool HolderTable::BucketHas(const Bucket& b, Column c) const {
  if (b.count <= kInline) {
    for (uint16_t j = 0; j < b.count; ++j) {
      if (b.cols[j] == c) return true;
    }
    return false;
  }
  return (SetBits(b)[c >> 6] >> (c & 63)) & 1;
}

// ---- Columns ----

std::optional<Column> HolderTable::AllocateColumn() {
  auto it = std::find(state_.begin(), state_.end(), ColumnState::kFree);
  if (it == state_.end()) {
    if (retired_.empty()) return std::nullopt;
    Rehash(buckets_.size());  // A full clean frees every retired column.
    it = std::find(state_.begin(), state_.end(), ColumnState::kFree);
    HEARSAY_CHECK(it != state_.end());
  }
  const Column c = static_cast<Column>(it - state_.begin());
  *it = ColumnState::kLive;
  live_[c >> 6] |= uint64_t{1} << (c & 63);
  live_words_ = std::max(live_words_, size_t{c} / 64 + 1);
  return c;
}

void HolderTable::RetireColumn(Column c) {
  HEARSAY_CHECK(c < state_.size() && state_[c] == ColumnState::kLive);
  state_[c] = ColumnState::kRetired;
  live_[c >> 6] &= ~(uint64_t{1} << (c & 63));
  RecomputeLiveWords();
  if (retired_.empty()) {
    // The sweep was idle: start a fresh pass, which alone covers this column.
    cursor_ = 0;
    ++pass_;
    covered_by_[c] = pass_;
  } else {
    covered_by_[c] = cursor_ == 0 ? pass_ : pass_ + 1;
  }
  retired_.push_back(c);
}

void HolderTable::RecomputeLiveWords() {
  while (live_words_ > 0 && live_[live_words_ - 1] == 0) --live_words_;
}

// ---- Keys ----

bool HolderTable::Add(BlockKey key, Column c) {
  HEARSAY_CHECK(c < state_.size() && state_[c] == ColumnState::kLive);
  size_t i = Probe(key);
  Bucket& b = buckets_[i];
  if (b.count == 0) {
    if (Overloaded(size_ + 1, buckets_.size())) {
      Reserve(1);
      return Add(key, c);
    }
    b.key = key;
    b.count = 1;
    b.cols[0] = c;
    ++size_;
    return true;
  }
  if (b.count < kInline) {
    if (BucketHas(b, c)) return false;
    b.cols[b.count++] = c;
    return true;
  }
  if (b.count == kInline) {
    if (BucketHas(b, c)) return false;
    const uint32_t id = AllocSet();
    uint64_t* bits = &sets_[size_t{id} * words_];
    for (uint16_t j = 0; j < kInline; ++j) bits[b.cols[j] >> 6] |= uint64_t{1} << (b.cols[j] & 63);
    bits[c >> 6] |= uint64_t{1} << (c & 63);
    b.cols[0] = static_cast<uint16_t>(id);
    b.cols[1] = static_cast<uint16_t>(id >> 16);
    b.count = kInline + 1;
    return true;
  }
  uint64_t& word = sets_[size_t{b.set_id()} * words_ + (c >> 6)];
  const uint64_t bit = uint64_t{1} << (c & 63);
  if (word & bit) return false;
  word |= bit;
  ++b.count;
  return true;
}

bool HolderTable::Remove(BlockKey key, Column c) {
  if (c >= state_.size() || state_[c] != ColumnState::kLive) return false;
  const size_t i = Probe(key);
  Bucket& b = buckets_[i];
  if (b.count == 0) return false;
  if (b.count <= kInline) {
    for (uint16_t j = 0; j < b.count; ++j) {
      if (b.cols[j] == c) {
        b.cols[j] = b.cols[--b.count];
        if (b.count == 0) EraseAt(i);
        return true;
      }
    }
    return false;
  }
  uint64_t& word = sets_[size_t{b.set_id()} * words_ + (c >> 6)];
  const uint64_t bit = uint64_t{1} << (c & 63);
  if (!(word & bit)) return false;
  word &= ~bit;
  if (--b.count == kInline) Demote(b);
  return true;
}

bool HolderTable::Contains(BlockKey key, Column c) const {
  if (c >= state_.size() || !IsLive(c)) return false;
  const Bucket& b = buckets_[Probe(key)];
  return b.count != 0 && BucketHas(b, c);
}

void HolderTable::Reserve(size_t extra) {
  if (!Overloaded(size_ + extra, buckets_.size())) return;
  size_t capacity = buckets_.size();
  while (Overloaded(size_ + extra, capacity)) capacity *= 2;
  Rehash(capacity);
}

void HolderTable::EraseAt(size_t i) {
  // Backward-shift deletion: pull later members of the probe run into the hole.
  const size_t mask = buckets_.size() - 1;
  size_t hole = i;
  for (size_t j = (i + 1) & mask; buckets_[j].count != 0; j = (j + 1) & mask) {
    const size_t home = Home(buckets_[j].key);
    const bool reachable = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (reachable) continue;
    buckets_[hole] = buckets_[j];
    // An entry moved from ahead of the sweep to behind it would escape this pass: rewind.
    if (hole < cursor_ && j >= cursor_) cursor_ = hole;
    hole = j;
  }
  buckets_[hole].count = 0;
  --size_;
}

uint32_t HolderTable::AllocSet() {
  if (!free_sets_.empty()) {
    const uint32_t id = free_sets_.back();
    free_sets_.pop_back();
    return id;
  }
  const size_t id = sets_.size() / words_;
  HEARSAY_CHECK(id <= UINT32_MAX);
  sets_.resize(sets_.size() + words_, 0);
  return static_cast<uint32_t>(id);
}

void HolderTable::FreeSet(uint32_t id) {
  std::fill_n(&sets_[size_t{id} * words_], words_, 0);
  free_sets_.push_back(id);
}

void HolderTable::Demote(Bucket& b) {
  const uint32_t id = b.set_id();
  const uint64_t* bits = &sets_[size_t{id} * words_];
  uint16_t n = 0;
  for (size_t w = 0; w < words_; ++w) {
    for (uint64_t x = bits[w]; x != 0; x &= x - 1) {
      HEARSAY_CHECK(n < kInline);
      b.cols[n++] = static_cast<Column>(w * 64 + std::countr_zero(x));
    }
  }
  HEARSAY_CHECK(n == b.count);
  FreeSet(id);
}

// ---- Maintenance ----

uint16_t HolderTable::Clean(Bucket& b) {
  if (b.count <= kInline) {
    uint16_t n = 0;
    for (uint16_t j = 0; j < b.count; ++j) {
      if (IsLive(b.cols[j])) b.cols[n++] = b.cols[j];
    }
    b.count = n;
    return n;
  }
  uint64_t* bits = &sets_[size_t{b.set_id()} * words_];
  size_t n = 0;
  for (size_t w = 0; w < words_; ++w) {
    bits[w] &= live_[w];
    n += std::popcount(bits[w]);
  }
  if (n == 0) {
    FreeSet(b.set_id());
  } else {
    b.count = static_cast<uint16_t>(n);
    if (n <= kInline) Demote(b);
  }
  b.count = static_cast<uint16_t>(n);
  return b.count;
}

void HolderTable::Sweep(size_t budget) {
  while (!retired_.empty() && budget-- > 0) {
    if (cursor_ >= buckets_.size()) {
      FinishPass();
      continue;
    }
    Bucket& b = buckets_[cursor_];
    if (b.count != 0 && Clean(b) == 0) {
      EraseAt(cursor_);  // Revisit cursor_: a later entry may have moved into it.
    } else {
      ++cursor_;
    }
  }
}

void HolderTable::FinishPass() {
  std::erase_if(retired_, [&](Column c) {
    if (covered_by_[c] > pass_) return false;
    state_[c] = ColumnState::kFree;
    return true;
  });
  ++pass_;
  cursor_ = 0;
}

void HolderTable::MaybeShrink() {
  size_t capacity = buckets_.size();
  while (capacity / 2 >= kMinCapacity && size_ <= capacity / 8) capacity /= 2;
  if (capacity != buckets_.size()) Rehash(capacity);
}

void HolderTable::Rehash(size_t capacity) {
  FlatArray<Bucket> old(capacity);
  old.swap(buckets_);
  shift_ = 64 - std::countr_zero(capacity);
  size_ = 0;
  const size_t mask = capacity - 1;
  for (Bucket& b : old) {
    if (b.count == 0 || Clean(b) == 0) continue;
    size_t i = Home(b.key);
    while (buckets_[i].count != 0) i = (i + 1) & mask;
    buckets_[i] = b;
    ++size_;
  }
  for (Column c : retired_) state_[c] = ColumnState::kFree;
  retired_.clear();
  ++pass_;
  cursor_ = 0;
}

size_t HolderTable::MemoryBytes() const {
  return buckets_.size() * sizeof(Bucket) + sets_.capacity() * sizeof(uint64_t) +
         free_sets_.capacity() * sizeof(uint32_t);
}

}  // namespace hearsay::prefix
