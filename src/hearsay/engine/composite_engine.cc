#include "hearsay/engine/composite_engine.h"

#include <algorithm>

namespace hearsay::engine {

Result<std::unique_ptr<CompositeEngine>> CompositeEngine::Create(std::vector<Child> children) {
  if (children.empty()) return InvalidArgumentError("CompositeEngine: no engines");
  for (const Child& c : children) {
    if (c.engine == nullptr) return InvalidArgumentError("CompositeEngine: a null engine");
  }
  return std::unique_ptr<CompositeEngine>(new CompositeEngine(std::move(children)));
}

void CompositeEngine::SetModels(size_t index, std::vector<std::string> models) {
  children_.at(index).models = std::move(models);
}

size_t CompositeEngine::ChildOf(RequestId id) const {
  auto it = live_.find(id);
  return it == live_.end() ? children_.size() : it->second.child;
}

size_t CompositeEngine::Pick(const EngineRequest& request) const {
  if (request.model.empty()) return 0;
  size_t best = children_.size();
  size_t best_cached = 0;
  uint64_t best_load = 0;
  for (size_t i = 0; i < children_.size(); ++i) {
    const Child& c = children_[i];
    if (std::find(c.models.begin(), c.models.end(), request.model) == c.models.end()) continue;
    const size_t cached = c.engine->CachedPrefixTokens(request.prompt, request.cache_namespace);
    const EngineLoad load = c.engine->Load();
    const uint64_t queued = uint64_t{load.waiting_requests} + load.running_requests;
    if (best == children_.size() || cached > best_cached ||
        (cached == best_cached && queued < best_load)) {
      best = i;
      best_cached = cached;
      best_load = queued;
    }
  }
  return best;
}

Status CompositeEngine::Submit(EngineRequest request, EngineObserver* observer) {
  if (live_.contains(request.id)) {
    return AlreadyExistsError("request " + std::to_string(request.id) + " is live");
  }
  const size_t i = Pick(request);
  if (i == children_.size()) {
    return NotFoundError("no engine of this node serves model '" + request.model + "'");
  }
  const RequestId id = request.id;
  // A child never calls back inside Submit(), so the request is recorded after it accepts.
  HEARSAY_RETURN_IF_ERROR(children_[i].engine->Submit(std::move(request), this));
  live_.emplace(id, Live{i, observer});
  return OkStatus();
}

bool CompositeEngine::Cancel(RequestId id) {
  auto it = live_.find(id);
  if (it == live_.end()) return false;
  const size_t child = it->second.child;
  live_.erase(it);
  return children_[child].engine->Cancel(id);
}

EngineLoad CompositeEngine::Load() const {
  EngineLoad sum;
  double prefill = 0, decode = 0;
  int prefill_n = 0, decode_n = 0;
  bool capacity_unknown = false;
  for (const Child& c : children_) {
    const EngineLoad l = c.engine->Load();
    capacity_unknown |= l.kv_capacity_tokens == 0;
    sum.waiting_requests += l.waiting_requests;
    sum.running_requests += l.running_requests;
    sum.kv_used_tokens += l.kv_used_tokens;
    sum.kv_capacity_tokens += l.kv_capacity_tokens;
    sum.kv_pinned_tokens += l.kv_pinned_tokens;
    sum.waiting_prefill_tokens += l.waiting_prefill_tokens;
    if (l.prefill_ms_per_token > 0) prefill += l.prefill_ms_per_token, ++prefill_n;
    if (l.decode_ms_per_token > 0) decode += l.decode_ms_per_token, ++decode_n;
    sum.estimated_queue_wait = std::max(sum.estimated_queue_wait, l.estimated_queue_wait);
  }
  if (prefill_n > 0) sum.prefill_ms_per_token = prefill / prefill_n;
  if (decode_n > 0) sum.decode_ms_per_token = decode / decode_n;
  // One child's unknown capacity (0) makes the node's unknown too.
  if (capacity_unknown) sum.kv_capacity_tokens = 0;
  return sum;
}

size_t CompositeEngine::CachedPrefixTokens(std::span<const TokenId> prompt) const {
  size_t best = 0;
  for (const Child& c : children_) best = std::max(best, c.engine->CachedPrefixTokens(prompt));
  return best;
}

size_t CompositeEngine::CachedPrefixTokens(std::span<const TokenId> prompt, uint64_t ns) const {
  size_t best = 0;
  for (const Child& c : children_) {
    best = std::max(best, c.engine->CachedPrefixTokens(prompt, ns));
  }
  return best;
}

void CompositeEngine::DrainCacheEvents(std::vector<prefix::BlockEvent>& out) {
  for (Child& c : children_) c.engine->DrainCacheEvents(out);
}

void CompositeEngine::AppendCacheSnapshot(std::vector<prefix::BlockEvent>& out) const {
  for (const Child& c : children_) c.engine->AppendCacheSnapshot(out);
}

EngineObserver* CompositeEngine::ObserverOf(RequestId id) const {
  auto it = live_.find(id);
  return it == live_.end() ? nullptr : it->second.observer;
}

EngineObserver* CompositeEngine::Release(RequestId id) {
  auto it = live_.find(id);
  if (it == live_.end()) return nullptr;
  EngineObserver* o = it->second.observer;
  live_.erase(it);
  return o;
}

void CompositeEngine::OnAdmitted(RequestId id, const Admission& admission) {
  if (EngineObserver* o = ObserverOf(id)) o->OnAdmitted(id, admission);
}

void CompositeEngine::OnFirstToken(RequestId id, const FirstToken& first) {
  if (EngineObserver* o = ObserverOf(id)) o->OnFirstToken(id, first);
}

void CompositeEngine::OnTokens(RequestId id, std::span<const TokenId> tokens) {
  if (EngineObserver* o = ObserverOf(id)) o->OnTokens(id, tokens);
}

void CompositeEngine::OnText(RequestId id, std::string_view text) {
  if (EngineObserver* o = ObserverOf(id)) o->OnText(id, text);
}

// A terminal callback forgets the request first: the observer may submit the same id again.
void CompositeEngine::OnComplete(RequestId id, const Usage& usage) {
  if (EngineObserver* o = Release(id)) o->OnComplete(id, usage);
}

void CompositeEngine::OnError(RequestId id, const Status& status) {
  if (EngineObserver* o = Release(id)) o->OnError(id, status);
}

}  // namespace hearsay::engine
