// OpenAiEngine: the `openai` engine. It fronts an OpenAI-compatible inference server (llama.cpp
// server, vLLM, SGLang), passes each request's OpenAI body through, streams the answer back as
// text, and keeps an estimate of the server's prefix cache that routing and gossip use.
//
// One request. Submit() rewrites the client's body (stream on, usage in the stream, llama.cpp's
// per-token timings), records a prediction in the CacheTracker (what was sent, with a lease) and
// sends it through the UpstreamTransport. The upstream's server-sent events are decoded; the first
// output text gives OnAdmitted + OnFirstToken, every text piece OnText, the end OnComplete with
// the upstream's own usage. A request nobody reads before its end (EngineRequest::stream false:
// a local client that did not ask to stream) asks the server for one JSON answer instead, which
// costs it and the node less; its events then all come at the end, under `answer_timeout`
// rather than `first_token_timeout`, and until then Load() counts it as waiting only for as long
// as its prefill is expected to take. Counts reported to observers are the upstream's (its
// tokenizer); the cache estimate is kept in node tokens, and evidence is converted by the ratio of
// the two prompt lengths (exact when the node tokenizes with the engine's tokenizer).
//
// Speeds. Prefill ms per uncached node token comes from the upstream's own timings (llama.cpp's
// timings.prompt_ms), taken against the node's cost model where it has one
// (OpenAiEngineOptions::prefill_model: a prefill after a long cached prefix is slower per token);
// decode ms per output token from the stream itself (first to last text over the tokens
// between); each is the median of recent answers (engine::SpeedEstimate).
//
// The engine's own queue (engine_metrics.h): where the flavor publishes queue gauges on /metrics,
// they are polled every queue_poll_interval; llama.cpp's /slots (its slots, which are busy, how
// many output tokens each may still make) is read on the same period. The queue is the /metrics
// sample's counts, or the busy slots when /metrics has none (llama-server without --metrics).
// Requests the engine reports beyond the node's own in flight at the sample are other clients'
// (the engine may be shared): Load() adds them, waiting ones first, each priced at the median
// uncached prompt of the node's own requests. With price_slot_wait, when every slot is busy, a new
// request also waits for the soonest one to free: its remaining output at the measured decode
// speed.
//
// The pages are decoded off the core thread (Scheduler::Offload: on the daemon's I/O threads) into
// a plain result, which is applied on the core; at most one read of each page is out (fetched or
// being decoded) at a time.
//
// Cache evidence (see cache_tracker.h): the first chunk that reports cached tokens
// (timings.cache_n or usage.prompt_tokens_details.cached_tokens) confirms or corrects the
// estimate; llama.cpp's /slots is polled to confirm (or, when authoritative, prune) entries.
// Estimates are compared with evidence: the totals, and a DriftDetector over recent evidence.
// When it flags drift (estimates_unreliable()), a warning names the likely cause (repeated at most
// once per drift.log_interval) and the tracker goes evidence-only: predictions stop counting for
// routing and gossip until the evidence agrees again.
//
// Served models. GET /v1/models is read at start and every models_poll_interval
// (openai_engine_models.cc): served_models() is the last list read, and the callback set by
// set_on_served_models() runs whenever it changes. A failed read keeps the last list (a restart
// in progress is not a change of model) and is counted. Once known, a request the node resolved
// (EngineRequest::model, adapter) reaches the engine under the name the engine lists, whatever
// alias the client used (options.model, when set, still names every request).
//
// Faults. A connection failure, a timeout (connect, first token, stream idle), a 5xx, an error
// event or an undecodable stream fail the request with a clear status (before the first token:
// the node retries elsewhere or tells the client; after it: the stream ends with an error) and
// count as upstream failures. After failures_to_unhealthy consecutive failures (health probes
// included), the engine is unhealthy: Submit() answers UNAVAILABLE at once and Load() reports a
// saturated engine, so gossip raises the node's overload flag and peers route around it. Health
// probes (GET health_path) run every health_interval; the first 200 makes it healthy again. A
// 4xx is the client's fault: passed on as INVALID_ARGUMENT, not a failure of the upstream.
//
// Ownership: the scheduler and transport are borrowed and must outlive the engine. Destroying the
// engine cancels its timers and calls; no callback runs afterwards, and a decode offloaded before
// it applies nothing.
// Thread-safety: none; the core thread only (the transport delivers its callbacks there).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "hearsay/api/sse_parser.h"
#include "hearsay/common/status.h"
#include "hearsay/engine/engine.h"
#include "hearsay/engine/speed_estimate.h"
#include "hearsay/env/scheduler.h"
#include "hearsay/prefix/block_keys.h"
#include "hearsay/upstream/cache_tracker.h"
#include "hearsay/upstream/chunk_stream_decoder.h"
#include "hearsay/upstream/drift_detector.h"
#include "hearsay/upstream/engine_metrics.h"
#include "hearsay/upstream/openai_engine_options.h"
#include "hearsay/upstream/served_models.h"
#include "hearsay/upstream/upstream_response.h"
#include "hearsay/upstream/upstream_transport.h"

namespace hearsay::upstream {

// Counters for /metrics. Token counts in node tokens unless named upstream_.
struct OpenAiEngineStats {
  uint64_t requests = 0;  // accepted by Submit
  uint64_t completed = 0;
  uint64_t failed = 0;              // OnError delivered
  uint64_t rejected_unhealthy = 0;  // Submit refused while unhealthy
  uint64_t rejected_busy = 0;       // Submit refused at max_in_flight
  uint64_t connect_failures = 0;    // transport errors before any response
  uint64_t timeouts = 0;            // connect, first-token and idle timeouts
  uint64_t http_5xx = 0;
  uint64_t http_4xx = 0;
  uint64_t malformed = 0;     // undecodable stream or missing end
  uint64_t error_events = 0;  // {"error": ...} inside a stream
  uint64_t health_probes = 0;
  uint64_t health_probe_failures = 0;
  uint64_t became_unhealthy = 0;
  uint64_t became_healthy = 0;
  // Evidence against estimates.
  uint64_t evidence = 0;
  uint64_t estimated_cached_tokens = 0;          // sum of estimates for requests with evidence
  uint64_t reported_cached_tokens = 0;           // sum of evidence, converted to node tokens
  uint64_t upstream_reported_cached_tokens = 0;  // the same in the upstream's tokens
  uint64_t upstream_prompt_tokens = 0;           // prompt tokens the upstream reported
  uint64_t overestimates = 0;
  uint64_t underestimates = 0;
  uint64_t stale_entries_cut = 0;
  uint64_t drift_alarms = 0;   // transitions into estimates_unreliable
  uint64_t drift_cleared = 0;  // transitions out of it
  uint64_t reconciles = 0;
  uint64_t reconcile_failures = 0;
  uint64_t reconcile_confirmed = 0;
  uint64_t reconcile_removed = 0;
  uint64_t queue_polls = 0;           // /metrics pages read
  uint64_t queue_poll_failures = 0;   // /metrics unreachable, refused or unreadable
  uint64_t slots_polls = 0;           // /slots pages read (llama.cpp)
  uint64_t models_polls = 0;          // /v1/models pages read
  uint64_t models_poll_failures = 0;  // /v1/models unreachable, refused or unreadable
  uint64_t models_changes = 0;        // reads that changed what the engine serves
  // Prefix holding (OpenAiEngineOptions::prefix_hold_tokens).
  uint64_t prefix_holds = 0;           // requests held behind one in flight with their prefix
  uint64_t prefix_holds_released = 0;  // ... sent once no earlier one in flight shared it
  uint64_t prefix_holds_at_bound = 0;  // ... sent at the hold's bound, that one still in flight
};

// The engine's queue by its own count, as last read from its /metrics page (or its /slots page).
struct EngineQueueSample {
  uint32_t running = 0;
  uint32_t waiting = 0;
  // The node's own requests in flight to the engine when the page was read.
  uint32_t own_in_flight = 0;
  TimePoint at{};
  // From a fresh /slots read (llama.cpp), else 0 / nullopt: the engine's slots, the busy ones, and
  // the fewest output tokens a busy slot may still make before it frees.
  uint32_t slots = 0;
  uint32_t busy_slots = 0;
  std::optional<uint32_t> soonest_free_tokens = std::nullopt;
  // Reported beyond the node's own: other clients' requests.
  uint32_t foreign() const {
    return running + waiting > own_in_flight ? running + waiting - own_in_flight : 0;
  }
};

class OpenAiEngine final : public engine::Engine {
 public:
  // INVALID_ARGUMENT for bad options. The engine starts healthy and probes at once.
  static Result<std::unique_ptr<OpenAiEngine>> Create(Scheduler& scheduler,
                                                      UpstreamTransport& transport,
                                                      prefix::BlockKeyer keyer,
                                                      OpenAiEngineOptions options);
  ~OpenAiEngine() override;
  OpenAiEngine(const OpenAiEngine&) = delete;
  OpenAiEngine& operator=(const OpenAiEngine&) = delete;

  // engine::Engine. Submit also returns INVALID_ARGUMENT for a missing or unsupported api_path
  // or a body that is not a JSON object, UNAVAILABLE while unhealthy, RESOURCE_EXHAUSTED at
  // max_in_flight.
  Status Submit(engine::EngineRequest request, engine::EngineObserver* observer) override;
  bool Cancel(engine::RequestId id) override;
  engine::EngineLoad Load() const override;
  size_t CachedPrefixTokens(std::span<const engine::TokenId> prompt) const override;
  size_t CachedPrefixTokens(std::span<const engine::TokenId> prompt, uint64_t ns) const override;
  void DrainCacheEvents(std::vector<prefix::BlockEvent>& out) override;
  void AppendCacheSnapshot(std::vector<prefix::BlockEvent>& out) const override;

  bool healthy() const { return healthy_; }
  // Why the upstream is unhealthy (the last failure), empty while healthy.
  const std::string& unhealthy_reason() const { return unhealthy_reason_; }
  // True while evidence shows the cache estimates are persistently wrong (see DriftDetector).
  bool estimates_unreliable() const { return drift_.flagged(); }
  const DriftDetector& drift() const { return drift_; }
  const OpenAiEngineStats& stats() const { return stats_; }
  const CacheTracker& tracker() const { return tracker_; }
  // Decode ms per output token (median of recent answers); 0 before the first.
  double decode_ms_per_token() const { return decode_speed_.value(); }
  // What the engine serves, as its /v1/models last said; nullopt before the first good read.
  const std::optional<ServedModels>& served_models() const { return served_models_; }
  // Runs (on the core thread) each time served_models() changes, the first read included.
  void set_on_served_models(std::function<void(const ServedModels&)> cb) {
    on_served_models_ = std::move(cb);
  }
  // The engine's queue while a sample is fresh (within 3 poll intervals), nullopt otherwise: the
  // /metrics sample's counts, else the /slots sample's busy slots as running; slots from /slots.
  std::optional<EngineQueueSample> engine_queue() const;
  // The estimate, for the vLLM KV-events source (kv_events_tracking.h), which cuts from it the
  // blocks the engine reports dropped.
  CacheTracker& mutable_tracker() { return tracker_; }
  const OpenAiEngineOptions& options() const { return options_; }

 private:
  struct Live {
    engine::EngineObserver* observer = nullptr;
    std::unique_ptr<UpstreamCall> call;
    api::SseParser parser;
    ChunkStreamDecoder decoder;  // the stream's events (streamed only)
    uint32_t prompt_len = 0;     // node tokens
    size_t estimate = 0;         // node tokens believed cached at send
    TimePoint submitted{};
    TimePoint first_token_at{};
    // The upstream's own prefill time (llama.cpp's timings.prompt_ms), < 0 until reported.
    double prompt_ms = -1;
    // Another of this engine's requests was prefilling while this one was: llama.cpp runs them in
    // parallel slots, so its prompt_ms counts the other's tokens too and is no clean speed sample.
    bool shared_prefill = false;
    TimerId first_token_timer = kNoTimer;
    int http_status = 0;
    std::string error_body;
    // Asked as a stream (EngineRequest::stream); otherwise the answer in one piece, gathered.
    bool streamed = true;
    std::string answer;
    bool first_sent = false;
    bool evidence_applied = false;
    bool done_seen = false;
    engine::Usage usage;  // upstream's counts as they arrive
    bool have_usage_prompt = false;
    // Prefix holding (openai_engine_hold.cc): the order of submission, the prompt's block keys,
    // the leading tokens the engine held before this request (or the earlier one it waits for)
    // started computing the rest, and, while held, everything the send needs.
    uint64_t order = 0;
    std::vector<prefix::BlockKey> keys;
    size_t base_tokens = 0;
    bool inherits_base = false;
    bool held = false;
    TimerId hold_timer = kNoTimer;
    // The hold's timer is the shared part's prefill time (the one ahead has its first token).
    bool hold_bounded = false;
    UpstreamHttpRequest http;
    UpstreamCallbacks callbacks;
    std::vector<engine::TokenId> prompt;
    std::string prompt_text;
    uint64_t cache_namespace = 0;
  };

  OpenAiEngine(Scheduler& scheduler, UpstreamTransport& transport, prefix::BlockKeyer keyer,
               OpenAiEngineOptions options);

  void OnHeaders(engine::RequestId id, int status);
  void OnBody(engine::RequestId id, std::string_view chunk);
  void OnDone(engine::RequestId id, Status status);
  // Handles one decoded event; false when the request ended inside (error or cancel).
  bool OnEvent(engine::RequestId id, std::string_view data);
  // Decodes an answer asked for in one piece, at its end, as one event (or as a stream, if the
  // server streamed anyway); false when the request ended inside.
  bool OnAnswer(engine::RequestId id);
  // Reports the first token if not done yet; false when the observer cancelled the request.
  bool EnsureFirstToken(engine::RequestId id);
  void ApplyEvidence(Live& r, engine::RequestId id, uint32_t upstream_cached,
                     uint32_t upstream_prompt);
  // Ends a request with an error; `upstream_fault` counts against health.
  void Fail(engine::RequestId id, Status status, bool upstream_fault);
  void Finish(engine::RequestId id);
  void Erase(engine::RequestId id);
  // Sends request `id` (held or new) upstream and records its cache prediction.
  void Send(engine::RequestId id);

  // Prefix holding (openai_engine_hold.cc; OpenAiEngineOptions::prefix_hold_tokens).
  // Prefix holding is on: llama.cpp and prefix_hold_tokens > 0.
  bool Holding() const {
    return options_.prefix_hold_tokens > 0 && options_.flavor == UpstreamFlavor::kLlamaCpp;
  }
  // True when `r` is held behind an earlier request in flight with its prefix (its timer set).
  bool HoldIfShared(engine::RequestId id, Live& r);
  // What `r` would reuse by waiting: the most leading tokens it shares with a request submitted
  // before it and still in flight, beyond what the engine held before that one started
  // computing; and that request's base_tokens.
  struct Sharing {
    size_t tokens = 0;
    size_t base_tokens = 0;
    // That request has its first token: the prefix is computed, its slot still busy.
    bool computed = false;
  };
  Sharing SharedWithEarlier(const Live& r) const;
  // Sends every held request that no earlier request in flight shares a prefix with any more.
  void ReleaseHeld();
  // Bounds the holds of the held requests whose request ahead now has its first token.
  void BoundHolds();
  // (Re)sets held request `id`'s timer to send it `after` from now.
  void SetHoldTimer(engine::RequestId id, Live& r, Duration after);

  void RecordFailure(const std::string& reason);
  void RecordSuccess();
  void SetHealthy(bool healthy, const std::string& reason);
  // What one GET to the upstream got: the transport's status, the HTTP status, the body (at most
  // the caller's limit) and whether the body went past it.
  struct GetResult {
    Status transport;
    int http_status = 0;
    std::string body;
    bool too_long = false;
  };
  // GETs `target` from the upstream through `call` (the caller's slot, set while the call is out
  // and released once `done` has run), keeping at most `max_body` bytes of the answer.
  void Get(std::unique_ptr<UpstreamCall>& call, std::string target, Duration timeout,
           size_t max_body, std::function<void(GetResult)> done);
  void Tick();
  void Probe();
  // GET /slots (llama.cpp): the queue sample from the slots, and, when `reconcile`, the cache
  // estimate reconciled with what the slots hold.
  void ReadSlots(bool reconcile);
  // A /slots answer decoded (off the core thread): its error, else the queue it shows and, when
  // asked, the text each slot holds (normalized, for reconciliation).
  struct SlotsRead {
    Status status = InternalError("not decoded");
    SlotsSummary summary;
    std::vector<std::string> held;
  };
  static SlotsRead DecodeSlots(const GetResult& r, bool reconcile);
  // Applies a decoded /slots answer read when `own_in_flight` of the node's requests were out.
  void ApplySlots(const SlotsRead& read, bool reconcile, uint32_t own_in_flight, TimePoint at);
  void Reconcile(const std::vector<std::string>& held);
  // Time a request sent now waits for a slot: when every slot is busy, the soonest busy slot's
  // remaining output at the measured decode speed, less the time since the sample.
  Duration SlotWait(const engine::EngineLoad& load) const;
  // OpenAiEngineOptions::prefill_model's time for `computed` tokens after `cached` ones, counted
  // in its cost per new token (so `computed` itself without a model): what a prefill's time is
  // divided by for a speed sample, and what the measured speed multiplies into a prefill time.
  double ModelledPrefillTokens(double computed, double cached) const;
  // The expected prefill time of `computed` tokens after `cached` ones at the measured speed, in
  // ms (before the first measurement, at prefill_model's; 0 without one).
  double ExpectedPrefillMs(uint64_t computed, uint64_t cached) const;
  // Marks request `id` (being sent) and every other request still prefilling as sharing their
  // prefill.
  void MarkSharedPrefills(engine::RequestId id, Live& live);
  // Takes one prefill speed sample: a shared prefill's only while the estimate has none, or once
  // kSharedSamplesBeforeTaken of them in a row were skipped (an engine that always prefills
  // several requests at once is measured as it runs).
  void AddPrefillSample(double ms_per_token, bool shared);
  // GET /metrics for the engine's queue gauges (openai_engine_queue.cc).
  void PollQueue();
  // Applies a decoded /metrics answer read when `own_in_flight` of the node's requests were out.
  void ApplyQueue(const Result<EngineQueue>& queue, uint32_t own_in_flight, TimePoint at);
  // GET /v1/models for what the engine serves (openai_engine_models.cc).
  void PollModels();
  // The "model" to send upstream (empty: the client's, unchanged): options_.model when set; else
  // the adapter the node resolved; else, once the engine's models are known, the resolved model
  // under the name the engine lists it (the node's own model: the first listed).
  std::string UpstreamModelFor(const engine::EngineRequest& request) const;
  // Adds other clients' requests, from the last fresh queue sample, to `load`.
  void AddForeignLoad(engine::EngineLoad& load, uint64_t& pending_prefill) const;
  // Learns decode speed from a finished request's stream.
  void LearnDecodeSpeed(const Live& r);
  // Learns how many node tokens one upstream token is worth, and scales the tracker's capacity.
  void LearnTokenRatio(uint32_t node_tokens, uint32_t upstream_tokens);
  void NoteDrift(size_t estimated, size_t reported, size_t prompt_tokens);

  Scheduler& scheduler_;
  UpstreamTransport& transport_;
  OpenAiEngineOptions options_;
  CacheTracker tracker_;
  std::unordered_map<engine::RequestId, std::unique_ptr<Live>> live_;
  uint64_t next_order_ = 0;
  // Held requests, in the order they were submitted.
  std::vector<engine::RequestId> held_;
  bool healthy_ = true;
  std::string unhealthy_reason_;
  uint32_t consecutive_failures_ = 0;
  std::unique_ptr<UpstreamCall> probe_call_;
  std::unique_ptr<UpstreamCall> slots_call_;
  std::unique_ptr<UpstreamCall> metrics_call_;
  std::unique_ptr<UpstreamCall> models_call_;
  // An answer of /slots (/metrics) is being decoded off the core: no new read until it is applied.
  bool slots_decoding_ = false;
  bool metrics_decoding_ = false;
  // Cleared by the destructor: an offloaded decode's continuation checks it (core thread only).
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::optional<ServedModels> served_models_;
  std::function<void(const ServedModels&)> on_served_models_;
  TimePoint next_models_poll_{};
  std::optional<EngineQueueSample> engine_queue_;
  // The last /slots read, as a queue sample (slots, busy_slots, running = busy_slots).
  std::optional<EngineQueueSample> slots_queue_;
  bool reconcile_due_ = false;
  TimePoint next_queue_poll_{};
  TimerId tick_timer_ = kNoTimer;
  TimePoint next_probe_{};
  TimePoint next_reconcile_{};
  // Prefill ms per uncached prompt token, in node tokens, from the upstream's own timings.
  engine::SpeedEstimate prefill_speed_;
  // Speed samples from shared prefills skipped since the last one taken (AddPrefillSample).
  uint32_t shared_samples_skipped_ = 0;
  // Decode ms per output token, from the stream's own timing.
  engine::SpeedEstimate decode_speed_;
  // Uncached node tokens per request sent (the cost of another client's queued request).
  engine::SpeedEstimate uncached_per_request_;
  // Node tokens per upstream token (EWMA over evidence); 0 until the first.
  double node_per_upstream_ = 0;
  DriftDetector drift_;
  OpenAiEngineStats stats_;
};

}  // namespace hearsay::upstream
