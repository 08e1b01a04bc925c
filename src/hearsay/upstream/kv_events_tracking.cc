// KvEventsTracking: see kv_events_tracking.h.
#include "hearsay/upstream/kv_events_tracking.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace hearsay::upstream {

using prefix::BlockEvent;
using prefix::BlockKey;

KvEventsTracking::KvEventsTracking(OpenAiEngine& engine, prefix::BlockKeyer keyer,
                                   KvEventViewOptions options)
    : engine_(engine), keyer_(keyer), view_(std::move(keyer), options) {}

void KvEventsTracking::Merge(uint8_t source, const std::vector<BlockEvent>& in,
                             std::vector<BlockEvent>& out) {
  for (const BlockEvent& e : in) {
    if (e.kind == BlockEvent::Kind::kAdded) {
      Held& h = held_[e.key];
      if (h.sources == 0) {
        h.index = e.block_index;
        out.push_back(e);
      }
      h.sources |= source;
    } else {
      auto it = held_.find(e.key);
      if (it == held_.end()) continue;
      it->second.sources &= static_cast<uint8_t>(~source);
      if (it->second.sources == 0) {
        out.push_back({BlockEvent::Kind::kRemoved, e.key, it->second.index});
        held_.erase(it);
      }
    }
  }
}

void KvEventsTracking::OnBatch(const KvEventBatch& batch) {
  std::vector<BlockEvent> events;
  engine_.DrainCacheEvents(events);  // the estimate as of now, so matches can be counted
  Merge(kEstimate, events, pending_);

  std::vector<BlockKey> removed;
  bool cleared = false;
  view_.Apply(batch, &removed, &cleared);
  events.clear();
  view_.DrainEvents(events);
  for (const BlockEvent& e : events) {
    if (e.kind != BlockEvent::Kind::kAdded) continue;
    auto it = held_.find(e.key);
    if (it != held_.end() && (it->second.sources & kEstimate) != 0) {
      ++stats_.stored_matching_estimate;
    }
  }
  Merge(kEvents, events, pending_);

  // Events are authoritative: what the engine dropped, the estimate drops too.
  CacheTracker& tracker = engine_.mutable_tracker();
  if (cleared) {
    ++stats_.estimate_clears;
    tracker.Clear();
  }
  for (BlockKey key : removed) {
    auto it = held_.find(key);
    if (it == held_.end() || (it->second.sources & kEstimate) == 0) continue;
    if (tracker.ForgetBlock(key) > 0) ++stats_.estimate_blocks_cut;
  }
  events.clear();
  engine_.DrainCacheEvents(events);
  Merge(kEstimate, events, pending_);

  if (keys_disagree() && !warned_disagree_) {
    warned_disagree_ = true;
    spdlog::error(
        "kv events: {} blocks stored by the engine and none matches a prompt this node sent: "
        "the node's block keys do not match the engine's blocks (block size or tokenizer "
        "differ; see docs/engines.md). The event view will not help routing.",
        view_.stats().stored_blocks);
  }
}

void KvEventsTracking::OnReset(const std::string& reason) {
  spdlog::warn("kv events: reset ({}); {} engine blocks dropped from the view", reason,
               view_.blocks());
  view_.Reset();
  std::vector<BlockEvent> events;
  view_.DrainEvents(events);
  Merge(kEvents, events, pending_);
}

size_t KvEventsTracking::CachedPrefixTokens(std::span<const prefix::TokenId> prompt) const {
  const size_t estimate = engine_.CachedPrefixTokens(prompt);
  if (view_.held_keys() == 0) return estimate;
  return std::max(estimate, view_.CachedPrefixTokens(keyer_.Keys(prompt)));
}

void KvEventsTracking::DrainCacheEvents(std::vector<BlockEvent>& out) {
  std::vector<BlockEvent> events;
  engine_.DrainCacheEvents(events);
  Merge(kEstimate, events, pending_);
  out.insert(out.end(), pending_.begin(), pending_.end());
  pending_.clear();
}

void KvEventsTracking::AppendCacheSnapshot(std::vector<BlockEvent>& out) const {
  std::vector<BlockEvent> held;
  held.reserve(held_.size());
  for (const auto& [key, h] : held_) held.push_back({BlockEvent::Kind::kAdded, key, h.index});
  std::sort(held.begin(), held.end(), [](const BlockEvent& a, const BlockEvent& b) {
    return a.block_index != b.block_index ? a.block_index < b.block_index : a.key < b.key;
  });
  out.insert(out.end(), held.begin(), held.end());
}

}  // namespace hearsay::upstream
