#include "hearsay/engine/sim_engine.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "hearsay/common/check.h"

namespace hearsay::engine {
namespace {

// Iterations whose prefill samples the measured prefill speed's median is taken over.
constexpr size_t kSpeedWindow = 32;

// SplitMix64 finalizer: synthetic output tokens, a pure function of (request id, index).
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The context a request's first `tokens` tokens give attention, without its namespace block
// (`ns_len` tokens): the block is a header that keeps namespaces apart in the cache, and costs no
// compute, as a real engine mixes a namespace (vLLM's cache_salt) into its block hashes instead of
// holding tokens for it. A namespaced prompt then costs what the same prompt costs unnamespaced.
uint64_t PastHeader(uint64_t tokens, uint32_t ns_len) {
  return tokens > ns_len ? tokens - ns_len : 0;
}

}  // namespace

Result<std::unique_ptr<SimEngine>> SimEngine::Create(Scheduler& scheduler,
                                                     const SimEngineOptions& options,
                                                     prefix::BlockKeyer keyer) {
  HEARSAY_RETURN_IF_ERROR(CostModel::Create(options.cost).status());
  if (options.token_budget == 0) return InvalidArgumentError("token_budget must be >= 1");
  if (options.max_running == 0) return InvalidArgumentError("max_running must be >= 1");
  if (options.kv_capacity_tokens == 0) {
    return InvalidArgumentError("kv_capacity_tokens must be >= 1");
  }
  if (options.kv_capacity_tokens > UINT32_MAX) {
    return InvalidArgumentError("kv_capacity_tokens must be < 2^32");
  }
  if (!(options.jitter >= 0 && options.jitter <= 2)) {
    return InvalidArgumentError("jitter must be in [0, 2]");
  }
  return std::unique_ptr<SimEngine>(new SimEngine(scheduler, options, std::move(keyer)));
}

SimEngine::SimEngine(Scheduler& scheduler, const SimEngineOptions& options,
                     prefix::BlockKeyer keyer)
    : scheduler_(scheduler),
      options_(options),
      cost_(options.cost),
      rng_(options.seed),
      tree_(std::move(keyer),
            prefix::RadixTreeOptions{.capacity_tokens = options.kv_capacity_tokens,
                                     .namespace_headers = true}),
      prefill_speed_(kSpeedWindow),
      decode_speed_(kSpeedWindow) {
  if (options.cache_layout == CacheLayout::kSlots) {
    slot_cache_ = std::make_unique<SlotCache>(
        tree_.keyer(), SlotCacheOptions{.slots = options.max_running,
                                        .capacity_tokens = options.kv_capacity_tokens});
  }
}

SimEngine::~SimEngine() {
  if (timer_ != kNoTimer) scheduler_.Cancel(timer_);
  timer_ = kNoTimer;
  if (options_.host && busy_) options_.host->End(&seat_, scheduler_.clock().Now());
}

Status SimEngine::Submit(EngineRequest request, EngineObserver* observer) {
  if (observer == nullptr) return InvalidArgumentError("observer must not be null");
  if (request.prompt.empty()) return InvalidArgumentError("prompt must not be empty");
  if (request.max_output_tokens == 0) return InvalidArgumentError("max_output_tokens must be >= 1");
  const uint64_t total = request.prompt.size() + uint64_t{request.max_output_tokens};
  const uint64_t ns_tokens = request.cache_namespace != 0 ? tree_.keyer().tokens_per_block() : 0;
  if (options_.max_context_tokens != 0 && total > options_.max_context_tokens) {
    return InvalidArgumentError(
        "prompt (" + std::to_string(request.prompt.size()) + " tokens) plus max_output_tokens (" +
        std::to_string(request.max_output_tokens) + ") exceeds the context limit of " +
        std::to_string(options_.max_context_tokens) + " tokens");
  }
  if (total + ns_tokens > options_.kv_capacity_tokens) {
    return ResourceExhaustedError(
        "prompt (" + std::to_string(request.prompt.size()) + " tokens) plus max_output_tokens (" +
        std::to_string(request.max_output_tokens) + ") can never fit the KV cache of " +
        std::to_string(options_.kv_capacity_tokens) + " tokens");
  }
  if (id_to_slot_.count(request.id) != 0) {
    return AlreadyExistsError("request id " + std::to_string(request.id) + " is still live");
  }

  const uint32_t slot = AllocSlot();
  Slot& s = slots_[slot];
  s.id = request.id;
  s.observer = observer;
  if (request.cache_namespace != 0) {
    s.tokens = prefix::NamespaceBlock(request.cache_namespace, tree_.keyer().tokens_per_block());
    s.tokens.insert(s.tokens.end(), request.prompt.begin(), request.prompt.end());
  } else {
    s.tokens = std::move(request.prompt);
  }
  s.ns_len = static_cast<uint32_t>(ns_tokens);
  s.scripted = std::move(request.scripted_output);
  s.prompt_len = static_cast<uint32_t>(s.tokens.size());
  s.max_output = request.max_output_tokens;
  s.cached = s.computed = s.chunk = s.generated = s.pinned_len = 0;
  s.pin = {};
  s.reserved = 0;
  // An estimate for the load report only; admission matches again.
  const uint32_t hit =
      std::min<uint32_t>(static_cast<uint32_t>(PeekCache(s.tokens)), s.prompt_len - 1);
  s.est_new = s.prompt_len - hit;
  s.est_work_ms = cost_.PrefillWorkMs(s.est_new, PastHeader(hit, s.ns_len));
  pending_tokens_ += s.est_new;
  pending_work_ms_ += s.est_work_ms;
  s.submitted = scheduler_.clock().Now();
  s.state = State::kWaiting;
  s.cancelled = false;
  id_to_slot_.emplace(s.id, slot);
  PushWaiting(slot);
  Wake();
  return OkStatus();
}

bool SimEngine::Cancel(RequestId id) {
  auto it = id_to_slot_.find(id);
  if (it == id_to_slot_.end()) return false;
  const uint32_t slot = it->second;
  id_to_slot_.erase(it);
  Slot& s = slots_[slot];
  s.cancelled = true;
  s.observer = nullptr;
  switch (s.state) {
    case State::kWaiting:
      UnlinkWaiting(slot);
      pending_tokens_ -= s.est_new;
      pending_work_ms_ -= s.est_work_ms;
      FreeSlot(slot);
      break;
    case State::kRunning:
      // Its unscheduled prefill no longer counts; its KV goes when its iteration ends (the GPU
      // is computing it anyway), in FinishIteration or the next StartIteration.
      if (s.computed + s.chunk < s.prompt_len) {
        const uint32_t left = s.prompt_len - s.computed - s.chunk;
        pending_tokens_ -= left;
        pending_work_ms_ -= cost_.PrefillWorkMs(left, PastHeader(s.computed + s.chunk, s.ns_len));
      }
      --running_live_;
      break;
    case State::kDone:
      // Finished in the iteration whose callbacks are being delivered: drop the rest of them.
      break;
    case State::kFree:
      HEARSAY_CHECK_MSG(false, "live id maps to a free slot");
  }
  if (pending_tokens_ == 0) pending_work_ms_ = 0;
  return true;
}

void SimEngine::SetSlowdown(double factor) {
  if (!std::isfinite(factor) || factor <= 0) return;
  CostParams p = options_.cost;
  p.t0_ms *= factor;
  p.a_ms_per_token *= factor;
  p.b_ms_per_token2 *= factor;
  p.d1_ms_per_seq *= factor;
  p.d2_ms_per_ctx_token *= factor;
  // The queued work was priced at the old speed.
  pending_work_ms_ *= factor / slowdown_;
  slowdown_ = factor;
  cost_ = CostModel(p);
}

EngineLoad SimEngine::Load() const {
  EngineLoad l;
  l.waiting_requests = waiting_;
  l.running_requests = running_live_;
  if (slot_cache_) {
    // The host cache; the slots' KV is their own context.
    l.kv_used_tokens = slot_cache_->cached_tokens();
  } else {
    l.kv_used_tokens = tree_.size_tokens() + reserved_total_;
    l.kv_pinned_tokens = tree_.pinned_tokens() + reserved_total_;
  }
  l.kv_capacity_tokens = options_.kv_capacity_tokens;
  l.waiting_prefill_tokens = pending_tokens_;
  // Before its first prefill the engine knows only its configured speed: the preset's marginal
  // cost per token is the starting point peers price it with (unless it plays an upstream).
  l.prefill_ms_per_token = prefill_speed_.samples() > 0   ? prefill_speed_.value()
                           : options_.report_preset_speed ? cost_.params().a_ms_per_token
                                                          : 0;
  l.decode_ms_per_token = decode_speed_.value();
  double wait_ms =
      cost_.QueueWaitMs(pending_tokens_, std::max(0.0, pending_work_ms_), options_.token_budget,
                        shape_.decode_batch, shape_.decode_context);
  if (busy_) wait_ms += ToMillis(iteration_end_ - scheduler_.clock().Now());
  l.estimated_queue_wait = FromMillis(wait_ms);
  return l;
}

size_t SimEngine::PeekCache(std::span<const TokenId> tokens) const {
  return slot_cache_ ? slot_cache_->Peek(tokens) : tree_.Peek(tokens);
}

size_t SimEngine::CachedPrefixTokens(std::span<const TokenId> prompt) const {
  return PeekCache(prompt);
}

size_t SimEngine::CachedPrefixTokens(std::span<const TokenId> prompt, uint64_t ns) const {
  if (ns == 0) return PeekCache(prompt);
  std::vector<TokenId> all = prefix::NamespaceBlock(ns, tree_.keyer().tokens_per_block());
  const size_t ns_len = all.size();
  all.insert(all.end(), prompt.begin(), prompt.end());
  const size_t hit = PeekCache(all);
  return hit > ns_len ? hit - ns_len : 0;
}

void SimEngine::DrainCacheEvents(std::vector<prefix::BlockEvent>& out) {
  if (out.empty()) {
    out.swap(events_);
  } else {
    out.insert(out.end(), events_.begin(), events_.end());
  }
  events_.clear();
}

void SimEngine::AppendCacheSnapshot(std::vector<prefix::BlockEvent>& out) const {
  if (slot_cache_) {
    slot_cache_->AppendHeldBlocks(&out);
    return;
  }
  tree_.AppendHeldBlocks(&out);
}

uint32_t SimEngine::AllocSlot() {
  if (free_head_ != kNil) {
    const uint32_t slot = free_head_;
    free_head_ = slots_[slot].next;
    return slot;
  }
  slots_.emplace_back();
  return static_cast<uint32_t>(slots_.size() - 1);
}

void SimEngine::FreeSlot(uint32_t slot) {
  Slot& s = slots_[slot];
  s.state = State::kFree;
  s.observer = nullptr;
  s.tokens.clear();
  s.scripted.clear();
  s.prev = kNil;
  s.next = free_head_;
  free_head_ = slot;
}

void SimEngine::PushWaiting(uint32_t slot) {
  Slot& s = slots_[slot];
  s.prev = tail_;
  s.next = kNil;
  if (tail_ == kNil) {
    head_ = slot;
  } else {
    slots_[tail_].next = slot;
  }
  tail_ = slot;
  ++waiting_;
}

void SimEngine::UnlinkWaiting(uint32_t slot) {
  Slot& s = slots_[slot];
  if (s.prev == kNil) {
    head_ = s.next;
  } else {
    slots_[s.prev].next = s.next;
  }
  if (s.next == kNil) {
    tail_ = s.prev;
  } else {
    slots_[s.next].prev = s.prev;
  }
  s.prev = s.next = kNil;
  --waiting_;
}

void SimEngine::Wake() {
  if (busy_ || timer_ != kNoTimer) return;
  // A zero-delay timer rather than Post, so every request submitted at this instant joins the
  // first batch and the destructor can cancel it.
  timer_ = scheduler_.RunAfter(Duration::zero(), [this] {
    timer_ = kNoTimer;
    StartIteration();
  });
}

void SimEngine::StartIteration() {
  HEARSAY_CHECK(!busy_);
  shape_ = IterationShape{};
  batch_.clear();
  uint32_t budget = options_.token_budget;

  // Drop requests cancelled since the last iteration ended, then decode steps first (they never
  // stall behind prefills), then ongoing chunked prefills, in admission order.
  size_t kept = 0;
  for (uint32_t slot : running_) {
    if (slots_[slot].cancelled) {
      Release(slots_[slot]);
      FreeSlot(slot);
    } else {
      running_[kept++] = slot;
    }
  }
  running_.resize(kept);
  for (uint32_t slot : running_) {
    Slot& s = slots_[slot];
    if (s.computed < s.prompt_len || budget == 0) continue;
    shape_.AddDecode(PastHeader(uint64_t{s.prompt_len} + s.generated, s.ns_len));
    s.chunk = 0;
    s.in_batch = true;
    --budget;
    batch_.push_back(slot);
  }
  for (uint32_t slot : running_) {
    Slot& s = slots_[slot];
    if (s.computed >= s.prompt_len || budget == 0) continue;
    s.chunk = std::min(budget, s.prompt_len - s.computed);
    shape_.AddPrefill(s.chunk, PastHeader(s.computed, s.ns_len));
    pending_tokens_ -= s.chunk;
    pending_work_ms_ -= cost_.PrefillWorkMs(s.chunk, PastHeader(s.computed, s.ns_len));
    s.in_batch = true;
    budget -= s.chunk;
    batch_.push_back(slot);
  }
  // Admit waiting requests, strictly in order.
  notes_.clear();
  while (head_ != kNil && budget > 0 && running_.size() < options_.max_running) {
    const uint32_t slot = head_;
    if (!TryAdmit(slot, budget)) break;
  }
  if (pending_tokens_ == 0) pending_work_ms_ = 0;

  if (batch_.empty()) {
    // Nothing runnable (everything left was cancelled): go idle.
    shape_ = IterationShape{};
    HEARSAY_CHECK(head_ == kNil);
    return;
  }
  double ms = cost_.IterationMs(shape_);
  if (options_.jitter > 0) {
    const double sigma = options_.jitter;
    ms *= rng_.LogNormal(-sigma * sigma / 2, sigma);
  }
  const Duration d = FromMillis(ms);
  iteration_ms_ = ToMillis(d);
  busy_ = true;
  iteration_start_ = scheduler_.clock().Now();
  if (options_.host) {
    // The host sets (and moves) the end as other engines on it start and finish iterations.
    options_.host->Begin(&seat_, iteration_ms_, iteration_start_, shape_.prefill_tokens > 0);
  } else {
    ScheduleEnd(d);
  }
  Deliver();
}

void SimEngine::ScheduleEnd(Duration left) {
  if (timer_ != kNoTimer) scheduler_.Cancel(timer_);
  iteration_end_ = scheduler_.clock().Now() + left;
  timer_ = scheduler_.RunAfter(left, [this] {
    timer_ = kNoTimer;
    FinishIteration();
  });
}

bool SimEngine::TryAdmit(uint32_t slot, uint32_t& budget) {
  Slot& s = slots_[slot];
  uint32_t hit = 0;
  uint64_t need = 0;  // KV reserved in the shared capacity
  if (slot_cache_) {
    // A free slot is certain (running_ < max_running = slots) and holds its own context.
    const SlotCache::Take take = slot_cache_->Acquire(s.tokens, &events_);
    s.kv_slot = take.slot;
    hit = static_cast<uint32_t>(take.cached);
  } else {
    // Pin the hit first so that making room cannot evict it.
    const prefix::PinResult pr = tree_.Pin(s.tokens, ++tick_);
    s.pin = pr.handle;
    s.pinned_len = static_cast<uint32_t>(pr.tokens);
    hit = std::min<uint32_t>(s.pinned_len, s.prompt_len - 1);
    need = uint64_t{s.prompt_len - hit} + s.max_output;
    if (!MakeRoom(need)) {
      UnpinPath(s);
      return false;
    }
  }
  UnlinkWaiting(slot);
  pending_tokens_ -= s.est_new;
  pending_work_ms_ -= s.est_work_ms;
  s.state = State::kRunning;
  s.cached = s.computed = hit;
  s.reserved = need;
  reserved_total_ += need;
  s.chunk = std::min(budget, s.prompt_len - hit);
  budget -= s.chunk;
  // Work left after this iteration's chunk stays pending.
  const uint32_t left = s.prompt_len - hit - s.chunk;
  pending_tokens_ += left;
  pending_work_ms_ += cost_.PrefillWorkMs(left, PastHeader(hit + s.chunk, s.ns_len));
  shape_.AddPrefill(s.chunk, PastHeader(hit, s.ns_len));
  s.in_batch = true;
  running_.push_back(slot);
  ++running_live_;
  batch_.push_back(slot);
  notes_.push_back({slot, NoteKind::kAdmitted, 0});
  return true;
}

void SimEngine::FinishIteration() {
  HEARSAY_CHECK(busy_);
  ++iterations_;
  if (options_.host) {
    // The iteration took what the shared host left it.
    const TimePoint now = scheduler_.clock().Now();
    options_.host->End(&seat_, now);
    iteration_ms_ = ToMillis(now - iteration_start_);
  }
  if (shape_.prefill_tokens > 0) {
    // The iteration's measured time over the model's, times the model's cost per new token: the
    // engine's speed as the model's marginal cost per token, whatever the iteration's shape (as
    // the upstream engine takes it: upstream/openai_engine_options.h, prefill_model).
    const double modelled = cost_.IterationMs(shape_);
    if (modelled > 0) prefill_speed_.Add(iteration_ms_ / modelled * cost_.params().a_ms_per_token);
  } else if (shape_.decode_batch > 0) {
    decode_speed_.Add(iteration_ms_);
  }

  notes_.clear();
  bool any_done = false;
  for (uint32_t slot : batch_) {
    Slot& s = slots_[slot];
    s.in_batch = false;
    if (s.cancelled) continue;  // released at the next StartIteration
    if (s.computed < s.prompt_len) {
      s.computed += s.chunk;
      s.chunk = 0;
      if (s.computed < s.prompt_len) {
        InsertComputed(s, s.computed, /*keep_pin=*/true);
        continue;
      }
      // The pass that computed the last prompt token also produced the first output token.
      const TokenId t = OutputToken(s, 0);
      s.tokens.push_back(t);
      s.generated = 1;
      notes_.push_back({slot, NoteKind::kFirstToken, t});
      // Unless this was also the last token, the prompt is cached now; a finished request's
      // prompt and output go in together below, in one walk.
      if (s.generated < s.max_output) InsertComputed(s, s.prompt_len, /*keep_pin=*/true);
    } else {
      const TokenId t = OutputToken(s, s.generated);
      s.tokens.push_back(t);
      ++s.generated;
      notes_.push_back({slot, NoteKind::kToken, t});
    }
    if (s.generated == s.max_output) {
      // Cache the generated tokens behind the prompt, then let go of everything.
      InsertComputed(s, static_cast<uint32_t>(s.tokens.size()), /*keep_pin=*/false);
      Release(s);
      s.state = State::kDone;
      --running_live_;
      any_done = true;
      notes_.push_back({slot, NoteKind::kComplete, 0});
    }
  }
  batch_.clear();
  Deliver();

  // Free what finished (or was cancelled during delivery and is done anyway).
  if (any_done) {
    size_t kept = 0;
    for (uint32_t slot : running_) {
      Slot& s = slots_[slot];
      if (s.state == State::kDone) {
        FreeSlot(slot);
      } else {
        running_[kept++] = slot;
      }
    }
    running_.resize(kept);
  }
  // busy_ stayed set during delivery so that a Submit from a callback does not wake a second
  // iteration; the next one starts here.
  busy_ = false;
  shape_ = IterationShape{};
  if (!running_.empty() || head_ != kNil) StartIteration();
}

void SimEngine::Deliver() {
  for (size_t i = 0; i < notes_.size(); ++i) {
    const Note n = notes_[i];
    const Slot& s = slots_[n.slot];
    if (s.cancelled) continue;
    EngineObserver* obs = s.observer;
    const RequestId id = s.id;
    switch (n.kind) {
      case NoteKind::kAdmitted:
        obs->OnAdmitted(id, Admission{s.prompt_len - s.ns_len, NetCached(s),
                                      scheduler_.clock().Now() - s.submitted});
        break;
      case NoteKind::kFirstToken:
        obs->OnFirstToken(id, FirstToken{s.prompt_len - s.ns_len, NetCached(s), n.token});
        break;
      case NoteKind::kToken:
        obs->OnTokens(id, std::span<const TokenId>(&n.token, 1));
        break;
      case NoteKind::kComplete:
        // The id is free for reuse from the terminal callback on.
        id_to_slot_.erase(id);
        obs->OnComplete(id, Usage{s.prompt_len - s.ns_len, s.generated, NetCached(s)});
        break;
    }
    // `s` may dangle now: callbacks can Submit and grow slots_.
  }
  notes_.clear();
}

void SimEngine::UnpinPath(Slot& s) {
  if (!s.pin.valid()) return;
  const Status st = tree_.Unpin(s.pin);
  HEARSAY_CHECK_MSG(st.ok(), st.ToString());
  s.pin = {};
  s.pinned_len = 0;
}

void SimEngine::InsertComputed(Slot& s, uint32_t len, bool keep_pin) {
  if (slot_cache_) {
    slot_cache_->Extend(s.kv_slot, std::span<const TokenId>(s.tokens.data(), len), &events_);
    return;
  }
  const uint32_t covered = std::max(s.pinned_len, s.cached);
  HEARSAY_CHECK(len >= covered);
  const uint32_t added = len - covered;
  // The reservation guarantees room: the tree never has to evict (or refuse) here.
  const prefix::InsertResult r =
      tree_.Insert(std::span<const TokenId>(s.tokens.data(), len), ++tick_, &events_, keep_pin);
  HEARSAY_CHECK(r.cached_tokens == len && r.evicted_tokens == 0);
  UnpinPath(s);
  if (keep_pin) {
    s.pin = r.pin;
    s.pinned_len = len;
  }
  HEARSAY_CHECK(s.reserved >= added);
  s.reserved -= added;
  reserved_total_ -= added;
}

void SimEngine::Release(Slot& s) {
  if (s.kv_slot != kNil) {
    slot_cache_->Release(s.kv_slot, ++tick_);
    s.kv_slot = kNil;
  }
  UnpinPath(s);
  reserved_total_ -= s.reserved;
  s.reserved = 0;
}

bool SimEngine::MakeRoom(uint64_t tokens) {
  const uint64_t cap = options_.kv_capacity_tokens;
  const uint64_t used = tree_.size_tokens() + reserved_total_;
  if (used + tokens <= cap) return true;
  const uint64_t short_by = used + tokens - cap;
  // Evict only if it can succeed: a waiting request must not flush the cache for nothing.
  if (tree_.evictable_tokens() < short_by) return false;
  tree_.Evict(short_by, &events_);
  return tree_.size_tokens() + reserved_total_ + tokens <= cap;
}

TokenId SimEngine::OutputToken(const Slot& s, uint32_t index) const {
  if (index < s.scripted.size()) return s.scripted[index];
  return static_cast<TokenId>(Mix(s.id * 0x100000001b3ULL + index) >> 40);
}

}  // namespace hearsay::engine
