#include "hearsay/gossip/origin_store.h"

#include <algorithm>

#include "hearsay/common/bytes.h"

namespace hearsay::gossip {

using prefix::BlockEvent;
using prefix::BlockKey;

namespace {

std::vector<uint8_t> LoadElement(const LoadRecord& r) {
  ByteWriter w;
  w.PutU8('L');
  w.PutRaw(EncodeLoadRecord(r));
  return w.Take();
}

std::vector<uint8_t> ServiceElement(const ServiceRecord& r) {
  ByteWriter w;
  w.PutU8('S');
  PutServiceRecord(w, r);
  return w.Take();
}

std::vector<uint8_t> UsageElement(const UsageRecord& r) {
  ByteWriter w;
  w.PutU8('U');
  PutUsageRecord(w, r);
  return w.Take();
}

}  // namespace

OriginStore::OriginStore(NodeId id, Generation generation, size_t min_tombstones,
                         std::shared_ptr<SharedHistory> history, bool writer, uint32_t stride)
    : id_(std::move(id)),
      generation_(generation),
      min_tombstones_(min_tombstones),
      stride_(stride),
      history_(std::move(history)),
      writer_(writer) {}

uint64_t OriginStore::PutLoad(const LoadReport& load, uint64_t heartbeat) {
  load_ = LoadRecord{++max_version_, heartbeat, load};
  if (history_ && writer_) history_->RecordLoad(load_.version);
  return load_.version;
}

uint64_t OriginStore::PutService(const Service& service) {
  service_ = ServiceRecord{++max_version_, service};
  // A record, like the load: no cache key (SharedHistory::Write::is_load).
  if (history_ && writer_) history_->RecordLoad(service_.version);
  return service_.version;
}

uint64_t OriginStore::PutUsage(std::vector<TenantUsage> tenants) {
  usage_ = UsageRecord{++max_version_, std::move(tenants)};
  if (history_ && writer_) history_->RecordLoad(usage_.version);
  return usage_.version;
}

bool OriginStore::PutCache(BlockKey full_key, uint32_t block_index, bool live) {
  if (!Put(full_key, block_index, live)) return false;
  MaybeCollect();
  return true;
}

bool OriginStore::Put(BlockKey full_key, uint32_t block_index, bool live) {
  const BlockKey key = SummaryKey(full_key);
  const Slot* s = entries_.Find(key);
  if (s == nullptr ? !live : s->live == live) return false;
  Write(key, block_index, live, ++max_version_, nullptr);
  if (history_ && writer_) history_->RecordCache(max_version_, key, block_index, live);
  return true;
}

size_t OriginStore::Restride(uint32_t stride, std::span<const BlockEvent> landmarks) {
  KeyTable<uint32_t> next;
  next.Reserve(landmarks.size());
  for (const BlockEvent& e : landmarks) next.TryEmplace(SummaryKey(e.key), e.block_index);
  std::vector<std::pair<BlockKey, uint32_t>> removed;
  entries_.ForEach([&](BlockKey key, const Slot& slot) {
    if (slot.live && !next.Contains(key)) removed.emplace_back(key, slot.block_index);
  });
  size_t written = 0;
  // Sorted, so the versions do not depend on the tables' layouts.
  std::sort(removed.begin(), removed.end());
  for (const auto& [key, index] : removed) written += Put(key, index, false) ? 1 : 0;
  std::vector<std::pair<BlockKey, uint32_t>> added;
  next.ForEach([&](BlockKey key, const uint32_t& index) {
    const Slot* s = entries_.Find(key);
    if (s == nullptr || !s->live) added.emplace_back(key, index);
  });
  std::sort(added.begin(), added.end());
  for (const auto& [key, index] : added) written += Put(key, index, true) ? 1 : 0;
  stride_ = stride;
  PutLoad(load_.load, load_.heartbeat);
  // The change is the versioned writes above, nothing more: a peer behind it gets them as one run
  // that is never cut (BuildRun), so no replica ever holds keys of two strides.
  epoch_ = max_version_;
  MaybeCollect();
  return written;
}

void OriginStore::Write(BlockKey full_key, uint32_t block_index, bool live, uint64_t version,
                        std::vector<BlockEvent>* events) {
  const BlockKey key = SummaryKey(full_key);
  auto [slot, inserted] = entries_.TryEmplace(key, Slot{version, block_index, live});
  const bool was_live = !inserted && slot->live;
  // A removal arrives without its block index: the event names the one the key was held at.
  if (!live && was_live) block_index = slot->block_index;
  if (!inserted) {
    if (!slot->live) --tombstones_;
    *slot = Slot{version, block_index, live};
  }
  if (!live) ++tombstones_;
  log_.push_back({version, key});
  if (events != nullptr && was_live != live) {
    events->push_back(
        {live ? BlockEvent::Kind::kAdded : BlockEvent::Kind::kRemoved, key, block_index});
  }
}

void OriginStore::ApplyRecords(const OriginDelta& d) {
  if (d.load && d.load->version > load_.version) load_ = *d.load;
  if (d.service && d.service->version > service_.version) service_ = *d.service;
  if (d.usage && d.usage->version > usage_.version) usage_ = *d.usage;
}

bool OriginStore::CrossesStrideStart(const OriginDelta& d) {
  return !d.snapshot && d.stride_start > d.from_version && d.stride_start <= d.to_version;
}

OriginStore::ApplyResult OriginStore::Check(const OriginDelta& d) const {
  if (d.to_version <= max_version_) return ApplyResult::kStale;
  if (!d.snapshot && stride_ != 0 && d.stride != stride_) {
    if (d.from_version > max_version_) return ApplyResult::kGap;
    // Another stride only with the whole change in the run: every write from what this replica
    // knows through the version at which the new stride took effect.
    if (!CrossesStrideStart(d)) return ApplyResult::kStrideMismatch;
  }
  if (!d.snapshot && d.from_version > max_version_) return ApplyResult::kGap;
  return ApplyResult::kApplied;
}

std::optional<StateHash> OriginStore::CommitmentAfter(const OriginDelta& d) const {
  if (commitment_ == nullptr || shared()) return std::nullopt;
  StateHash c = d.snapshot ? StateHash{} : *commitment_;
  KeyTable<bool> seen;
  seen.Reserve(d.entries.size());
  for (const auto& e : d.entries) {
    if (!d.snapshot && e.version <= max_version_) continue;  // Apply skips it too
    const BlockKey key = SummaryKey(e.key);
    if (!seen.TryEmplace(key, true).second) return std::nullopt;
    if (!d.snapshot) {
      const Slot* old = entries_.Find(key);
      if (old != nullptr && old->live) c.Remove(CacheElement(key, old->block_index));
    }
    if (e.live) c.Add(CacheElement(key, e.block_index));
  }
  // The records, as ApplyRecords takes them (a snapshot starts from nothing).
  const LoadRecord* load = d.snapshot ? nullptr : &load_;
  if (d.load && (load == nullptr || d.load->version > load->version)) {
    if (load != nullptr && load->version > 0) c.Remove(LoadElement(*load));
    c.Add(LoadElement(*d.load));
  } else if (d.snapshot && load_.version > 0) {
    c.Add(LoadElement(load_));
  }
  const ServiceRecord* service = d.snapshot ? nullptr : &service_;
  if (d.service && (service == nullptr || d.service->version > service->version)) {
    if (service != nullptr && service->version > 0) c.Remove(ServiceElement(*service));
    c.Add(ServiceElement(*d.service));
  } else if (d.snapshot && service_.version > 0) {
    c.Add(ServiceElement(service_));
  }
  const UsageRecord* usage = d.snapshot ? nullptr : &usage_;
  if (d.usage && (usage == nullptr || d.usage->version > usage->version)) {
    if (usage != nullptr && usage->version > 0) c.Remove(UsageElement(*usage));
    c.Add(UsageElement(*d.usage));
  } else if (d.snapshot && usage_.version > 0) {
    c.Add(UsageElement(usage_));
  }
  return c;
}

void OriginStore::SetSigned(const std::optional<StateHash>& commitment,
                            const Signature& signature) {
  if (commitment_ != nullptr && commitment) *commitment_ = *commitment;
  signature_ = signature;
}

OriginStore::ApplyResult OriginStore::Apply(const OriginDelta& d, std::vector<BlockEvent>* events) {
  if (const ApplyResult r = Check(d); r != ApplyResult::kApplied) return r;
  signature_.reset();
  if (CrossesStrideStart(d)) epoch_ = std::max(epoch_, d.stride_start);
  if (shared()) return ApplyShared(d, events);
  stride_ = d.stride;
  if (d.snapshot) {
    KeyTable<Slot> next;
    next.Reserve(d.entries.size());
    for (const auto& e : d.entries) {
      *next.TryEmplace(SummaryKey(e.key), Slot{}).first = Slot{d.to_version, e.block_index, true};
    }
    if (events != nullptr) {
      entries_.ForEach([&](BlockKey key, const Slot& slot) {
        if (slot.live && !next.Contains(key)) {
          events->push_back({BlockEvent::Kind::kRemoved, key, slot.block_index});
        }
      });
      next.ForEach([&](BlockKey key, const Slot& slot) {
        const Slot* old = entries_.Find(key);
        if (old == nullptr || !old->live) {
          events->push_back({BlockEvent::Kind::kAdded, key, slot.block_index});
        }
      });
    }
    entries_ = std::move(next);
    tombstones_ = 0;
    log_.clear();
    head_ = 0;
    log_.reserve(entries_.size());
    entries_.ForEach([&](BlockKey key, const Slot&) { log_.push_back({d.to_version, key}); });
    max_version_ = d.to_version;
    gc_floor_ = d.to_version;
    ApplyRecords(d);
    return ApplyResult::kApplied;
  }
  for (const auto& e : d.entries) {
    if (e.version <= max_version_) continue;
    Write(e.key, e.block_index, e.live, e.version, events);
  }
  ApplyRecords(d);
  max_version_ = d.to_version;
  MaybeCollect();
  return ApplyResult::kApplied;
}

size_t OriginStore::TombstoneAllowance() const {
  const size_t keep = std::max(min_tombstones_, live_count());
  // After a change of stride, room for its removals as well (up to the old stride's keys): a
  // collected removal of the change would send every peer still behind it a snapshot.
  return epoch_ > 0 ? 2 * keep : keep;
}

void OriginStore::MaybeCollect() {
  const size_t keep = TombstoneAllowance();
  if (tombstones_ > keep) {
    // Collect the oldest tombstones down to half the allowance, so collection is amortized.
    size_t drop = tombstones_ - keep / 2;
    for (size_t i = head_; i < log_.size() && drop > 0; ++i) {
      const LogItem& item = log_[i];
      const Slot* slot = entries_.Find(item.key);
      if (slot == nullptr || slot->version != item.version || slot->live) continue;
      gc_floor_ = std::max(gc_floor_, item.version);
      entries_.Erase(item.key);
      --tombstones_;
      --drop;
    }
  }
  // Drop stale log items once they are the majority.
  if (log_.size() - head_ > 2 * entries_.size() + 64) CompactLog();
}

void OriginStore::CompactLog() {
  std::vector<LogItem> compact;
  compact.reserve(entries_.size());
  for (size_t i = head_; i < log_.size(); ++i) {
    if (Current(log_[i])) compact.push_back(log_[i]);
  }
  log_ = std::move(compact);
  head_ = 0;
}

std::optional<OriginDelta> OriginStore::BuildDelta(uint64_t known, size_t budget_bytes) const {
  if (known >= max_version_) return std::nullopt;
  std::optional<OriginDelta> run;
  if (known < gc_floor_) {
    run = BuildSnapshot(budget_bytes);
  } else {
    run = BuildAnyRun(known, budget_bytes);
    // A run across the change of stride is whole or not at all (BuildRun); a peer it does not
    // fit gets a snapshot at the new stride instead.
    if (!run && (known < epoch_ || whole_runs_)) run = BuildSnapshot(budget_bytes);
  }
  if (run && signature_ && run->to_version == max_version_) run->signature = signature_;
  return run;
}

std::optional<OriginDelta> OriginStore::BuildSnapshot(size_t budget_bytes) const {
  std::optional<OriginDelta> d = SnapshotShell(budget_bytes);
  if (!d) return std::nullopt;
  d->entries.reserve(live_count());
  if (shared()) {
    for (const auto& e : LiveKeys())
      d->entries.push_back({e.key, e.block_index, true, max_version_});
  } else {
    entries_.ForEach([&](BlockKey key, const Slot& slot) {
      if (slot.live) d->entries.push_back({key, slot.block_index, true, max_version_});
    });
  }
  return d;
}

std::optional<OriginDelta> OriginStore::BuildAnyRun(uint64_t known, size_t budget_bytes) const {
  if (shared()) {
    return BuildRun(known, budget_bytes, [&](auto&& take) {
      for (uint64_t u = known + 1; u <= max_version_; ++u) {
        const SharedHistory::Write& w = history_->At(u);
        if (w.is_load || !history_->CurrentAt(u, max_version_)) continue;
        if (!take(CacheEntry{w.key, w.live ? w.block_index : 0, w.live, u})) return;
      }
    });
  }
  return BuildRun(known, budget_bytes, [&](auto&& take) {
    auto begin =
        std::upper_bound(log_.begin() + static_cast<std::ptrdiff_t>(head_), log_.end(), known,
                         [](uint64_t v, const LogItem& i) { return v < i.version; });
    for (auto it = begin; it != log_.end(); ++it) {
      // One lookup serves both the staleness check and the entry (this loop is the hot path of
      // every delta sent).
      const Slot* slot = entries_.Find(it->key);
      if (slot == nullptr || slot->version != it->version) continue;
      if (!take(CacheEntry{it->key, slot->live ? slot->block_index : 0, slot->live, it->version})) {
        return;
      }
    }
  });
}

std::optional<OriginDelta> OriginStore::SnapshotShell(size_t budget_bytes) const {
  OriginDelta d;
  d.id = id_;
  d.generation = generation_;
  d.snapshot = true;
  d.stride = std::max<uint32_t>(stride_, 1);
  d.from_version = 0;
  d.to_version = max_version_;
  if (load_.version > 0) d.load = load_;
  if (service_.version > 0) d.service = service_;
  if (usage_.version > 0) d.usage = usage_;
  const size_t bound =
      EncodedDeltaHeaderSize(d) + VarintSize(live_count()) + live_count() * kMaxSnapshotEntryBytes;
  if (bound > budget_bytes) return std::nullopt;
  return d;
}

template <typename ForEachCurrent>
std::optional<OriginDelta> OriginStore::BuildRun(uint64_t known, size_t budget_bytes,
                                                 ForEachCurrent for_each_current) const {
  OriginDelta d;
  d.id = id_;
  d.generation = generation_;
  d.stride = std::max<uint32_t>(stride_, 1);
  d.from_version = known;
  d.to_version = known;
  // Across the change of stride the run must hold all of it: it is sent whole, never cut.
  const bool whole = known < epoch_ || whole_runs_;
  if (known < epoch_) d.stride_start = epoch_;
  // + room for the varints growing, and for the signature.
  size_t used = EncodedDeltaHeaderSize(d) + 4 + (signature_ ? kSignatureBytes : 0);
  bool load_done = load_.version <= known;
  bool service_done = service_.version <= known;
  bool usage_done = usage_.version <= known;
  uint64_t prev = known;
  bool cut = false;
  // The records go in version order among the entries; false if the next one does not fit.
  auto add_record = [&](size_t need, auto set) {
    if (used + need > budget_bytes) return false;
    used += need;
    set();
    return true;
  };
  auto add_load = [&] {
    return add_record(EncodedSize(load_), [&] {
      d.load = load_;
      d.to_version = std::max(d.to_version, load_.version);
      load_done = true;
    });
  };
  auto add_service = [&] {
    return add_record(EncodedSize(service_), [&] {
      d.service = service_;
      d.to_version = std::max(d.to_version, service_.version);
      service_done = true;
    });
  };
  auto add_usage = [&] {
    return add_record(EncodedSize(usage_), [&] {
      d.usage = usage_;
      d.to_version = std::max(d.to_version, usage_.version);
      usage_done = true;
    });
  };
  // Adds every record written before `version`, oldest first; false if one does not fit.
  auto add_records_before = [&](uint64_t version) {
    for (;;) {
      const uint64_t load_v = load_done ? UINT64_MAX : load_.version;
      const uint64_t service_v = service_done ? UINT64_MAX : service_.version;
      const uint64_t usage_v = usage_done ? UINT64_MAX : usage_.version;
      const uint64_t next = std::min({load_v, service_v, usage_v});
      if (next == UINT64_MAX || next >= version) return true;
      const bool added = next == load_v      ? add_load()
                         : next == service_v ? add_service()
                                             : add_usage();
      if (!added) return false;
    }
  };
  for_each_current([&](const CacheEntry& e) {
    if (!add_records_before(e.version)) {
      cut = true;
      return false;
    }
    const size_t need = EncodedRunEntrySize(e, prev);
    if (used + need > budget_bytes) {
      cut = true;
      return false;
    }
    used += need;
    d.entries.push_back(e);
    prev = e.version;
    d.to_version = e.version;
    return true;
  });
  if (!cut && !add_records_before(UINT64_MAX)) cut = true;
  if (!cut) d.to_version = max_version_;
  if (d.to_version == known || (whole && cut)) return std::nullopt;
  return d;
}

std::vector<BlockEvent> OriginStore::LiveKeys() const {
  std::vector<BlockEvent> out;
  out.reserve(live_count());
  if (shared()) {
    for (const auto& [key, last] : history_->keys()) {
      const uint64_t v = history_->SameKeyAtOrBelow(last, max_version_);
      if (v != 0 && history_->At(v).live) {
        out.push_back({BlockEvent::Kind::kAdded, key, history_->At(v).block_index});
      }
    }
    return out;
  }
  entries_.ForEach([&](BlockKey key, const Slot& slot) {
    if (slot.live) out.push_back({BlockEvent::Kind::kAdded, key, slot.block_index});
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// Shared-replica mode: the same results as above, computed from the origin's history as of
// max_version_ (see shared_history.h for the one approximation).

OriginStore::ApplyResult OriginStore::ApplyShared(const OriginDelta& d,
                                                  std::vector<BlockEvent>* events) {
  const uint64_t to = std::min(d.to_version, history_->max_version());
  if (to <= max_version_) return ApplyResult::kStale;
  stride_ = d.stride;
  const uint64_t old = max_version_;
  for (uint64_t u = old + 1; u <= to; ++u) {
    const SharedHistory::Write& w = history_->At(u);
    // Each key once, at its last write in the range.
    if (w.is_load || !history_->CurrentAt(u, to)) continue;
    const uint64_t before = history_->SameKeyAtOrBelow(u, old);
    const bool was_live = before != 0 && history_->At(before).live;
    if (before > gc_floor_ && !history_->At(before).live) --tombstones_;
    if (!w.live) ++tombstones_;
    if (was_live != w.live) {
      shared_live_ += w.live ? 1 : 0;
      shared_live_ -= was_live ? 1 : 0;
      if (events != nullptr) {
        events->push_back(
            {w.live ? BlockEvent::Kind::kAdded : BlockEvent::Kind::kRemoved, w.key, w.block_index});
      }
    }
  }
  max_version_ = to;
  ApplyRecords(d);
  if (d.snapshot) {
    // A snapshot carries no tombstones: everything at or below it is collected.
    tombstones_ = 0;
    gc_floor_ = to;
    gc_cursor_ = to;
  } else {
    MaybeCollectShared();
  }
  return ApplyResult::kApplied;
}

void OriginStore::MaybeCollectShared() {
  const size_t keep = TombstoneAllowance();
  if (tombstones_ <= keep) return;
  size_t drop = tombstones_ - keep / 2;
  for (uint64_t u = std::max(gc_cursor_, gc_floor_) + 1; u <= max_version_ && drop > 0; ++u) {
    gc_cursor_ = u;
    const SharedHistory::Write& w = history_->At(u);
    if (w.is_load || w.live || !history_->CurrentAt(u, max_version_)) continue;
    gc_floor_ = u;
    --tombstones_;
    --drop;
  }
}

}  // namespace hearsay::gossip
