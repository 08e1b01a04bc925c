// Engine: the plug-in interface between a hearsay node and the inference engine beside it.
//
// Implementations: SimEngine (sim_engine.h; continuous batching over a cost model, the simulator's
// engine in virtual time and the daemon's embedded default in real time) and
// upstream::OpenAiEngine (upstream/openai_engine.h), an OpenAI-compatible upstream (llama.cpp
// server, vLLM, SGLang) whose cache state is tracked from what was sent, or from the engine's KV
// events, rather than known exactly.
//
// The interface is asynchronous and sans-I/O. Submit() only queues work; progress happens in
// tasks the engine schedules on the core's Scheduler, and every outcome reaches the request's
// EngineObserver from such a task, never from inside Submit() or Cancel(). A request that Submit()
// accepted gets exactly one terminal callback (OnComplete or OnError) unless it is cancelled
// first; after Cancel() returns true, no callback for that request is made.
//
// Ownership: the engine copies nothing it does not need; it owns accepted requests until their
// terminal callback or Cancel(). Observers are borrowed: an observer must outlive every request
// submitted with it (until its terminal callback or its Cancel()).
// Thread-safety: none. Every method is called on the core's thread, and callbacks run there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/env/time.h"
#include "hearsay/prefix/block_event.h"

namespace hearsay::engine {

// A prompt or output token id. Matches the prefix module's and the simulator's token type.
using TokenId = uint32_t;

// Names one request of one engine; chosen by the caller, unique among the engine's live requests.
using RequestId = uint64_t;

// What the node asks the engine to run.
struct EngineRequest {
  RequestId id = 0;
  // The tokenized prompt; must not be empty.
  std::vector<TokenId> prompt;
  // Tokens to generate (OpenAI max_tokens); must be >= 1. The simulated engine always generates
  // exactly this many (it has no end-of-sequence); a real engine may stop earlier.
  uint32_t max_output_tokens = 1;
  // Optional, simulator only: the tokens the answer consists of, so that a later turn of a chat,
  // whose prompt repeats this answer, can hit the cache. The simulated engine emits these (and
  // synthetic tokens past their end); real engines ignore them.
  std::vector<TokenId> scripted_output;
  // Daemon only: the OpenAI request (path and JSON body) as the client sent it, which an upstream
  // engine passes through; the simulated engine ignores it.
  std::string api_path;
  std::string api_body;
  // Daemon only: whether someone reads the answer as it is made. When not (a local client that
  // did not ask to stream), an upstream engine asks its server for one whole answer, which costs
  // both sides less; the first token is then seen only with the rest.
  bool stream = true;
  // The prefix-cache namespace (prefix/block_keys.h NamespaceBlock; tenants and cache_salt):
  // 0 is the shared one. An engine that isolates namespaces never lets a request of one reuse
  // another's cache; one that cannot (llama.cpp's server) ignores it.
  uint64_t cache_namespace = 0;
  // The canonical model and LoRA adapter (empty: the base model) the node resolved the request
  // to (node/model_routing.h), for a host whose engine fronts several models; both empty on a
  // node that has no service configured. cache_namespace already includes them.
  std::string model;
  std::string adapter;
};

// The request reached the front of the queue and its KV space is reserved: prefill begins.
struct Admission {
  // Tokens in the prompt.
  uint32_t prompt_tokens = 0;
  // Leading prompt tokens found in the engine's prefix cache, which it will not recompute.
  // Exact for the simulated engine; what the engine reports (or an estimate) for an upstream.
  uint32_t cached_tokens = 0;
  // Time spent waiting in the queue, from Submit() to admission.
  Duration queued{0};
};

// The first output token exists: the request's time to first token ends here.
struct FirstToken {
  uint32_t prompt_tokens = 0;
  // As Admission::cached_tokens: the evidence that corrects the router's cache estimates.
  uint32_t cached_tokens = 0;
  // The first output token, from an engine that produces token ids (the simulated engine). An
  // engine that produces text (an upstream) has none: its text follows through OnText.
  std::optional<TokenId> token;
};

// Final accounting, in the shape of OpenAI's `usage`.
struct Usage {
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;
  uint32_t cached_tokens = 0;

  friend bool operator==(const Usage&, const Usage&) = default;
};

// Receives the outcomes of requests. One observer may serve many requests: every callback names
// its request. Callbacks may call Submit() and Cancel() on the engine (for any request).
class EngineObserver {
 public:
  virtual ~EngineObserver() = default;

  // The request left the queue and starts prefilling. Called at most once, before OnFirstToken.
  virtual void OnAdmitted(RequestId /*id*/, const Admission& /*admission*/) {}
  // The first output token. Called exactly once per successful request.
  virtual void OnFirstToken(RequestId id, const FirstToken& first) = 0;
  // Output tokens after the first, in order, possibly several per call (the daemon streams them).
  virtual void OnTokens(RequestId /*id*/, std::span<const TokenId> /*tokens*/) {}
  // Output text, for engines that produce text rather than token ids (an upstream engine): the
  // first call follows OnFirstToken; in order, possibly several per call.
  virtual void OnText(RequestId /*id*/, std::string_view /*text*/) {}
  // The request finished successfully; the last callback for this request.
  virtual void OnComplete(RequestId id, const Usage& usage) = 0;
  // The request failed after Submit() accepted it (for example an upstream error); the last
  // callback for this request. Not called for rejections that Submit() returns directly.
  virtual void OnError(RequestId id, const Status& status) = 0;
};

// A snapshot of an engine's load: what a node gossips and what routing policies price.
// Invariants: kv_used_tokens <= kv_capacity_tokens (kv_capacity_tokens == 0 means unknown).
struct EngineLoad {
  // Requests accepted but not admitted yet (the queue depth). An upstream engine, which cannot
  // see admission, counts its requests without a first token (upstream/openai_engine.h), so
  // there a request still prefilling is waiting too.
  uint32_t waiting_requests = 0;
  // Requests admitted and not finished (prefilling or decoding).
  uint32_t running_requests = 0;
  // KV cache occupancy, in tokens: cached prefixes plus space reserved for running requests.
  uint64_t kv_used_tokens = 0;
  uint64_t kv_capacity_tokens = 0;
  // KV tokens held by running requests, which eviction cannot free.
  uint64_t kv_pinned_tokens = 0;
  // Prompt tokens still to be prefilled, queued and running, net of (estimated) cache hits.
  uint64_t waiting_prefill_tokens = 0;
  // Measured cost of one prefill token, in ms: the engine's measured prefill time over its cost
  // model's time for the same work, times the model's cost per new token (so a prefill after a
  // long cached prefix, slower per token by the model's attention term, measures the same speed;
  // without a model, time per computed token). Robust to outliers (a median over recent answers
  // or iterations; engine/speed_estimate.h), so it follows an engine that slows down. 0 while
  // unknown (an upstream engine before its first answer; the simulated engine reports its
  // configured speed until it has measured).
  double prefill_ms_per_token = 0;
  // Measured time between two output tokens of one request, in ms (a decode iteration, with the
  // batch it ran in). 0 until measured.
  double decode_ms_per_token = 0;
  // Estimated time a request submitted now waits before its prefill starts.
  Duration estimated_queue_wait{0};
};

class Engine {
 public:
  virtual ~Engine() = default;

  // Queues `request`; outcomes go to `observer` (not null). Returns INVALID_ARGUMENT for an empty
  // prompt, max_output_tokens == 0, or a prompt plus output longer than the context limit;
  // RESOURCE_EXHAUSTED when the request could never fit in the KV cache; ALREADY_EXISTS for an id
  // still live. On error nothing is queued and no callback follows.
  virtual Status Submit(EngineRequest request, EngineObserver* observer) = 0;

  // Drops a live request: it stops using KV (at the end of the iteration running it) and gets no
  // further callbacks. Returns false if `id` is not live (finished, failed, never submitted).
  virtual bool Cancel(RequestId id) = 0;

  // The engine's load right now.
  virtual EngineLoad Load() const = 0;

  // The number of leading tokens of `prompt` the engine's prefix cache holds now (exact for the
  // simulated engine, an estimate for an upstream). Does not count as a use for LRU purposes.
  virtual size_t CachedPrefixTokens(std::span<const TokenId> prompt) const = 0;
  // The same for a prompt of namespace `ns` (EngineRequest::cache_namespace). The default, for
  // an engine whose cache is shared by every namespace, ignores `ns`.
  virtual size_t CachedPrefixTokens(std::span<const TokenId> prompt, uint64_t /*ns*/) const {
    return CachedPrefixTokens(prompt);
  }

  // Appends to `out` every cache event since the last call, in order, and forgets them. The node
  // calls this when it publishes its cache summary to gossip; events accumulate until then.
  virtual void DrainCacheEvents(std::vector<prefix::BlockEvent>& out) = 0;

  // Appends a kAdded event for every block the cache holds now, parents before children: a
  // snapshot that, replayed into an empty index, gives the held set. Does not drain pending
  // events; a node that rebuilds its summary from a snapshot drains and discards them first.
  virtual void AppendCacheSnapshot(std::vector<prefix::BlockEvent>& out) const = 0;
};

}  // namespace hearsay::engine
