// SharedHistory: the complete write history of one origin's life (id, generation), shared by
// every replica of that origin inside one process. A simulation device: with it, N replicas of N
// origins cost O(N) history plus a few counters per replica, instead of O(N^2) copies of every
// key, which is what keeps a simulated cluster of 1,024 nodes within one machine's memory.
//
// The origin's own OriginStore records each write here as it makes it (versions are contiguous
// from 1). A replica in shared mode (OriginStore with a history) keeps only its version, its
// collection floor and its live/tombstone counts, and answers every question from the history
// "as of" its version. It still applies only deltas that the wire delivered (gaps and stale
// deltas are refused as before), so convergence, bytes and loss behave as with private replicas.
// One approximation: a private replica that received (base, to] holds an older value for a key
// the origin rewrote after `to` (that write was left out of the delta); a shared one holds the
// origin's state at `to`. docs/gossip.md compares figures both ways.
//
// Ownership: SharedHistories owns the histories; stores hold shared_ptrs.
// Thread-safety: none (one simulation thread).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hearsay/common/ids.h"
#include "hearsay/gossip/types.h"
#include "hearsay/prefix/block_event.h"

namespace hearsay::gossip {

class SharedHistory {
 public:
  struct Write {
    prefix::BlockKey key = 0;
    uint32_t block_index = 0;
    bool live = false;
    bool is_load = false;  // a load or service record (key, index and live unused)
    uint64_t prev = 0;     // the key's previous write, or 0
    uint64_t next = 0;     // the key's next write, or 0 (not yet)
  };

  // Records the write that took `version` (must be max_version() + 1).
  void RecordCache(uint64_t version, prefix::BlockKey key, uint32_t block_index, bool live);
  // Records a load or service record's write.
  void RecordLoad(uint64_t version);

  uint64_t max_version() const { return writes_.size(); }
  // The write of `version`, 1 <= version <= max_version().
  const Write& At(uint64_t version) const { return writes_[version - 1]; }
  // The version of the latest write of `key` at or below `version`; 0 if none.
  uint64_t LatestAt(prefix::BlockKey key, uint64_t version) const;
  // True if cache write `u` is still its key's latest write as of `version` (>= u).
  bool CurrentAt(uint64_t u, uint64_t version) const {
    const uint64_t next = At(u).next;
    return next == 0 || next > version;
  }
  // The latest write of the key of cache write `u` at or below `version`; 0 if none.
  uint64_t SameKeyAtOrBelow(uint64_t u, uint64_t version) const {
    while (u > version) u = At(u).prev;
    return u;
  }
  // Every key ever written, with its latest write.
  const std::unordered_map<prefix::BlockKey, uint64_t>& keys() const { return last_write_; }

 private:
  // Invariants: writes_[v - 1] is the write of version v; the writes of one key are chained by
  // prev/next in version order, and last_write_[k] is the newest.
  std::vector<Write> writes_;
  std::unordered_map<prefix::BlockKey, uint64_t> last_write_;
};

// The histories of every origin life in one simulation, created on first use.
class SharedHistories {
 public:
  std::shared_ptr<SharedHistory> For(const NodeId& id, Generation generation);

 private:
  std::map<std::pair<NodeId, Generation>, std::shared_ptr<SharedHistory>> histories_;
};

}  // namespace hearsay::gossip
