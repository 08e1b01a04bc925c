// LeaseTable: the entry node's short memory of where it recently sent which prompt prefix.
//
// Gossip takes a while to tell this node that a peer now caches a prompt it just forwarded there.
// Until then, a burst of sibling requests (same system prompt, same document) would each see
// "nobody holds it" and scatter. A lease records "prefix -> slot, until expiry" at dispatch time,
// and the policy treats a leased prefix as cached on that slot, so siblings land together.
//
// Chained block keys make a prefix one key: a chain that contains key k_i shares blocks 0..i with
// the leased prompt. Rather than every key, a lease stores the keys at a fixed grid of block
// positions (every position below 16, then 8 per power of two: 16, 18, .., 30, 32, 36, .., 60,
// 64, ..) plus the prompt's last key, so a 512-block prompt costs 57 entries and a sibling's
// shared depth is found to within 1/8 by binary search over its own grid keys.
//
// Storage is a fixed-capacity open-addressing hash table, allocated once: Grant() and Find()
// never allocate. When a probe window is full, the entry that expires first is overwritten, so a
// full table forgets the oldest leases first. The newest lease of a key wins.
//
// Thread-safety: none; owned by one policy.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "hearsay/env/time.h"
#include "hearsay/prefix/block_event.h"
#include "hearsay/route/policy.h"

namespace hearsay::route {

class LeaseTable {
 public:
  // A table of 2^capacity_log2 entries (clamped to [4, 24]).
  explicit LeaseTable(int capacity_log2 = 14);

  struct Match {
    Slot slot = kNoSlot;
    // How many leading blocks of the queried chain are leased to `slot` (0 = no lease).
    uint32_t blocks = 0;
  };

  // Leases the prefixes of `chain` to `slot` until `expiry`.
  void Grant(std::span<const prefix::BlockKey> chain, Slot slot, TimePoint now, TimePoint expiry);

  // The deepest live lease on a prefix of `chain` (an exact grid match; may undercount by 1/8).
  Match Find(std::span<const prefix::BlockKey> chain, TimePoint now) const;

  // Drops every lease held by `slot`. O(capacity) if `slot` was granted a lease since its last
  // Revoke (else O(1)): for membership changes only.
  void Revoke(Slot slot);

  // The number of grid positions below `blocks` (exposed for tests).
  static size_t GridCount(size_t blocks);
  // The i-th grid position, in increasing order (exposed for tests).
  static size_t GridPosition(size_t i);

 private:
  // Invariants: an entry is live iff expiry > now (a never-used one has TimePoint::min()); a key
  // has at most one live entry, and it lies within kProbe entries of the key's home.
  struct Entry {
    prefix::BlockKey key = 0;
    TimePoint expiry = TimePoint::min();
    Slot slot = kNoSlot;
    uint32_t blocks = 0;
  };
  static constexpr size_t kProbe = 8;

  size_t Home(prefix::BlockKey key) const;
  void Put(prefix::BlockKey key, uint32_t blocks, Slot slot, TimePoint now, TimePoint expiry);
  const Entry* Get(prefix::BlockKey key, TimePoint now) const;

  int shift_;
  size_t mask_;
  std::vector<Entry> entries_;
  // Slots (< kMaxTrackedSlots) granted a lease since their last Revoke; others hold none.
  std::vector<bool> leased_;
};

}  // namespace hearsay::route
