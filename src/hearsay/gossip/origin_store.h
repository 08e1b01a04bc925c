// OriginStore: one origin's versioned state (its load, service and usage records and its cache
// summary),
// as the origin writes it or as a peer has replicated it. This is the unit of scuttlebutt
// anti-entropy.
//
// The origin is the only writer: every write takes the next version number, so the state is a
// log of versioned keys where a later write of a key supersedes the earlier one. Replicas apply
// deltas (wire.h OriginDelta) that carry every surviving write in a version range (base, to]; a
// delta whose base is above what the replica knows would skip writes, so it is refused as a gap.
// Merges are monotone and idempotent: duplicates and stale deltas change nothing, and the known
// version never goes backwards. Removed keys stay as tombstones until there are more than
// max(min_tombstones, live keys); collecting them raises gc_floor(), and a peer that knows less
// than gc_floor() is sent a snapshot (every live key) instead of a run.
//
// Landmark stride: the cache keys are the origin's blocks whose index is a multiple of stride().
// Every delta carries the stride of the store that built it. An origin that changes its stride
// (Restride) writes the difference (removals and additions) as ordinary versioned writes; the
// version of the last of them is the *stride start*, stride_start(). A run for a peer that knows
// less than the stride start holds the whole change: it is never cut to a budget (if it does not
// fit, the peer gets a snapshot), and it names the stride start (OriginDelta::stride_start). A
// replica adopts the stride of the first delta it applies, of every snapshot, and of a run that
// holds the whole change (it knows the stride start from it, so it serves such runs in turn); it
// refuses any other run at another stride (kStrideMismatch). So a replica never holds keys of two
// strides. After a change the tombstone allowance doubles, so the change's removals are not
// collected at once (a collected one would send every peer still behind the change a snapshot).
//
// Signed state (state_signing.h): a store with a commitment (EnableCommitment; private mode
// only) keeps the LtHash of its live keys, load record, service record and usage record. A signing
// node checks a delta before applying it (Check, CommitmentAfter: the commitment it would lead to,
// computed without changing anything), verifies the origin's signature over that commitment, and
// only then applies it (SetSigned keeps the commitment and the signature, which BuildDelta attaches
// to every delta that ends at max_version()). A store with whole_runs never cuts a run to a budget:
// a cut run would end at a version no signature covers.
//
// Ownership: plain value owned by gossip::Node, one per (origin id, generation).
// Thread-safety: none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "hearsay/common/ids.h"
#include "hearsay/gossip/key_table.h"
#include "hearsay/gossip/shared_history.h"
#include "hearsay/gossip/state_signing.h"
#include "hearsay/gossip/summary_key.h"
#include "hearsay/gossip/wire.h"
#include "hearsay/prefix/block_event.h"

namespace hearsay::gossip {

class OriginStore {
 public:
  enum class ApplyResult {
    kApplied,         // the delta raised max_version()
    kStale,           // nothing new (duplicate or older): ignored
    kGap,             // its base is above max_version(): refused, state unchanged
    kStrideMismatch,  // a run at a stride other than this replica's: refused, state unchanged
  };

  // With `history` (simulation only, shared_history.h): the origin's own store (`writer`)
  // records every write there, and a replica keeps no keys of its own but answers from it.
  // `stride` is the writer's landmark stride; a replica (stride 0 here) learns it from deltas.
  OriginStore(NodeId id, Generation generation, size_t min_tombstones,
              std::shared_ptr<SharedHistory> history = nullptr, bool writer = false,
              uint32_t stride = 0);

  // --- Writer side (the origin's own store) ---
  // Writes the load record (heartbeat as given); returns its version.
  uint64_t PutLoad(const LoadReport& load, uint64_t heartbeat);
  // Writes the service record (service.h); returns its version.
  uint64_t PutService(const Service& service);
  // Writes the usage record (usage.h; tenants within its limits); returns its version.
  uint64_t PutUsage(std::vector<TenantUsage> tenants);
  // Writes key (as its summary key, summary_key.h) as held (live) or removed; a write that
  // changes nothing is skipped. Returns true if a version was taken.
  bool PutCache(prefix::BlockKey key, uint32_t block_index, bool live);
  // Switches to `stride` (>= 1): `landmarks` (full or summary keys with their block indices) is
  // everything the origin now holds at that stride. Writes the removals and additions that turn
  // the current keys into it and rewrites the load record (so the change has a version even when
  // no key changes); that version becomes stride_start(). Returns the number of cache keys
  // written.
  size_t Restride(uint32_t stride, std::span<const prefix::BlockEvent> landmarks);

  // --- Replica side ---
  // Applies `d` (same id and generation); appends the resulting cache changes to `events`
  // (for a snapshot: first every removal, then every addition, relative to the previous state).
  // A run at a stride other than stride() is applied only if it covers its stride start (then
  // whole, adopting its stride), else refused with kStrideMismatch.
  ApplyResult Apply(const OriginDelta& d, std::vector<prefix::BlockEvent>* events);

  // What a peer that knows `known` lacks, cut so that EncodedSize <= budget_bytes; nullopt if it
  // lacks nothing or not even the first item fits. A snapshot if known < gc_floor(), or if
  // known < stride_start() and the (uncuttable) run does not fit.
  std::optional<OriginDelta> BuildDelta(uint64_t known, size_t budget_bytes) const;

  // --- Signed state ---
  // Keeps a commitment to the state from now on (call before the first write or apply).
  void EnableCommitment() { commitment_ = std::make_unique<StateHash>(); }
  // Runs are whole or not built (BuildDelta falls back to a snapshot).
  void set_whole_runs(bool whole) { whole_runs_ = whole; }
  // What Apply(d) would return, without applying it.
  ApplyResult Check(const OriginDelta& d) const;
  // The commitment to the state Apply(d) would lead to, for a d that Check() accepts; nullopt if
  // the store keeps no commitment, or d names a key twice (no consistent delta does).
  std::optional<StateHash> CommitmentAfter(const OriginDelta& d) const;
  // After Apply(d) of a verified d: the commitment it led to (if kept) and the origin's signature
  // of the state at max_version().
  void SetSigned(const std::optional<StateHash>& commitment, const Signature& signature);
  const StateHash* commitment() const { return commitment_.get(); }
  // The signature of the state at max_version(), if known.
  const std::optional<Signature>& signature() const { return signature_; }

  // --- Views ---
  const NodeId& id() const { return id_; }
  Generation generation() const { return generation_; }
  // Every write with a version <= max_version() is reflected here.
  uint64_t max_version() const { return max_version_; }
  uint64_t gc_floor() const { return gc_floor_; }
  // The origin's version at which stride() took effect, as far as this store knows (the writer
  // always; a replica from the crossing run it applied); 0 if none is known.
  uint64_t stride_start() const { return epoch_; }
  // The landmark stride of the cache keys; 0 for a replica that has applied nothing yet.
  uint32_t stride() const { return stride_; }
  const LoadRecord& load() const { return load_; }
  const ServiceRecord& service() const { return service_; }
  const UsageRecord& usage() const { return usage_; }
  size_t live_count() const { return shared() ? shared_live_ : entries_.size() - tombstones_; }
  size_t tombstone_count() const { return tombstones_; }
  // True if the origin is believed to hold `key` (compared as summary keys).
  bool Contains(prefix::BlockKey full_key) const {
    const prefix::BlockKey key = SummaryKey(full_key);
    if (shared()) return SharedLiveAt(key, max_version_);
    const Slot* s = entries_.Find(key);
    return s != nullptr && s->live;
  }
  // Every live summary key with its block index (unordered).
  std::vector<prefix::BlockEvent> LiveKeys() const;

 private:
  struct Slot {
    uint64_t version = 0;
    uint32_t block_index = 0;
    bool live = false;
  };
  struct LogItem {
    uint64_t version;
    prefix::BlockKey key;
  };

  // PutCache without collection (Restride collects once, after the whole change).
  bool Put(prefix::BlockKey full_key, uint32_t block_index, bool live);
  void Write(prefix::BlockKey key, uint32_t block_index, bool live, uint64_t version,
             std::vector<prefix::BlockEvent>* events);
  // Takes d's load, service and usage records if they are newer than the ones held.
  void ApplyRecords(const OriginDelta& d);
  // True if `d` is a run that starts below its stride start and reaches it.
  static bool CrossesStrideStart(const OriginDelta& d);
  // Tombstones kept before the oldest are collected.
  size_t TombstoneAllowance() const;
  // Every live key, stamped max_version_; nullopt if it might not fit the budget.
  std::optional<OriginDelta> BuildSnapshot(size_t budget_bytes) const;
  // The run of what a peer that knows `known` lacks (either mode), as BuildRun.
  std::optional<OriginDelta> BuildAnyRun(uint64_t known, size_t budget_bytes) const;
  // Shared-replica mode: the same contracts, answered from history_.
  bool shared() const { return history_ != nullptr && !writer_; }
  bool SharedLiveAt(prefix::BlockKey key, uint64_t version) const {
    const uint64_t v = history_->LatestAt(key, version);
    return v != 0 && history_->At(v).live;
  }
  ApplyResult ApplyShared(const OriginDelta& d, std::vector<prefix::BlockEvent>* events);
  // A snapshot delta without its entries, or nullopt if every live key might not fit the budget.
  std::optional<OriginDelta> SnapshotShell(size_t budget_bytes) const;
  // A run of what a peer that knows `known` lacks, cut to the budget (never when known <
  // epoch_: then whole or nullopt). for_each_current(take)
  // calls take(entry) for every current cache write above `known` in version order, and stops
  // when take returns false (shared by the private and shared-replica modes).
  template <typename ForEachCurrent>
  std::optional<OriginDelta> BuildRun(uint64_t known, size_t budget_bytes,
                                      ForEachCurrent for_each_current) const;
  void MaybeCollectShared();
  void MaybeCollect();
  // Keeps only the log items that are still their key's current write.
  void CompactLog();
  bool Current(const LogItem& item) const {
    const Slot* s = entries_.Find(item.key);
    return s != nullptr && s->version == item.version;
  }

  // Invariants:
  //  - log_[head_..] is sorted by version (non-decreasing; equal only for snapshot stamps) and
  //    holds one current item per key in entries_ (plus stale items, < half after compaction).
  //  - every entries_ version, load_.version, service_.version and usage_.version is <=
  //    max_version_; gc_floor_ <= max_version_.
  //  - tombstones_ == number of entries_ with live == false.
  //  - no tombstone with version <= gc_floor_ is needed by a peer that knows >= gc_floor_.
  NodeId id_;
  Generation generation_;
  size_t min_tombstones_;
  uint64_t max_version_ = 0;
  uint64_t gc_floor_ = 0;
  uint32_t stride_ = 0;
  // The origin's version at which stride_ took effect (0: never changed, or not known here).
  uint64_t epoch_ = 0;
  LoadRecord load_;
  ServiceRecord service_;
  UsageRecord usage_;
  KeyTable<Slot> entries_;
  size_t tombstones_ = 0;
  std::vector<LogItem> log_;
  size_t head_ = 0;
  // Shared mode (history_ set, !writer_): entries_ and log_ stay empty; shared_live_ counts the
  // live keys as of max_version_, tombstones_ the removals above gc_floor_ that are current,
  // and collection resumes its scan after gc_cursor_.
  std::shared_ptr<SharedHistory> history_;
  bool writer_ = false;
  size_t shared_live_ = 0;
  uint64_t gc_cursor_ = 0;
  // Signed state: null unless EnableCommitment; signature_ covers max_version_ (reset by any
  // apply, set again by SetSigned).
  std::unique_ptr<StateHash> commitment_;
  std::optional<Signature> signature_;
  bool whole_runs_ = false;
};

}  // namespace hearsay::gossip
