// CacheTracker: see cache_tracker.h.
#include "hearsay/upstream/cache_tracker.h"

#include <algorithm>
#include <utility>

namespace hearsay::upstream {

using prefix::BlockEvent;
using prefix::BlockKey;

CacheTracker::CacheTracker(prefix::BlockKeyer keyer, CacheTrackerOptions options)
    : keyer_(std::move(keyer)), options_(options), block_tokens_(keyer_.tokens_per_block()) {}

size_t CacheTracker::Predict(uint64_t request, std::span<const prefix::TokenId> prompt,
                             std::string text, TimePoint now, uint64_t ns) {
  return Predict(request, Keys(prompt, ns), std::move(text), now);
}

size_t CacheTracker::Predict(uint64_t request, std::vector<BlockKey> keys, std::string text,
                             TimePoint now) {
  Pending p;
  p.keys = std::move(keys);
  p.text = std::move(text);
  p.estimate_blocks = held_.PrefixBlocks(p.keys);
  if (!p.keys.empty() && !evidence_only_) {
    p.entry = Upsert(p.keys, p.text);
    Entry& e = entries_.at(p.entry);
    ++e.inflight;
    if (!e.confirmed) e.lease_end = std::max(e.lease_end, now + options_.prediction_lease);
  }
  const size_t estimate = p.estimate_blocks * block_tokens_;
  pending_[request] = std::move(p);
  return estimate;
}

EvidenceOutcome CacheTracker::ApplyEvidence(uint64_t request, size_t reported_tokens,
                                            size_t tolerance_tokens) {
  EvidenceOutcome out;
  auto it = pending_.find(request);
  if (it == pending_.end()) return out;
  Pending p = std::move(it->second);
  pending_.erase(it);
  Release(p);
  if (p.keys.empty()) return out;

  const size_t reported_blocks =
      std::min((reported_tokens + tolerance_tokens) / block_tokens_, p.keys.size());
  if (reported_blocks < p.estimate_blocks) {
    out.overestimated = true;
    // The engine lacked block j (and so every block after it): every tracked chain through
    // block j is stale from there on.
    const size_t j = reported_blocks;
    const std::vector<uint64_t> stale = EntriesThrough(p.keys[j]);
    for (uint64_t id : stale) Truncate(id, j);
    out.stale_entries_cut = stale.size();
  } else if (reported_blocks > p.estimate_blocks) {
    out.underestimated = true;
  }
  if (evidence_only_) {
    // Hold only what the engine itself reported (no tolerance credit): the estimates built on
    // more have failed.
    const size_t held_blocks = std::min(reported_tokens / block_tokens_, p.keys.size());
    if (held_blocks > 0) {
      const std::vector<BlockKey> held(p.keys.begin(), p.keys.begin() + held_blocks);
      entries_.at(Upsert(held, held_blocks == p.keys.size() ? p.text : "")).confirmed = true;
    }
    return out;
  }
  // The engine has just computed the whole prompt: it is cached now.
  const uint64_t id = Upsert(p.keys, p.text);
  Entry& e = entries_.at(id);
  e.confirmed = true;
  return out;
}

void CacheTracker::Abandon(uint64_t request) {
  auto it = pending_.find(request);
  if (it == pending_.end()) return;
  Release(it->second);
  pending_.erase(it);
}

void CacheTracker::Release(const Pending& p) {
  if (p.entry == 0) return;
  auto e = entries_.find(p.entry);
  if (e != entries_.end() && e->second.inflight > 0) --e->second.inflight;
}

void CacheTracker::ExpireLeases(TimePoint now) {
  std::vector<uint64_t> expired;
  for (const auto& [id, e] : entries_) {
    if (!e.confirmed && e.inflight == 0 && e.lease_end <= now) expired.push_back(id);
  }
  for (uint64_t id : expired) Remove(id);
}

ReconcileOutcome CacheTracker::Reconcile(const std::function<bool(const std::string&)>& resident,
                                         bool authoritative, TimePoint now) {
  ReconcileOutcome out;
  std::vector<uint64_t> gone;
  for (auto& [id, e] : entries_) {
    if (e.text.empty() || e.inflight > 0) continue;
    if (!e.confirmed && e.lease_end > now) continue;  // a fresh prediction: not judged yet
    if (resident(e.text)) {
      e.confirmed = true;
      Touch(id, e);
      ++out.confirmed;
    } else if (authoritative) {
      gone.push_back(id);
    }
  }
  for (uint64_t id : gone) Remove(id);
  out.removed = gone.size();
  return out;
}

void CacheTracker::Clear() {
  std::vector<uint64_t> ids;
  ids.reserve(entries_.size());
  for (const auto& [id, e] : entries_) ids.push_back(id);
  for (uint64_t id : ids) Remove(id);
  for (auto& [req, p] : pending_) p.entry = 0;
}

void CacheTracker::SetEvidenceOnly(bool on) {
  if (on == evidence_only_) return;
  evidence_only_ = on;
  if (on) Clear();
}

size_t CacheTracker::ForgetBlock(BlockKey key) {
  const HeldBlocks::Block* block = held_.Find(key);
  if (block == nullptr) return 0;
  const size_t j = block->index;
  const std::vector<uint64_t> cut = EntriesThrough(key);
  for (uint64_t id : cut) Truncate(id, j);
  return cut.size();
}

size_t CacheTracker::CachedPrefixTokens(std::span<const prefix::TokenId> prompt,
                                        uint64_t ns) const {
  if (held_.empty()) return 0;
  const std::vector<BlockKey> keys = Keys(prompt, ns);
  return held_.PrefixBlocks(keys) * block_tokens_;
}

std::vector<BlockKey> CacheTracker::Keys(std::span<const prefix::TokenId> prompt,
                                         uint64_t ns) const {
  std::vector<BlockKey> keys;
  prefix::AppendNamespacedKeys(keyer_, ns, prompt, &keys);
  return keys;
}

void CacheTracker::DrainEvents(std::vector<BlockEvent>& out) { held_.DrainEvents(out); }

void CacheTracker::AppendSnapshot(std::vector<BlockEvent>& out) const { held_.AppendSnapshot(out); }

uint64_t CacheTracker::Upsert(const std::vector<BlockKey>& keys, const std::string& text) {
  if (auto it = by_last_key_.find(keys.back()); it != by_last_key_.end()) {
    Entry& e = entries_.at(it->second);
    if (e.text.empty()) e.text = text;
    Touch(it->second, e);
    return it->second;
  }
  const uint64_t id = next_id_++;
  Entry& e = entries_[id];
  e.keys = keys;
  e.text = text;
  e.last_use = ++tick_;
  lru_.insert({e.last_use, id});
  by_last_key_[keys.back()] = id;
  AddKeys(keys);
  entry_blocks_ += keys.size();
  if (options_.storage == PromptStorage::kWholePrompts) DropPrefixEntries(keys);
  EvictToCapacity(id);
  return id;
}

void CacheTracker::Touch(uint64_t id, Entry& e) {
  lru_.erase({e.last_use, id});
  e.last_use = ++tick_;
  lru_.insert({e.last_use, id});
}

void CacheTracker::Remove(uint64_t id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  if (!e.keys.empty()) {
    if (auto b = by_last_key_.find(e.keys.back()); b != by_last_key_.end() && b->second == id) {
      by_last_key_.erase(b);
    }
    DropKeys(e.keys);
  }
  entry_blocks_ -= e.keys.size();
  lru_.erase({e.last_use, id});
  entries_.erase(it);
}

void CacheTracker::Truncate(uint64_t id, size_t blocks) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  if (blocks == 0 || e.keys.empty()) {
    Remove(id);
    return;
  }
  if (blocks >= e.keys.size()) return;
  if (auto b = by_last_key_.find(e.keys.back()); b != by_last_key_.end() && b->second == id) {
    by_last_key_.erase(b);
  }
  DropKeys(std::span<const BlockKey>(e.keys).subspan(blocks));
  entry_blocks_ -= e.keys.size() - blocks;
  e.keys.resize(blocks);
  // The shorter chain no longer matches its text; keep the text out of reconciliation.
  e.text.clear();
  if (by_last_key_.contains(e.keys.back())) {
    Remove(id);  // another entry already tracks exactly this chain
  } else {
    by_last_key_[e.keys.back()] = id;
  }
}

std::vector<uint64_t> CacheTracker::EntriesThrough(BlockKey key) const {
  // Equal keys mean equal prefixes, so the held blocks form a tree, and the entries through `key`
  // are those whose last key lies in its subtree. Every block of that subtree is about to be
  // dropped by the caller, so the walk costs no more than the drop itself.
  std::vector<uint64_t> ids;
  if (!held_.Holds(key)) return ids;
  std::vector<BlockKey> todo = {key};
  while (!todo.empty()) {
    const BlockKey k = todo.back();
    todo.pop_back();
    if (auto e = by_last_key_.find(k); e != by_last_key_.end()) ids.push_back(e->second);
    for (auto c = children_.lower_bound({k, 0}); c != children_.end() && c->first == k; ++c) {
      todo.push_back(c->second);
    }
  }
  // Ascending ids: the order a scan of entries_ gives, which decides which of two chains cut to
  // the same length survives, and the order of the events.
  std::sort(ids.begin(), ids.end());
  return ids;
}

void CacheTracker::AddKeys(std::span<const BlockKey> keys) {
  for (size_t i = 0; i < keys.size(); ++i) {
    const BlockKey parent = i > 0 ? keys[i - 1] : 0;
    if (held_.Add(keys[i], static_cast<uint32_t>(i), parent) && i > 0) {
      children_.insert({parent, keys[i]});
    }
  }
}

void CacheTracker::DropKeys(std::span<const BlockKey> keys) {
  for (size_t i = keys.size(); i-- > 0;) {
    const std::optional<HeldBlocks::Block> gone = held_.Release(keys[i]);
    if (gone && gone->index > 0) children_.erase({gone->parent, keys[i]});
  }
}

uint64_t CacheTracker::used_tokens() const {
  if (options_.storage == PromptStorage::kSharedBlocks) return held_.size() * block_tokens_;
  uint64_t blocks = entry_blocks_;
  uint32_t in_slots = 0;
  for (auto it = lru_.rbegin(); it != lru_.rend() && in_slots < options_.slot_prompts; ++it) {
    blocks -= entries_.at(it->second).keys.size();
    ++in_slots;
  }
  return blocks * block_tokens_;
}

void CacheTracker::DropPrefixEntries(std::span<const BlockKey> keys) {
  for (size_t i = 0; i + 1 < keys.size(); ++i) {
    auto it = by_last_key_.find(keys[i]);
    if (it != by_last_key_.end() && entries_.at(it->second).inflight == 0) Remove(it->second);
  }
}

void CacheTracker::EvictToCapacity(uint64_t keep) {
  auto it = lru_.begin();
  while (used_tokens() > options_.capacity_tokens && it != lru_.end()) {
    const uint64_t id = it->second;
    ++it;
    const Entry& e = entries_.at(id);
    if (id == keep || e.inflight > 0) continue;  // running requests pin their KV
    Remove(id);  // erases only id's lru node; `it` already points past it
  }
}

}  // namespace hearsay::upstream
