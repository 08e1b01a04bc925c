// Options of the `openai` upstream engine (OpenAiEngine), and their validation.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "hearsay/common/status.h"
#include "hearsay/engine/cost_model.h"
#include "hearsay/env/time.h"
#include "hearsay/upstream/drift_detector.h"

namespace hearsay::upstream {

// Which server is upstream: decides which evidence to ask for and which endpoints exist.
enum class UpstreamFlavor : uint8_t {
  kGeneric = 0,   // any OpenAI-compatible server: usage.prompt_tokens_details.cached_tokens only
  kLlamaCpp = 1,  // llama.cpp server: timings.cache_n on every chunk, GET /slots
  kVllm = 2,      // vLLM: cached_tokens with --enable-prompt-tokens-details (KV events: later)
  kSglang = 3,    // SGLang: cached_tokens in usage
};

// "generic", "llamacpp", "vllm", "sglang".
std::string_view UpstreamFlavorName(UpstreamFlavor flavor);
// INVALID_ARGUMENT for an unknown name.
Result<UpstreamFlavor> ParseUpstreamFlavor(std::string_view name);

struct OpenAiEngineOptions {
  UpstreamFlavor flavor = UpstreamFlavor::kGeneric;
  // When not empty, replaces the request's "model" (the upstream may serve another name).
  std::string model;
  // The upstream's prefix-cache capacity in its own tokens: configuration, the engine cannot ask.
  // The cache estimate, kept in node tokens, is scaled by the ratio of the two tokenizers'
  // counts, learned from the upstream's answers.
  uint64_t capacity_tokens = 65536;
  // Longest prompt + max_tokens, in node tokens; 0 = no limit checked here (the upstream checks).
  uint32_t max_context_tokens = 0;
  // Most requests in flight at once; more get RESOURCE_EXHAUSTED (the node retries elsewhere).
  uint32_t max_in_flight = 64;
  // How long an unconfirmed prediction of what was sent counts as cached.
  Duration prediction_lease = std::chrono::seconds(5);
  Duration connect_timeout = std::chrono::seconds(2);
  // From the send to the first output text; past it the request fails (DEADLINE_EXCEEDED).
  Duration first_token_timeout = std::chrono::seconds(30);
  // Longest silence inside a streaming response.
  Duration idle_timeout = std::chrono::seconds(30);
  // For a request answered in one piece (engine::EngineRequest::stream false): from the send to
  // the whole answer, generation included; past it the request fails (DEADLINE_EXCEEDED).
  Duration answer_timeout = std::chrono::seconds(300);
  // Largest answer in one piece; a longer one fails the request (DATA_LOSS).
  size_t max_answer_bytes = 16u << 20;
  // Consecutive failures (requests or health probes) that mark the upstream unhealthy.
  uint32_t failures_to_unhealthy = 2;
  // Period of GET health_path probes (also while healthy: detects a dead upstream without
  // traffic). An unhealthy upstream becomes healthy again on the first probe answered 200.
  Duration health_interval = std::chrono::seconds(1);
  std::string health_path = "/health";
  // Period of GET /slots reconciliation (llama.cpp only); 0 disables it.
  Duration reconcile_interval = std::chrono::seconds(2);
  // Period of GET /metrics for the engine's own queue (llama.cpp with --metrics, vLLM, SGLang);
  // 0 disables it. A sample older than three periods is not used.
  Duration queue_poll_interval = std::chrono::seconds(1);
  // llama.cpp: when /slots shows every slot busy, add the soonest slot's remaining decode to the
  // queue wait the node reports and prices. Off until measured on an idle machine (see
  // docs/engines.md).
  bool price_slot_wait = false;
  // llama.cpp computes each slot's prompt on its own: a request sent while another with the same
  // prefix is in flight there computes that prefix again, in another slot, beside it. A request
  // sharing at least prefix_hold_tokens node tokens with one sent before it and still in flight,
  // beyond what the engine held before that one came (a prefix cached before is in an idle slot
  // too), is held until that one ends (its slot then holds the prefix and takes the request):
  // while it computes the prefix, for as long as that takes (prefix_hold_max at most); once it has
  // its first token, for at most the shared part's prefill time at the measured speed (its slot
  // stays busy while it writes). 0 = never hold. llama.cpp only.
  uint32_t prefix_hold_tokens = 0;
  Duration prefix_hold_max = std::chrono::seconds(20);
  // Period of GET /v1/models, which says what the engine serves (served_models.h): read at start
  // and then periodically, so an engine restarted with another model or a newly loaded adapter
  // changes what the node advertises. 0 reads it only at start.
  Duration models_poll_interval = std::chrono::seconds(10);
  // True when /slots lists everything the engine caches (llama-server --cache-ram 0): entries no
  // slot holds are then removed. Otherwise /slots only confirms.
  bool slots_authoritative = false;
  // Evidence drift alarm (drift_detector.h): when the windowed share of prompt tokens the
  // estimates got wrong reaches drift.threshold, the estimates are declared unreliable (a
  // rate-limited warning, a metric) and the tracker goes evidence-only until it clears.
  DriftOptions drift;
  // The cost model the node prices this engine with (its engine preset, in node tokens), or none.
  // With it, a prefill's speed sample is its time over the model's time for the same work,
  // times the model's cost per new token: a prefill after a long cached prefix attends to all of
  // it, and per computed token took up to 5x one from scratch on llama.cpp, so time per computed
  // token made the members that serve cache hits look slow (docs/engines.md). Without it, time
  // per computed token.
  std::optional<engine::CostParams> prefill_model;
  // How the node keys prompts ("tokenizer=bytes block_size=16"), named in the drift warning.
  std::string keying;
  // Bytes of an error response body kept for the error message.
  size_t max_error_body_bytes = 4096;
};

// INVALID_ARGUMENT naming the first bad field.
Status ValidateOpenAiEngineOptions(const OpenAiEngineOptions& options);

}  // namespace hearsay::upstream
