// KvEventsTracking: the fourth source of cache knowledge for an OpenAiEngine fronting vLLM: the
// engine's own KV-cache events (KvEventView), combined with the engine's estimate (CacheTracker:
// prediction, evidence, reconciliation).
//
// What the node routes on and gossips is the union of both: a block is held when the events say
// the engine stored it, or when the estimate holds it (a prediction not yet confirmed by a
// BlockStored, evidence). Events are authoritative where they speak: a block the events remove
// (BlockRemoved, AllBlocksCleared) is also cut from the estimate, so neither a prediction nor old
// evidence keeps claiming it. A Reset (events lost for good) drops only the event view; the
// estimate goes on alone until new events rebuild the view.
//
// Key agreement. The events are keyed with the node's keyer over the engine's token ids, so they
// meet the router's keys only when the node tokenizes with the engine's tokenizer and the block
// sizes agree. stats().stored_matching_estimate counts stored blocks the estimate already held
// (a request the node sent, now confirmed by the engine): when blocks keep arriving and none
// match, the keys disagree, which the node logs loudly (keys_disagree()).
//
// Ownership: borrows the engine, which must outlive this. Thread-safety: core thread only.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "hearsay/prefix/block_event.h"
#include "hearsay/prefix/block_keys.h"
#include "hearsay/upstream/kv_event_view.h"
#include "hearsay/upstream/kv_events_decoder.h"
#include "hearsay/upstream/openai_engine.h"

namespace hearsay::upstream {

struct KvEventsTrackingStats {
  uint64_t estimate_blocks_cut = 0;       // estimate blocks removed because the events removed them
  uint64_t estimate_clears = 0;           // AllBlocksCleared applied to the estimate
  uint64_t stored_matching_estimate = 0;  // stored blocks whose key the estimate held
};

class KvEventsTracking {
 public:
  // Blocks stored without any matching the estimate before keys_disagree() turns true.
  static constexpr uint64_t kDisagreeAfterBlocks = 256;

  KvEventsTracking(OpenAiEngine& engine, prefix::BlockKeyer keyer, KvEventViewOptions options);

  // One batch from the subscriber, in sequence order.
  void OnBatch(const KvEventBatch& batch);
  // The subscriber lost events for good: drop the event view.
  void OnReset(const std::string& reason);

  // engine::Engine's cache methods, over the union of the view and the engine's estimate.
  size_t CachedPrefixTokens(std::span<const prefix::TokenId> prompt) const;
  void DrainCacheEvents(std::vector<prefix::BlockEvent>& out);
  void AppendCacheSnapshot(std::vector<prefix::BlockEvent>& out) const;

  const KvEventView& view() const { return view_; }
  const KvEventsTrackingStats& stats() const { return stats_; }
  // True once many blocks were stored and none of them matched a key the estimate held.
  bool keys_disagree() const {
    return view_.stats().stored_blocks >= kDisagreeAfterBlocks &&
           stats_.stored_matching_estimate == 0;
  }

 private:
  static constexpr uint8_t kEstimate = 1;
  static constexpr uint8_t kEvents = 2;
  struct Held {
    uint8_t sources = 0;
    uint32_t index = 0;
  };

  // Moves `source`'s events into the union and emits the union's own changes.
  void Merge(uint8_t source, const std::vector<prefix::BlockEvent>& in,
             std::vector<prefix::BlockEvent>& out);

  OpenAiEngine& engine_;
  prefix::BlockKeyer keyer_;
  KvEventView view_;
  std::unordered_map<prefix::BlockKey, Held> held_;
  std::vector<prefix::BlockEvent> pending_;  // union events not drained yet
  KvEventsTrackingStats stats_;
  bool warned_disagree_ = false;
};

}  // namespace hearsay::upstream
