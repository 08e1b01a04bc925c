// OpenAiEngine's prefix holding: see OpenAiEngineOptions::prefix_hold_tokens.
//
// llama.cpp gives each request a slot of its own and skips busy slots when it looks for the one
// holding the longest prefix of a prompt, so two requests for one new prefix sent together both
// compute it, side by side, each slowing the other. Held until the first ends, the second takes
// its freed slot and computes only its own suffix. The bound keeps a hold from costing more than
// it can save: past the shared prefix's prefill time, computing it again is faster than waiting.
#include <algorithm>

#include "hearsay/upstream/openai_engine.h"

namespace hearsay::upstream {

using engine::RequestId;

size_t OpenAiEngine::SharedWithEarlier(const Live& r) const {
  size_t most = 0;
  for (const auto& [other_id, other] : live_) {
    if (other->order >= r.order || other->keys.empty()) continue;
    const auto mismatch = std::mismatch(r.keys.begin(), r.keys.end(), other->keys.begin(),
                                        other->keys.end());
    most = std::max(most, static_cast<size_t>(mismatch.first - r.keys.begin()));
  }
  return most;
}

bool OpenAiEngine::HoldIfShared(RequestId id, Live& r) {
  if (options_.prefix_hold_tokens == 0 || options_.flavor != UpstreamFlavor::kLlamaCpp) {
    return false;
  }
  r.keys = tracker_.Keys(r.prompt, r.cache_namespace);
  const size_t shared_tokens = SharedWithEarlier(r) * tracker_.block_tokens();
  if (shared_tokens == 0 || shared_tokens < options_.prefix_hold_tokens) return false;
  const double ms_per_token = prefill_speed_.value();
  const Duration bound =
      ms_per_token > 0
          ? std::min(options_.prefix_hold_max,
                     FromMillis(ms_per_token * static_cast<double>(shared_tokens)))
          : options_.prefix_hold_max;
  r.held = true;
  // What it expects once sent: Load() counts only the rest as prefill still to come.
  r.estimate = shared_tokens;
  held_.push_back(id);
  ++stats_.prefix_holds;
  r.hold_timer = scheduler_.RunAfter(bound, [this, id] {
    auto it = live_.find(id);
    if (it == live_.end() || !it->second->held) return;
    it->second->hold_timer = kNoTimer;
    ++stats_.prefix_holds_at_bound;
    std::erase(held_, id);
    Send(id);
  });
  return true;
}

void OpenAiEngine::ReleaseHeld() {
  // In submission order: a request sent here is in flight for the held ones after it.
  const std::vector<RequestId> held = held_;
  for (const RequestId id : held) {
    auto it = live_.find(id);
    if (it == live_.end() || !it->second->held) continue;
    Live& r = *it->second;
    if (SharedWithEarlier(r) * tracker_.block_tokens() >= options_.prefix_hold_tokens) continue;
    if (r.hold_timer != kNoTimer) scheduler_.Cancel(r.hold_timer);
    r.hold_timer = kNoTimer;
    std::erase(held_, id);
    ++stats_.prefix_holds_released;
    Send(id);
  }
}

}  // namespace hearsay::upstream
