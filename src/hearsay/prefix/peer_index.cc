#include "hearsay/prefix/peer_index.h"

#include <algorithm>
#include <bit>
#include <string>

#include "hearsay/common/check.h"

namespace hearsay::prefix {
namespace {

// How far ahead batches prefetch buckets: enough misses in flight to hide DRAM latency.
constexpr size_t kPrefetchAhead = 16;
constexpr size_t kResolveAhead = 8;
// Buckets swept after every mutation while cleared columns await cleanup, plus 2 per key.
constexpr size_t kSweepBase = 256;
constexpr size_t kMaxWords = HolderTable::kMaxColumns / 64;
// Reserve at most this many keys up front: a batch of duplicates must not balloon the table
// (beyond it, Add grows the table by doubling as keys really arrive).
constexpr uint64_t kMaxReserve = uint64_t{1} << 16;

std::string Describe(const NodeId& peer) { return "peer '" + peer + "'"; }

}  // namespace

PeerIndex::PeerIndex(PeerIndexOptions options)
    : options_([&] {
        options.max_peers = std::clamp<size_t>(options.max_peers, 1, kMaxPeersLimit);
        return options;
      }()),
      table_(2 * options_.max_peers, options_.hash_seed),
      column_slot_(2 * options_.max_peers, kNoPeerSlot) {}

// ---- Peers ----

Result<PeerSlot> PeerIndex::ObservePeer(const NodeId& peer, Generation generation) {
  if (auto it = by_id_.find(peer); it != by_id_.end()) {
    const PeerSlot slot = it->second;
    const Generation known = peers_[slot].generation;
    if (generation < known) {
      return FailedPreconditionError(Describe(peer) + ": stale generation " +
                                     std::to_string(generation) + " < " + std::to_string(known));
    }
    if (generation > known) {
      Restart(slot, generation);
      Maintain(0);
    }
    return slot;
  }
  if (peer.empty()) return InvalidArgumentError("empty peer id");
  if (by_id_.size() >= options_.max_peers) {
    return ResourceExhaustedError(
        "already tracking max_peers=" + std::to_string(options_.max_peers) + " peers");
  }
  PeerSlot slot = 0;
  while (slot < slot_limit_ && peers_[slot].in_use) ++slot;
  if (slot == slot_limit_) {
    peers_.emplace_back();
    ++slot_limit_;
  }
  PeerState& p = peers_[slot];
  p.id = peer;
  p.generation = generation;
  p.held = 0;
  p.stride = 1;
  p.in_use = true;
  p.column = NewColumn(slot);
  by_id_.emplace(peer, slot);
  Maintain(0);
  return slot;
}

Status PeerIndex::RemovePeer(const NodeId& peer) {
  auto it = by_id_.find(peer);
  if (it == by_id_.end()) return NotFoundError(Describe(peer) + " is not known");
  PeerState& p = peers_[it->second];
  table_.RetireColumn(p.column);
  column_slot_[p.column] = kNoPeerSlot;
  by_id_.erase(it);
  p = PeerState{};
  while (slot_limit_ > 0 && !peers_[slot_limit_ - 1].in_use) {
    peers_.pop_back();
    --slot_limit_;
  }
  Maintain(0);
  return OkStatus();
}

Column PeerIndex::NewColumn(PeerSlot slot) {
  // Columns number twice max_peers, so one is free or frees up by a forced clean.
  const std::optional<Column> c = table_.AllocateColumn();
  HEARSAY_CHECK(c.has_value());
  column_slot_[*c] = slot;
  return *c;
}

void PeerIndex::Restart(PeerSlot slot, Generation generation) {
  PeerState& p = peers_[slot];
  p.generation = generation;
  if (p.held == 0) return;  // The column is already empty: nothing to retire.
  table_.RetireColumn(p.column);
  column_slot_[p.column] = kNoPeerSlot;
  p.column = NewColumn(slot);
  p.held = 0;
}

void PeerIndex::Maintain(size_t work) {
  table_.Sweep(kSweepBase + 2 * work);
  table_.MaybeShrink();
}

// ---- Updates ----

Result<PeerSlot> PeerIndex::SlotForUpdate(const NodeId& peer, Generation generation) const {
  auto it = by_id_.find(peer);
  if (it == by_id_.end()) return NotFoundError(Describe(peer) + " is not known");
  const Generation known = peers_[it->second].generation;
  if (generation < known) {
    return FailedPreconditionError(Describe(peer) + ": stale generation " +
                                   std::to_string(generation) + " < " + std::to_string(known));
  }
  return it->second;
}

Status PeerIndex::ApplyEvents(const NodeId& peer, Generation generation,
                              std::span<const BlockEvent> events) {
  HEARSAY_ASSIGN_OR_RETURN(const PeerSlot slot, SlotForUpdate(peer, generation));
  uint64_t adds = 0;
  for (const BlockEvent& e : events) {
    if (e.kind == BlockEvent::Kind::kAdded) {
      ++adds;
    } else if (e.kind != BlockEvent::Kind::kRemoved) {
      return InvalidArgumentError(Describe(peer) + ": unknown block event kind " +
                                  std::to_string(static_cast<int>(e.kind)));
    }
  }
  PeerState& p = peers_[slot];
  const uint64_t base = generation > p.generation ? 0 : p.held;
  if (adds > options_.max_blocks_per_peer - std::min(base, options_.max_blocks_per_peer)) {
    return ResourceExhaustedError(Describe(peer) + ": more than max_blocks_per_peer=" +
                                  std::to_string(options_.max_blocks_per_peer) + " blocks");
  }
  if (generation > p.generation) Restart(slot, generation);
  table_.Reserve(std::min(adds, kMaxReserve));

  const Column col = p.column;
  const size_t n = events.size();
  for (size_t i = 0; i < std::min(n, kPrefetchAhead); ++i) table_.Prefetch(events[i].key);
  uint64_t held = p.held;
  for (size_t i = 0; i < n; ++i) {
    if (i + kPrefetchAhead < n) table_.Prefetch(events[i + kPrefetchAhead].key);
    const BlockEvent& e = events[i];
    if (e.kind == BlockEvent::Kind::kAdded) {
      held += table_.Add(e.key, col);
    } else {
      held -= table_.Remove(e.key, col);
    }
  }
  p.held = held;
  Maintain(n);
  return OkStatus();
}

Status PeerIndex::ApplySnapshot(const NodeId& peer, Generation generation,
                                std::span<const BlockKey> keys) {
  HEARSAY_ASSIGN_OR_RETURN(const PeerSlot slot, SlotForUpdate(peer, generation));
  if (keys.size() > options_.max_blocks_per_peer) {
    return ResourceExhaustedError(
        Describe(peer) + ": snapshot of " + std::to_string(keys.size()) +
        " keys exceeds max_blocks_per_peer=" + std::to_string(options_.max_blocks_per_peer));
  }
  Restart(slot, generation);
  table_.Reserve(std::min<uint64_t>(keys.size(), kMaxReserve));

  PeerState& p = peers_[slot];
  const Column col = p.column;
  const size_t n = keys.size();
  for (size_t i = 0; i < std::min(n, kPrefetchAhead); ++i) table_.Prefetch(keys[i]);
  uint64_t held = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i + kPrefetchAhead < n) table_.Prefetch(keys[i + kPrefetchAhead]);
    held += table_.Add(keys[i], col);
  }
  p.held = held;
  Maintain(n);
  return OkStatus();
}

Status PeerIndex::SetStride(const NodeId& peer, Generation generation, uint32_t stride) {
  if (stride == 0) return InvalidArgumentError(Describe(peer) + ": landmark stride 0");
  HEARSAY_ASSIGN_OR_RETURN(const PeerSlot slot, SlotForUpdate(peer, generation));
  if (generation > peers_[slot].generation) Restart(slot, generation);
  peers_[slot].stride = stride;
  return OkStatus();
}

// ---- Queries ----

Status PeerIndex::StartMatch(size_t chain_size, std::span<uint32_t> out) const {
  if (out.size() < slot_limit_) {
    return InvalidArgumentError("match output holds " + std::to_string(out.size()) +
                                " slots, needs slot_limit()=" + std::to_string(slot_limit_));
  }
  if (chain_size > UINT32_MAX) return InvalidArgumentError("chain longer than 2^32-1 blocks");
  std::fill_n(out.data(), slot_limit_, 0u);
  return OkStatus();
}

Status PeerIndex::Match(std::span<const BlockKey> chain, std::span<uint32_t> out) const {
  HEARSAY_RETURN_IF_ERROR(StartMatch(chain.size(), out));
  MatchRun(
      chain.size(), [&](size_t i) { return chain[i]; },
      [&](PeerSlot slot, uint32_t depth) { out[slot] = depth; });
  return OkStatus();
}

Status PeerIndex::MatchStrided(std::span<const BlockKey> chain, std::span<uint32_t> out) const {
  HEARSAY_RETURN_IF_ERROR(StartMatch(chain.size(), out));
  const size_t n = chain.size();
  // One pass per distinct stride in use, smallest first (no allocation: the next stride is the
  // smallest above the previous one).
  uint64_t prev = 0;
  while (true) {
    uint64_t stride = UINT64_MAX;
    for (PeerSlot s = 0; s < slot_limit_; ++s) {
      const PeerState& p = peers_[s];
      if (p.in_use && p.stride > prev && p.stride < stride) stride = p.stride;
    }
    if (stride == UINT64_MAX) return OkStatus();
    prev = stride;
    const size_t marks = (n + stride - 1) / stride;
    MatchRun(
        marks, [&](size_t i) { return chain[i * stride]; },
        [&](PeerSlot slot, uint32_t depth) {
          if (peers_[slot].stride != stride) return;
          out[slot] = depth == 0 ? 0 : static_cast<uint32_t>((depth - 1) * stride + 1);
        });
  }
}

template <typename KeyAt, typename Emit>
void PeerIndex::MatchRun(size_t n, KeyAt key_at, Emit emit_slot) const {
  if (n == 0 || by_id_.empty()) return;

  // A two-stage pipeline: a key's bucket is prefetched kPrefetchAhead steps early, then looked
  // up kResolveAhead steps early so that a bitset it points to can be prefetched too.
  const HolderTable::Bucket* ring[kPrefetchAhead];
  const auto resolve = [&](size_t j) {
    const HolderTable::Bucket* f = table_.Find(key_at(j));
    if (f != nullptr && f->count > HolderTable::kInline) PrefetchLine(table_.SetBits(*f));
    ring[j % kPrefetchAhead] = f;
  };
  for (size_t i = 0; i < std::min(n, kPrefetchAhead); ++i) table_.Prefetch(key_at(i));
  for (size_t i = 0; i < std::min(n, kResolveAhead + 1); ++i) resolve(i);
  const HolderTable::Bucket* b = ring[0];
  if (b == nullptr) return;

  // alive: the live columns that hold k_0..k_{i-1}; its nonzero words lie in [lo, hi).
  uint64_t alive[kMaxWords];
  const uint64_t* live = table_.live_mask();
  size_t lo = 0;
  size_t hi = table_.live_words();
  if (b->count <= HolderTable::kInline) {
    std::fill_n(alive, hi, 0);
    for (uint16_t j = 0; j < b->count; ++j) {
      const Column c = b->cols[j];
      if (table_.IsLive(c)) alive[c >> 6] |= uint64_t{1} << (c & 63);
    }
  } else {
    const uint64_t* bits = table_.SetBits(*b);
    for (size_t w = 0; w < hi; ++w) alive[w] = bits[w] & live[w];
  }

  const auto emit = [&](size_t w, uint64_t dropped, uint32_t depth) {
    for (; dropped != 0; dropped &= dropped - 1) {
      emit_slot(column_slot_[w * 64 + std::countr_zero(dropped)], depth);
    }
  };
  for (size_t i = 1; i < n; ++i) {
    while (lo < hi && alive[lo] == 0) ++lo;
    while (hi > lo && alive[hi - 1] == 0) --hi;
    if (lo == hi) return;
    if (i + kPrefetchAhead < n) table_.Prefetch(key_at(i + kPrefetchAhead));
    if (i + kResolveAhead < n) resolve(i + kResolveAhead);
    const uint32_t depth = static_cast<uint32_t>(i);
    b = ring[i % kPrefetchAhead];
    if (b == nullptr) {
      for (size_t w = lo; w < hi; ++w) emit(w, alive[w], depth);
      return;
    }
    if (b->count <= HolderTable::kInline) {
      // At most kInline columns survive: collect them, drop everyone else.
      uint64_t keep[HolderTable::kInline];
      size_t kept = 0;
      for (uint16_t j = 0; j < b->count; ++j) {
        const Column c = b->cols[j];
        const uint64_t bit = uint64_t{1} << (c & 63);
        const size_t w = c >> 6;
        if (w >= lo && w < hi && (alive[w] & bit)) {
          alive[w] &= ~bit;
          keep[kept++] = c;
        }
      }
      for (size_t w = lo; w < hi; ++w) {
        emit(w, alive[w], depth);
        alive[w] = 0;
      }
      for (size_t k = 0; k < kept; ++k) alive[keep[k] >> 6] |= uint64_t{1} << (keep[k] & 63);
    } else {
      const uint64_t* bits = table_.SetBits(*b);
      for (size_t w = lo; w < hi; ++w) {
        const uint64_t next = alive[w] & bits[w];
        emit(w, alive[w] & ~next, depth);
        alive[w] = next;
      }
    }
  }
  for (size_t w = lo; w < hi; ++w) emit(w, alive[w], static_cast<uint32_t>(n));
}

std::optional<PeerSlot> PeerIndex::FindSlot(const NodeId& peer) const {
  auto it = by_id_.find(peer);
  if (it == by_id_.end()) return std::nullopt;
  return it->second;
}

const NodeId* PeerIndex::PeerAt(PeerSlot slot) const {
  if (slot >= slot_limit_ || !peers_[slot].in_use) return nullptr;
  return &peers_[slot].id;
}

Result<Generation> PeerIndex::GenerationOf(const NodeId& peer) const {
  auto it = by_id_.find(peer);
  if (it == by_id_.end()) return NotFoundError(Describe(peer) + " is not known");
  return peers_[it->second].generation;
}

Result<uint64_t> PeerIndex::BlocksHeld(const NodeId& peer) const {
  auto it = by_id_.find(peer);
  if (it == by_id_.end()) return NotFoundError(Describe(peer) + " is not known");
  return peers_[it->second].held;
}

uint32_t PeerIndex::StrideOf(PeerSlot slot) const {
  if (slot >= slot_limit_ || !peers_[slot].in_use) return 0;
  return peers_[slot].stride;
}

uint64_t PeerIndex::BlocksHeld(PeerSlot slot) const {
  if (slot >= slot_limit_ || !peers_[slot].in_use) return 0;
  return peers_[slot].held;
}

bool PeerIndex::Holds(PeerSlot slot, BlockKey key) const {
  if (slot >= slot_limit_ || !peers_[slot].in_use) return false;
  return table_.Contains(key, peers_[slot].column);
}

Result<std::vector<BlockKey>> PeerIndex::Keys(const NodeId& peer) const {
  auto it = by_id_.find(peer);
  if (it == by_id_.end()) return NotFoundError(Describe(peer) + " is not known");
  const PeerState& p = peers_[it->second];
  std::vector<BlockKey> keys;
  keys.reserve(p.held);
  table_.ForEachKeyOf(p.column, [&](BlockKey k) { keys.push_back(k); });
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace hearsay::prefix
