// CacheTracker: the node's estimate of what an upstream engine holds in its prefix cache, at
// block granularity, kept from three kinds of knowledge:
//   (a) prediction: what was sent, inserted when the request is sent with a short lease; a
//       prediction that no evidence confirms before its lease ends is dropped;
//   (b) evidence: the cached-token count the engine reports for a request. A hit confirms (the
//       whole prompt is cached now); a count below the estimate proves that the blocks past it
//       were not cached, so every tracked prompt that claims the first missing block is cut there;
//   (c) reconciliation: a listing of what the engine holds (llama.cpp /slots) confirms entries,
//       and, when the listing is authoritative (no host-memory prompt cache), removes the rest.
// Capacity comes from configuration: when the tracked prompts exceed it, whole prompts are dropped
// least recently used first, as the engine's own LRU would. What a prompt costs depends on how
// the engine stores its cache (PromptStorage): a paged cache (vLLM, SGLang) stores a prefix that
// prompts share once, so the held blocks count; llama.cpp keeps each prompt's whole state (in a
// slot, or a copy in its host-memory prompt cache), so every prompt counts in full, and a prompt
// that is the start of a newer one is dropped, as llama.cpp drops it. Its slots hold the most
// recent prompts beside that cache: the `slot_prompts` most recently used entries use none of it.
//
// Model. An entry is one tracked prompt (its chain of block keys, see prefix/block_keys.h, and its
// text for reconciliation). A block is held when some entry holds it; equal keys mean equal
// prefixes, so entries sharing a prefix share its blocks (reference counted). Every change to the
// held set appends a BlockEvent (kAdded parents first, kRemoved children first): DrainEvents()
// feeds gossip, AppendSnapshot() rebuilds a summary.
//
// Invariants:
//  - held_ counts, for each key k, the entries whose keys contain k (held_blocks.h);
//  - held_'s parent of k is the key before k in every chain through k (index > 0 only);
//  - children_ holds (parent, k) for every held k with index > 0: with by_last_key_ it
//    finds the entries through a block by walking its subtree, without scanning all entries;
//  - by_last_key_ maps the last key of every entry with keys to that entry (one entry per chain);
//  - lru_ holds (last_use, id) of every entry.
//
// Thread-safety: none; the core thread only. Never reads a clock: times are passed in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "hearsay/env/time.h"
#include "hearsay/prefix/block_event.h"
#include "hearsay/prefix/block_keys.h"
#include "hearsay/upstream/held_blocks.h"

namespace hearsay::upstream {

// How the engine stores the prompts it caches, which decides what capacity they use.
enum class PromptStorage : uint8_t {
  kSharedBlocks,  // paged blocks, a shared prefix stored once
  kWholePrompts,  // one full copy per prompt (llama.cpp's slots and prompt cache)
};

struct CacheTrackerOptions {
  // The engine's prefix-cache capacity, in tokens (configuration; see docs/engines.md).
  uint64_t capacity_tokens = 65536;
  // How long an unconfirmed prediction counts as cached.
  Duration prediction_lease = std::chrono::seconds(5);
  PromptStorage storage = PromptStorage::kSharedBlocks;
  // kWholePrompts: the most recent prompts the engine keeps outside the capacity (llama.cpp's
  // slots, one prompt each).
  uint32_t slot_prompts = 0;
};

// What one piece of evidence did.
struct EvidenceOutcome {
  // The engine had fewer blocks than the tracker claimed at send time.
  bool overestimated = false;
  // The engine had more.
  bool underestimated = false;
  // Entries cut or dropped because the evidence proved them stale.
  size_t stale_entries_cut = 0;
};

struct ReconcileOutcome {
  size_t confirmed = 0;
  size_t removed = 0;
};

class CacheTracker {
 public:
  CacheTracker(prefix::BlockKeyer keyer, CacheTrackerOptions options);

  // (a) `prompt` (node tokens; `text` its prompt text, may be empty) is being sent as request
  // `request` at `now`. Returns the tokens the tracker believed cached before this send (the
  // estimate the evidence is later compared with). `request` must not be pending already.
  // `ns` is the request's cache namespace (engine::EngineRequest::cache_namespace): its keys are
  // those the node routes and gossips with (prefix::AppendNamespacedKeys: one per prompt block,
  // chained from the namespace's header block, which is never held).
  size_t Predict(uint64_t request, std::span<const prefix::TokenId> prompt, std::string text,
                 TimePoint now, uint64_t ns = 0);
  // The same for a prompt already keyed (Keys()).
  size_t Predict(uint64_t request, std::vector<prefix::BlockKey> keys, std::string text,
                 TimePoint now);

  // (b) The engine reported that `reported_tokens` leading tokens (in node tokens) of pending
  // request `request`'s prompt were cached; the whole prompt is cached now. `tolerance_tokens`
  // absorbs counting noise (an engine recomputes the last prompt token; tokenizers differ):
  // reported + tolerance is compared with the estimate. Ends the request's pending state.
  // Unknown requests are ignored (returns an empty outcome).
  EvidenceOutcome ApplyEvidence(uint64_t request, size_t reported_tokens, size_t tolerance_tokens);

  // The request ended without evidence (error, cancel). Its unconfirmed prediction keeps its
  // lease: the engine may have computed the prompt anyway. Unknown requests are ignored.
  void Abandon(uint64_t request);

  // Drops predictions whose lease ended at or before `now` and that no evidence confirmed.
  void ExpireLeases(TimePoint now);

  // (c) For every confirmed entry with text, and every prediction older than its lease:
  // `resident(text)` true confirms it (and refreshes its recency); false removes it when
  // `authoritative`. Entries without text are left alone.
  ReconcileOutcome Reconcile(const std::function<bool(const std::string&)>& resident,
                             bool authoritative, TimePoint now);

  // Forgets everything (the engine restarted or was replaced): kRemoved for every held block.
  void Clear();

  // Evidence-only mode, for when the estimates were found persistently wrong (drift): predictions
  // are no longer held (neither routed on nor gossiped), and evidence holds only the prefix the
  // engine reported cached, not the whole prompt. Turning it on forgets everything held, since
  // it was built on the estimates that failed; turning it off resumes predictions.
  void SetEvidenceOnly(bool on);
  bool evidence_only() const { return evidence_only_; }
  // (d) The engine says it dropped block `key` (vLLM KV events, kv_events_tracking.h): every
  // entry through that block is cut before it. Returns the entries cut. Costs O(log n) per block
  // dropped (the blocks below `key`), however many entries are tracked.
  size_t ForgetBlock(prefix::BlockKey key);

  // Leading tokens of `prompt` the tracker believes cached (a multiple of the block size).
  size_t CachedPrefixTokens(std::span<const prefix::TokenId> prompt, uint64_t ns = 0) const;

  // Appends every block event since the last call, in order, and forgets them.
  void DrainEvents(std::vector<prefix::BlockEvent>& out);
  // Appends kAdded for every held block, parents before children.
  void AppendSnapshot(std::vector<prefix::BlockEvent>& out) const;

  // The capacity the tracked prompts use, as the engine stores them (PromptStorage).
  uint64_t used_tokens() const;
  uint64_t capacity_tokens() const { return options_.capacity_tokens; }
  // Changes the capacity (the engine learned how its tokens compare with the node's); entries
  // beyond it go at the next insertion.
  void SetCapacityTokens(uint64_t tokens) { options_.capacity_tokens = tokens; }
  // Changes CacheTrackerOptions::slot_prompts (the engine listed its slots).
  void SetSlotPrompts(uint32_t slots) { options_.slot_prompts = slots; }
  size_t entries() const { return entries_.size(); }
  size_t pending_requests() const { return pending_.size(); }
  size_t block_tokens() const { return block_tokens_; }
  // The keys of `prompt` in namespace `ns`, as Predict() keys it.
  std::vector<prefix::BlockKey> Keys(std::span<const prefix::TokenId> prompt, uint64_t ns) const;

 private:
  struct Entry {
    std::vector<prefix::BlockKey> keys;
    std::string text;
    bool confirmed = false;
    TimePoint lease_end{};
    // Pending requests that predicted this entry; it does not expire or get evicted meanwhile.
    uint32_t inflight = 0;
    uint64_t last_use = 0;
  };
  struct Pending {
    uint64_t entry = 0;
    std::vector<prefix::BlockKey> keys;
    std::string text;
    size_t estimate_blocks = 0;
  };

  // The entry holding exactly `keys` (created if needed), touched.
  uint64_t Upsert(const std::vector<prefix::BlockKey>& keys, const std::string& text);
  void Touch(uint64_t id, Entry& e);
  void Remove(uint64_t id);
  // Ends a pending request's hold on its entry.
  void Release(const Pending& p);
  // Cuts entry `id` to its first `blocks` keys (removing it when 0 remain or the cut chain
  // duplicates another entry).
  void Truncate(uint64_t id, size_t blocks);
  // Adds a whole chain (from its block 0).
  void AddKeys(std::span<const prefix::BlockKey> keys);
  // Drops one reference to each of `keys` (a tail of a chain), children first.
  void DropKeys(std::span<const prefix::BlockKey> keys);
  void EvictToCapacity(uint64_t keep);
  // kWholePrompts: drops the entries whose chains are strict prefixes of `keys` (llama.cpp keeps
  // only the longer prompt), except those pinned by a request in flight.
  void DropPrefixEntries(std::span<const prefix::BlockKey> keys);
  // The ids of the entries whose chains pass through held block `key`, ascending.
  std::vector<uint64_t> EntriesThrough(prefix::BlockKey key) const;

  prefix::BlockKeyer keyer_;
  CacheTrackerOptions options_;
  size_t block_tokens_;
  uint64_t next_id_ = 1;
  uint64_t tick_ = 0;
  std::map<uint64_t, Entry> entries_;
  // The sum of the entries' chain lengths.
  uint64_t entry_blocks_ = 0;
  std::unordered_map<prefix::BlockKey, uint64_t> by_last_key_;
  HeldBlocks held_;
  std::set<std::pair<prefix::BlockKey, prefix::BlockKey>> children_;  // (parent, child)
  std::set<std::pair<uint64_t, uint64_t>> lru_;
  std::unordered_map<uint64_t, Pending> pending_;
  bool evidence_only_ = false;
};

}  // namespace hearsay::upstream
