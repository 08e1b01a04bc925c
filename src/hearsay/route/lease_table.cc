#include "hearsay/route/lease_table.h"

#include <algorithm>

namespace hearsay::route {
namespace {

constexpr size_t kDense = 16;     // every position below this is on the grid
constexpr size_t kPerOctave = 8;  // grid positions per power of two above it

}  // namespace

LeaseTable::LeaseTable(int capacity_log2) {
  capacity_log2 = std::clamp(capacity_log2, 4, 24);
  shift_ = 64 - capacity_log2;
  mask_ = (size_t{1} << capacity_log2) - 1;
  entries_.resize(mask_ + 1);
}

size_t LeaseTable::GridPosition(size_t i) {
  if (i < kDense) return i;
  const size_t octave = (i - kDense) / kPerOctave;
  const size_t within = (i - kDense) % kPerOctave;
  const size_t base = kDense << octave;
  return base + within * (base / kPerOctave);
}

size_t LeaseTable::GridCount(size_t blocks) {
  if (blocks <= kDense) return blocks;
  size_t count = kDense;
  for (size_t base = kDense; base < blocks; base <<= 1) {
    const size_t step = base / kPerOctave;
    const size_t end = std::min(blocks, base << 1);
    count += (end - base + step - 1) / step;
  }
  return count;
}

size_t LeaseTable::Home(prefix::BlockKey key) const {
  // Keys are hashes already; the multiply spreads any structure a test's keys may have.
  return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_) & mask_;
}

void LeaseTable::Put(prefix::BlockKey key, uint32_t blocks, Slot slot, TimePoint now,
                     TimePoint expiry) {
  const size_t home = Home(key);
  Entry* same = nullptr;
  Entry* free = nullptr;
  Entry* soonest = nullptr;
  for (size_t i = 0; i < kProbe; ++i) {
    Entry& e = entries_[(home + i) & mask_];
    if (e.expiry <= now) {
      if (free == nullptr) free = &e;
    } else if (e.key == key) {
      same = &e;
      break;
    } else if (soonest == nullptr || e.expiry < soonest->expiry) {
      soonest = &e;
    }
  }
  Entry* victim = same != nullptr ? same : free != nullptr ? free : soonest;
  *victim = {key, expiry, slot, blocks};
}

const LeaseTable::Entry* LeaseTable::Get(prefix::BlockKey key, TimePoint now) const {
  const size_t home = Home(key);
  for (size_t i = 0; i < kProbe; ++i) {
    const Entry& e = entries_[(home + i) & mask_];
    if (e.key == key && e.expiry > now) return &e;
  }
  return nullptr;
}

void LeaseTable::Grant(std::span<const prefix::BlockKey> chain, Slot slot, TimePoint now,
                       TimePoint expiry) {
  if (chain.empty() || expiry <= now) return;
  if (slot < kMaxTrackedSlots) {
    if (slot >= leased_.size()) leased_.resize(slot + 1);
    leased_[slot] = true;
  }
  const size_t n = GridCount(chain.size());
  for (size_t i = 0; i < n; ++i) {
    const size_t p = GridPosition(i);
    Put(chain[p], static_cast<uint32_t>(p + 1), slot, now, expiry);
  }
  if (GridPosition(n - 1) != chain.size() - 1) {
    Put(chain.back(), static_cast<uint32_t>(chain.size()), slot, now, expiry);
  }
}

LeaseTable::Match LeaseTable::Find(std::span<const prefix::BlockKey> chain, TimePoint now) const {
  Match best;
  if (chain.empty()) return best;
  // The whole chain first: repeats of one prompt are the most common burst.
  if (const Entry* e = Get(chain.back(), now)) {
    return {e->slot, static_cast<uint32_t>(chain.size())};
  }
  // Presence along the grid is prefix-closed for one lease, so binary search for the last hit.
  size_t lo = 0, hi = GridCount(chain.size());  // the answer is in [lo, hi)
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    const size_t p = GridPosition(mid);
    if (const Entry* e = Get(chain[p], now)) {
      best = {e->slot, static_cast<uint32_t>(p + 1)};
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return best;
}

void LeaseTable::Revoke(Slot slot) {
  // Every node revokes each peer it discovers; a slot that was never leased needs no scan.
  if (slot < kMaxTrackedSlots) {
    if (slot >= leased_.size() || !leased_[slot]) return;
    leased_[slot] = false;
  }
  for (Entry& e : entries_) {
    if (e.slot == slot) e = Entry{};
  }
}

}  // namespace hearsay::route
