// SimEngine: a simulated LLM engine with continuous batching, a cost model and a real KV cache of
// finite capacity. The simulator's engine in virtual time, and the daemon's embedded default (no
// GPU needed) in real time: it only acts through the injected Scheduler.
//
// Scheduling (vLLM v1 / Sarathi-Serve style). The engine runs one iteration at a time; each is a
// single forward pass whose duration comes from the CostModel (times an optional seeded jitter),
// scheduled with Scheduler::RunAfter. An iteration is composed, within a budget of
// `token_budget` tokens, from:
//   1. one decode step (1 token) for every running request past its prefill;
//   2. the next prefill chunk of every running request still prefilling (chunked prefill: a prompt
//      longer than what is left of the budget is prefilled over several iterations);
//   3. waiting requests, first come first served, while budget, `max_running` and KV space
//      allow. The queue is head-of-line: when the oldest waiting request does not fit, nobody
//      behind it is admitted (as in vLLM), so FCFS order is kept.
// OnAdmitted is delivered when the iteration that admits a request starts. Everything an
// iteration computes becomes visible when it ends: prompt tokens enter the prefix cache, first
// and decode tokens are reported, finished requests release their KV. So two requests sharing a
// prefix that are admitted into the same iteration both miss on it: neither can reuse KV that is
// not computed yet (vLLM behaves the same way).
//
// KV cache. A prefix::RadixTree with capacity `kv_capacity_tokens` indexes cached token prefixes.
// At admission a request matches its longest cached prefix (token-exact, not block-aligned),
// capped at prompt length - 1 because the last prompt token must be recomputed to produce the
// first output token (as in vLLM); that count is the exact cached_tokens reported for it. The
// matched path is pinned while the request runs. KV space for the rest of the prompt and for
// max_output_tokens outputs is reserved up front (no preemption, like TGI's token budget): if
// it does not fit, least-recently-used unpinned content is evicted, token-granular from the tail
// of the LRU leaf (recency is the order of uses: admission, insertion); if it still does not fit
// (pinned KV of running requests), the request waits. A request whose prompt plus output exceeds
// the whole capacity is rejected by Submit. Each prefill chunk's tokens are inserted (and
// pinned) when its iteration ends; at completion the generated tokens are inserted too (a later
// chat turn that repeats the answer can hit them), and the request's pins are dropped, leaving
// the content cached and evictable. The tree's block events (adds and removes of block keys)
// are what DrainCacheEvents returns.
//
// With CacheLayout::kSlots the engine plays a llama-server instead: a SlotCache (slot_cache.h)
// replaces the tree, a request starts in one of `max_running` slots with that slot's common prefix
// as its hit, its computed tokens extend the slot, and running requests reserve no KV (a slot's
// context is its own); kv_capacity_tokens is the host prompt cache.
//
// Cost of simulation: per iteration, work is proportional to the requests in the batch plus the
// tokens they insert or match; nothing scans the whole queue or the whole cache.
//
// Thread-safety: none; one core thread. Callbacks run inside the engine's scheduled tasks.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/engine/cost_model.h"
#include "hearsay/engine/engine.h"
#include "hearsay/engine/shared_host.h"
#include "hearsay/engine/slot_cache.h"
#include "hearsay/engine/speed_estimate.h"
#include "hearsay/env/rng.h"
#include "hearsay/env/scheduler.h"
#include "hearsay/prefix/block_keys.h"
#include "hearsay/prefix/radix_tree.h"

namespace hearsay::engine {

// How the engine keeps its KV cache.
enum class CacheLayout : uint8_t {
  // vLLM, SGLang: paged blocks in one radix tree, a shared prefix stored once, evicted least
  // recently used token by token; running requests reserve their KV in the same capacity.
  kPaged,
  // llama.cpp's llama-server: `max_running` slots, each keeping its last sequence, and a host
  // prompt cache of `kv_capacity_tokens` keeping whole sequences (slot_cache.h). A slot's KV is
  // its own context, outside that capacity.
  kSlots,
};

struct SimEngineOptions {
  // The iteration-time model (default: the h100-llama3-8b preset).
  CostParams cost = {6.0, 0.03, 1.5e-6, 0.05, 4e-5};
  // Tokens (prefill chunk tokens plus one per decode step) per iteration; must be >= 1.
  uint32_t token_budget = 8192;
  // Most requests running at once (vLLM max_num_seqs); must be >= 1.
  uint32_t max_running = 256;
  // KV cache capacity in tokens; must be in [1, 2^32).
  uint64_t kv_capacity_tokens = 262144;
  CacheLayout cache_layout = CacheLayout::kPaged;
  // Longest prompt + max_output_tokens accepted (the model's context window); 0 = no limit
  // beyond the KV capacity.
  uint32_t max_context_tokens = 0;
  // Relative jitter of each iteration time: the modelled time is multiplied by a log-normal
  // factor with mean 1 and this standard deviation of its log; 0 disables jitter. Must be in
  // [0, 2].
  double jitter = 0;
  // Seeds the jitter draws.
  uint64_t seed = 1;
  // The host's cores this engine shares with others (CPU engines on one machine): its
  // iterations run at the shared rate (shared_host.h). Null: a machine of its own.
  std::shared_ptr<SharedHost> host;
  // Before its first prefill, Load() reports the preset's prefill speed (true), or none (false),
  // as an upstream engine does until its first answer (upstream/openai_engine.h).
  bool report_preset_speed = true;
};

class SimEngine final : public Engine {
 public:
  // A new idle engine whose cache keys blocks with `keyer` (the node's namespace: cluster
  // secret, model, tenant). `scheduler` must outlive it. INVALID_ARGUMENT for bad options.
  static Result<std::unique_ptr<SimEngine>> Create(Scheduler& scheduler,
                                                   const SimEngineOptions& options,
                                                   prefix::BlockKeyer keyer);
  // Cancels the engine's pending iteration; no callback runs after destruction.
  ~SimEngine() override;

  SimEngine(const SimEngine&) = delete;
  SimEngine& operator=(const SimEngine&) = delete;

  // Engine.
  Status Submit(EngineRequest request, EngineObserver* observer) override;
  bool Cancel(RequestId id) override;
  // estimated_queue_wait = the rest of the running iteration + CostModel::QueueWaitMs over the
  // unscheduled prefill tokens (queued requests net of their cache hits at Submit, plus the
  // unscheduled chunks of running ones); it does not foresee waits for KV space.
  EngineLoad Load() const override;
  size_t CachedPrefixTokens(std::span<const TokenId> prompt) const override;
  // Namespaces are isolated: a prompt of namespace ns != 0 is cached as NamespaceBlock(ns) | prompt
  // (prefix/block_keys.h), and its reports (prompt and cached tokens, cache events with the
  // prompt's first block at index 0) leave that block out. The block is held in KV but costs no
  // compute: it is not attention context (a real engine mixes the namespace into its block hashes).
  size_t CachedPrefixTokens(std::span<const TokenId> prompt, uint64_t ns) const override;
  void DrainCacheEvents(std::vector<prefix::BlockEvent>& out) override;
  void AppendCacheSnapshot(std::vector<prefix::BlockEvent>& out) const override;

  // A fault: from now on every iteration takes `factor` times its modelled time (2 = half
  // speed), as when another tenant shares the GPU; 1 restores the configured speed. The engine's
  // own queue estimates follow (it knows its iteration times); peers learn it from the measured
  // prefill speed. Ignored unless finite and > 0.
  void SetSlowdown(double factor);
  double slowdown() const { return slowdown_; }

  const SimEngineOptions& options() const { return options_; }
  const CostModel& cost_model() const { return cost_; }
  // Iterations completed so far.
  uint64_t iterations() const { return iterations_; }
  // The shape of the iteration running now (empty when idle).
  const IterationShape& current_iteration() const { return shape_; }
  // The cache index (read-only), for tests and tools: the radix tree of a paged engine, the
  // slots of a llama.cpp-like one (null for a paged engine).
  const prefix::RadixTree& cache() const { return tree_; }
  const SlotCache* slot_cache() const { return slot_cache_.get(); }

 private:
  enum class State : uint8_t { kFree, kWaiting, kRunning, kDone };

  // One live request. Slots are reused through a free list; `tokens` keeps its capacity.
  // Invariants:
  //  - kWaiting slots form the FCFS list head_ .. tail_ through prev/next.
  //  - kRunning slots are in running_; cached <= computed <= prompt_len.
  //  - while running, reserved == prompt_len + max_output - max(pinned_len, cached): KV held
  //    privately for tokens not in the tree yet, handed to the tree as they are inserted.
  //  - pin is valid iff the request holds a pin; it covers the first pinned_len tokens.
  struct Slot {
    RequestId id = 0;
    EngineObserver* observer = nullptr;
    std::vector<TokenId> tokens;  // prompt, then generated tokens
    std::vector<TokenId> scripted;
    uint32_t prompt_len = 0;  // including the namespace block, if any
    uint32_t ns_len = 0;      // tokens of the namespace block at the front of `tokens`
    uint32_t max_output = 0;
    uint32_t cached = 0;
    uint32_t computed = 0;  // prompt tokens in KV
    uint32_t chunk = 0;     // prompt tokens the in-flight iteration computes for it
    uint32_t generated = 0;
    uint32_t pinned_len = 0;
    prefix::PinHandle pin;
    uint32_t kv_slot = kNil;  // its SlotCache slot while running (CacheLayout::kSlots)
    uint64_t reserved = 0;
    uint32_t est_new = 0;    // uncached tokens estimated at Submit, while waiting
    double est_work_ms = 0;  // their marginal prefill work
    TimePoint submitted{};
    State state = State::kFree;
    bool cancelled = false;
    bool in_batch = false;
    uint32_t prev = kNil;
    uint32_t next = kNil;
  };
  enum class NoteKind : uint8_t { kAdmitted, kFirstToken, kToken, kComplete };
  struct Note {
    uint32_t slot;
    NoteKind kind;
    TokenId token;
  };
  static constexpr uint32_t kNil = UINT32_MAX;
  // Cached prompt tokens as reported: without the namespace block.
  static uint32_t NetCached(const Slot& s) { return s.cached > s.ns_len ? s.cached - s.ns_len : 0; }

  SimEngine(Scheduler& scheduler, const SimEngineOptions& options, prefix::BlockKeyer keyer);

  uint32_t AllocSlot();
  void FreeSlot(uint32_t slot);
  void PushWaiting(uint32_t slot);
  void UnlinkWaiting(uint32_t slot);
  // Schedules StartIteration as a task if no iteration is running or queued.
  void Wake();
  void StartIteration();
  void FinishIteration();
  // The running iteration ends `left` from now (re-arms the timer).
  void ScheduleEnd(Duration left);
  // Tries to admit the head of the queue within `budget`; false if it does not fit.
  bool TryAdmit(uint32_t slot, uint32_t& budget);
  // Drops a request's pins and reservation (its cached content stays, evictable).
  void Release(Slot& s);
  // Drops the request's pin, if any.
  void UnpinPath(Slot& s);
  // Inserts the request's first `len` tokens into the cache and, with `keep_pin`, moves its pin
  // there (else drops it); those tokens leave the request's private reservation.
  void InsertComputed(Slot& s, uint32_t len, bool keep_pin);
  // The longest cached prefix of `tokens`, in either layout.
  size_t PeekCache(std::span<const TokenId> tokens) const;
  // Makes `tokens` free in KV by evicting unpinned prefixes; false if impossible.
  bool MakeRoom(uint64_t tokens);
  // Calls the observers for notes_, skipping requests cancelled meanwhile.
  void Deliver();
  TokenId OutputToken(const Slot& s, uint32_t index) const;
  uint64_t kv_free() const;

  Scheduler& scheduler_;
  SimEngineOptions options_;
  CostModel cost_;
  Rng rng_;
  prefix::RadixTree tree_;
  std::unique_ptr<SlotCache> slot_cache_;  // CacheLayout::kSlots only

  // Invariants:
  //  - id_to_slot_ maps exactly the live (not cancelled, not yet reported done) requests.
  //  - tree_.size_tokens() + reserved_total_ <= kv_capacity_tokens.
  //  - timer_ != kNoTimer iff an iteration (or a wake-up) is scheduled; busy_ iff an iteration
  //    is in flight.
  std::vector<Slot> slots_;
  uint32_t free_head_ = kNil;
  std::unordered_map<RequestId, uint32_t> id_to_slot_;
  uint32_t head_ = kNil;
  uint32_t tail_ = kNil;
  uint32_t waiting_ = 0;
  uint32_t running_live_ = 0;  // running_ minus cancelled
  std::vector<uint32_t> running_;
  std::vector<uint32_t> batch_;
  std::vector<Note> notes_;
  std::vector<prefix::BlockEvent> events_;  // since the last DrainCacheEvents
  uint64_t tick_ = 0;                       // the tree's LRU clock: one tick per use
  uint64_t reserved_total_ = 0;
  uint64_t pending_tokens_ = 0;  // prefill tokens not yet scheduled, waiting and running
  double pending_work_ms_ = 0;   // their marginal prefill work (estimate)
  IterationShape shape_;
  double iteration_ms_ = 0;  // duration of the running iteration, jitter included
  TimePoint iteration_end_{};
  TimerId timer_ = kNoTimer;
  bool busy_ = false;
  uint64_t iterations_ = 0;
  double slowdown_ = 1;
  // This engine's seat on options_.host: where the host tells it its iterations' new ends.
  struct HostSeat final : SharedHost::Member {
    explicit HostSeat(SimEngine* e) : engine(e) {}
    void Reschedule(Duration left) override { engine->ScheduleEnd(left); }
    SimEngine* engine;
  };
  HostSeat seat_{this};
  TimePoint iteration_start_{};
  // Measured prefill ms per token: per iteration, its time over the model's, times the model's
  // a_ms_per_token; the median of recent iterations (robust to outliers, follows a slowdown).
  // Load() reports the cost model's a_ms_per_token until the first sample.
  SpeedEstimate prefill_speed_;
  SpeedEstimate decode_speed_;  // the same over iterations that only decode: ms per step
};

}  // namespace hearsay::engine
