// SlotCache: llama.cpp's prompt cache as llama-server keeps it (tools/server: the slots and
// server_prompt_cache), the simulated engine's cache when it plays a llama-server.
//
// What it models. A llama-server runs `slots` requests at once, each in a slot that keeps the KV
// of its last sequence (prompt and generated tokens) after the request ends. Beside the slots, a
// host-memory prompt cache (--cache-ram) keeps whole sequences, oldest saved first out. Nothing is
// shared between two stored sequences: each costs its full length, even where they start alike.
// When a request starts (Acquire), llama-server:
//   1. picks an idle slot: the one whose sequence shares the largest fraction of the new prompt
//      (longest common prefix over the prompt's length), if above `similarity`; else the least
//      recently released one;
//   2. when it fell back to the least recent slot, or the picked slot keeps less than half of its
//      own sequence, saves the slot's sequence in the host cache (unless a cached sequence already
//      contains it; cached sequences it contains are dropped; the oldest go until it fits; one
//      longer than the whole cache is not saved), then moves into the slot the cached sequence
//      that keeps at least a quarter of itself and beats the slot's own on both the fraction of
//      itself kept and the fraction of the prompt covered, if any (it leaves the cache);
//   3. keeps the slot's common prefix with the prompt (at most all but the prompt's last token,
//      which must be computed to produce the first output token): that is the request's cache hit;
//   4. with `save_idle_slots` (llama-server's --cache-idle-slots, on by default), saves every other
//      idle slot's sequence in the host cache as in 2, a copy beside the slot's own KV. So the
//      slots add little room of their own: what they hold is mostly in the host cache too.
// The computed prompt and then the generated tokens join the slot's sequence (Extend).
//
// Block events. A block is held while some slot or cached sequence holds all of its tokens (its
// key: prefix/block_keys.h, chained over the sequence from token 0). Every change to the held set
// appends a BlockEvent (kAdded parents first, kRemoved children first), as the radix tree's do.
// A sequence that starts with a namespace block (prefix::NamespaceBlock) is headed: that block is
// held but never reported, and the blocks after it are indexed from 0.
//
// Cost: each operation compares the prompt with every slot and cached sequence (a llama-server
// does the same), so it suits small caches of whole prompts, not a paged cache of millions of
// tokens.
//
// Thread-safety: none; one core thread.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <unordered_map>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/prefix/block_event.h"
#include "hearsay/prefix/block_keys.h"

namespace hearsay::engine {

using prefix::TokenId;

struct SlotCacheOptions {
  // Slots (llama-server -np); >= 1.
  uint32_t slots = 4;
  // The host prompt cache's capacity in tokens (--cache-ram over the KV bytes per token); 0 = no
  // host cache, the slots alone.
  uint64_t capacity_tokens = 16384;
  // llama-server's --slot-prompt-similarity (0.1 by default); 0 = always the least recent slot.
  float similarity = 0.1f;
  // llama-server's --cache-idle-slots (on by default): each start saves the idle slots.
  bool save_idle_slots = true;
};

class SlotCache {
 public:
  SlotCache(prefix::BlockKeyer keyer, const SlotCacheOptions& options);

  struct Take {
    uint32_t slot = 0;
    // Tokens of the prompt whose KV the slot holds now (the request's cache hit).
    size_t cached = 0;
  };
  // Starts a request for `prompt` (not empty) in an idle slot, which becomes busy; requires
  // idle_slots() > 0. Appends the block events of the moves to `events`.
  Take Acquire(std::span<const TokenId> prompt, std::vector<prefix::BlockEvent>* events);
  // The busy slot `slot` now holds `sequence` (its kept prefix, extended by computed tokens).
  void Extend(uint32_t slot, std::span<const TokenId> sequence,
              std::vector<prefix::BlockEvent>* events);
  // The request in `slot` ended; its sequence stays. `tick` orders releases (any monotone count
  // from 1).
  void Release(uint32_t slot, uint64_t tick);

  // The longest common prefix of `prompt` with any slot or cached sequence.
  size_t Peek(std::span<const TokenId> prompt) const;
  // One kAdded event per held block, parents before children.
  void AppendHeldBlocks(std::vector<prefix::BlockEvent>* out) const;

  uint32_t idle_slots() const { return idle_; }
  // Tokens in the host cache and in the slots.
  uint64_t cached_tokens() const { return cached_tokens_; }
  uint64_t slot_tokens() const;
  size_t cached_sequences() const { return cache_.size(); }
  const prefix::BlockKeyer& keyer() const { return keyer_; }

  // Checks the reference counts against the sequences; for tests.
  Status CheckInvariants() const;

 private:
  // One stored sequence and the keys of its full blocks (the namespace header's included).
  struct Sequence {
    std::vector<TokenId> tokens;
    std::vector<prefix::BlockKey> keys;
  };
  struct Slot {
    Sequence seq;
    bool busy = false;
    uint64_t last_release = 0;  // 0: never released
  };
  struct Held {
    uint32_t refs = 0;
    uint32_t index = 0;  // reported block index
  };

  // Picks the idle slot for `prompt`; sets `save` when llama-server would update its cache.
  uint32_t PickSlot(std::span<const TokenId> prompt, bool* save) const;
  // Saves `slot`'s sequence in the host cache, then loads the best cached sequence into it.
  void SwapThroughCache(Slot& slot, std::span<const TokenId> prompt,
                        std::vector<prefix::BlockEvent>* events);
  void Save(const Sequence& seq, std::vector<prefix::BlockEvent>* events);
  // Drops a cached sequence; returns the iterator after it.
  std::deque<Sequence>::iterator DropCached(std::deque<Sequence>::iterator it,
                                            std::vector<prefix::BlockEvent>* events);

  // Counts `seq`'s blocks from `first` on as held by one more sequence.
  void AddRefs(const Sequence& seq, size_t first, std::vector<prefix::BlockEvent>* events);
  // Releases `seq`'s blocks from `first` on, last first.
  void DropRefs(const Sequence& seq, size_t first, std::vector<prefix::BlockEvent>* events);
  // Cuts `seq` to its first `len` tokens.
  void Truncate(Sequence& seq, size_t len, std::vector<prefix::BlockEvent>* events);
  size_t Header(const Sequence& seq) const;

  prefix::BlockKeyer keyer_;
  SlotCacheOptions options_;
  std::vector<Slot> slots_;
  std::deque<Sequence> cache_;  // front: saved longest ago
  uint64_t cached_tokens_ = 0;
  uint32_t idle_ = 0;
  std::unordered_map<prefix::BlockKey, Held> held_;
};

}  // namespace hearsay::engine
