// OpenAiEngine's prefix holding: see OpenAiEngineOptions::prefix_hold_tokens.
//
// llama.cpp gives each request a slot of its own and skips busy slots when it looks for the one
// holding the longest prefix of a prompt, so two requests for one new prefix sent together both
// compute it, side by side, each slowing the other. Held until the first ends, the second takes
// its freed slot and computes only its own suffix. While the first computes the prefix, waiting
// for it costs less than computing it beside it, so the hold lasts until the first has its first
// token (prefix_hold_max at most: an engine that never answers). The slot stays busy after that
// for the first's output, and waiting for it is worth no more than computing the prefix again:
// from then on the hold lasts at most the shared part's prefill time at the measured speed.
#include <algorithm>

#include "hearsay/upstream/openai_engine.h"

namespace hearsay::upstream {

using engine::RequestId;

OpenAiEngine::Sharing OpenAiEngine::SharedWithEarlier(const Live& r) const {
  Sharing best;
  for (const auto& [other_id, other] : live_) {
    if (other->order >= r.order || other->keys.empty()) continue;
    const auto mismatch =
        std::mismatch(r.keys.begin(), r.keys.end(), other->keys.begin(), other->keys.end());
    const size_t common =
        static_cast<size_t>(mismatch.first - r.keys.begin()) * tracker_.block_tokens();
    // A prefix the engine held before `other` came is in an idle slot (or its RAM cache) too.
    const size_t reused = common > other->base_tokens ? common - other->base_tokens : 0;
    if (reused > best.tokens) {
      best = {reused, other->base_tokens, !other->held && other->first_sent};
    }
  }
  return best;
}

bool OpenAiEngine::HoldIfShared(RequestId id, Live& r) {
  if (!Holding()) return false;
  r.keys = tracker_.Keys(r.prompt, r.cache_namespace);
  const Sharing sharing = SharedWithEarlier(r);
  if (sharing.tokens < options_.prefix_hold_tokens) return false;
  r.held = true;
  // The prefix past the base is computed by the request it waits for: the next one to share it
  // waits for this one in turn.
  r.base_tokens = sharing.base_tokens;
  r.inherits_base = true;
  // What it expects once sent: Load() counts only the rest as prefill still to come.
  r.estimate = sharing.base_tokens + sharing.tokens;
  held_.push_back(id);
  ++stats_.prefix_holds;
  SetHoldTimer(id, r, options_.prefix_hold_max);
  // While the one ahead computes the prefix, waiting for it beats computing it beside it;
  // once it has, the wait is for its slot, and worth no more than computing the prefix again.
  if (sharing.computed) BoundHolds();
  return true;
}

void OpenAiEngine::SetHoldTimer(RequestId id, Live& r, Duration after) {
  if (r.hold_timer != kNoTimer) scheduler_.Cancel(r.hold_timer);
  r.hold_timer = scheduler_.RunAfter(after, [this, id] {
    auto it = live_.find(id);
    if (it == live_.end() || !it->second->held) return;
    it->second->hold_timer = kNoTimer;
    ++stats_.prefix_holds_at_bound;
    std::erase(held_, id);
    Send(id);
  });
}

void OpenAiEngine::BoundHolds() {
  for (const RequestId id : held_) {
    Live& r = *live_.at(id);
    if (r.hold_bounded) continue;
    const Sharing sharing = SharedWithEarlier(r);
    if (!sharing.computed) continue;
    r.hold_bounded = true;
    if (prefill_speed_.samples() == 0) continue;  // unmeasured: prefix_hold_max stays the bound
    const Duration bound = FromMillis(ExpectedPrefillMs(sharing.tokens, 0));
    if (bound < options_.prefix_hold_max) SetHoldTimer(id, r, bound);
  }
}

void OpenAiEngine::ReleaseHeld() {
  // In submission order: a request sent here is in flight for the held ones after it.
  const std::vector<RequestId> held = held_;
  for (const RequestId id : held) {
    auto it = live_.find(id);
    if (it == live_.end() || !it->second->held) continue;
    Live& r = *it->second;
    if (SharedWithEarlier(r).tokens >= options_.prefix_hold_tokens) continue;
    if (r.hold_timer != kNoTimer) scheduler_.Cancel(r.hold_timer);
    r.hold_timer = kNoTimer;
    std::erase(held_, id);
    ++stats_.prefix_holds_released;
    Send(id);
  }
}

}  // namespace hearsay::upstream
