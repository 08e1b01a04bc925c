// Decoders for what an OpenAI-compatible upstream sends back: streamed chunks (the data of one
// server-sent event), error bodies, and llama.cpp's GET /slots.
//
// Engines disagree on where cache evidence lives, so a chunk is read for all of them:
//   - OpenAI / vLLM / SGLang: usage.prompt_tokens_details.cached_tokens (vLLM only with
//     --enable-prompt-tokens-details), usage.prompt_tokens / completion_tokens;
//   - llama.cpp server: the same usage block, plus timings {cache_n, prompt_n, prompt_ms,
//     predicted_n, ...} on the last chunk, or on every chunk with "timings_per_token": true.
// Text is choices[0].text (/v1/completions), choices[0].delta.content (streamed chat) or
// choices[0].message.content (a chat answer that was not streamed: decoded as one chunk).
//
// Everything here is untrusted input: wrong types, missing fields and non-JSON yield
// INVALID_ARGUMENT naming the problem, never an exception or a crash. Numbers outside uint32
// are rejected, not wrapped.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/common/status.h"

namespace hearsay::upstream {

// One decoded stream event from the upstream (or a whole answer that was not streamed).
struct UpstreamChunk {
  // "[DONE]": the stream's end marker.
  bool done = false;
  // New output text (may be empty: role-only deltas, usage chunks).
  std::string text;
  // choices[0].finish_reason when set.
  std::string finish_reason;
  // Token counts, when the chunk carries them (usage, or llama.cpp timings).
  std::optional<uint32_t> prompt_tokens;
  std::optional<uint32_t> completion_tokens;
  // Prompt tokens the engine served from its prefix cache: usage's cached_tokens, or timings'
  // cache_n. Present only when the engine reported it.
  std::optional<uint32_t> cached_tokens;
  // llama.cpp timings: prompt tokens actually computed and the time it took.
  std::optional<uint32_t> prompt_computed_tokens;
  std::optional<double> prompt_ms;
  // An {"error": {...}} event: the engine's message.
  std::optional<std::string> error;
};

// Decodes one event's data. INVALID_ARGUMENT when it is neither "[DONE]", a chunk, nor an error.
// Ordinary chunks take a one-pass scanner (chunk_scanner.h); anything it is unsure of takes
// ParseUpstreamChunkTree, so the answers are the same.
Result<UpstreamChunk> ParseUpstreamChunk(std::string_view data);
// The same decoder over a JSON tree: slower, the reference for the scanner (and its fallback).
Result<UpstreamChunk> ParseUpstreamChunkTree(std::string_view data);

// The message of an error response body ({"error": {"message": ...}} or {"error": "..."} or
// {"message": ...} or {"detail": ...}); the body itself, truncated, when it has no such field.
std::string UpstreamErrorMessage(std::string_view body);

// One llama.cpp slot as GET /slots reports it.
struct SlotState {
  int64_t id = 0;
  bool is_processing = false;
  // The slot's prompt (detokenized) and generated text; the KV it holds covers both.
  std::string prompt;
  std::string generated;
  // Tokens in the slot's KV (n_prompt_tokens), when reported.
  std::optional<uint32_t> tokens;
  // The slot's context size (n_ctx), when reported.
  std::optional<uint32_t> n_ctx;
  // Output tokens the slot's request may still generate (next_token[0].n_remain); nullopt when
  // unreported or unlimited (llama.cpp writes -1).
  std::optional<uint32_t> remaining_tokens;
};

// Decodes the body of GET /slots (a JSON array). INVALID_ARGUMENT on anything else.
Result<std::vector<SlotState>> ParseSlots(std::string_view body);

// What /slots says of the engine's queue: its slots, how many are busy, and the soonest a busy
// slot's request can end (in output tokens; nullopt when no busy slot reports a limit).
struct SlotsSummary {
  uint32_t slots = 0;
  uint32_t busy = 0;
  uint32_t n_ctx = 0;  // the largest slot context reported, 0 when none
  std::optional<uint32_t> soonest_free_tokens = std::nullopt;
};
SlotsSummary SummarizeSlots(std::span<const SlotState> slots);

// Rewrites a client's OpenAI request body for the upstream. With `stream`, it asks for a stream
// with usage in it (stream_options.include_usage); without, for one JSON answer ("stream": false,
// no stream_options, which servers refuse without a stream), whatever the client asked: the
// upstream's cheapest answer, with the same usage. For llama.cpp also "timings_per_token": true
// (a stream's first chunk then carries cache_n) and "cache_prompt": true. `model`, when not
// empty, replaces the request's model (the upstream may serve under another name).
// INVALID_ARGUMENT if `body` is not a JSON object.
// Ordinary bodies take a one-pass copy (body_rewriter.h); anything else RewriteRequestBodyTree.
Result<std::string> RewriteRequestBody(std::string_view body, bool llamacpp, std::string_view model,
                                       bool stream = true);
// The same over a JSON tree: slower, the reference for the fast path (and its fallback).
Result<std::string> RewriteRequestBodyTree(std::string_view body, bool llamacpp,
                                           std::string_view model, bool stream = true);

// `body` (a rewritten request) with "cache_salt" set to the namespace's own salt, "hearsay-" and
// 16 hex digits: vLLM then keeps the namespace's prefix cache apart from every other's, whatever
// salt the client sent (the namespace is made from the tenant and the client's salt).
Result<std::string> WithCacheSalt(std::string_view body, uint64_t cache_namespace);

// The prompt text of a request body, for matching against llama.cpp's /slots: "prompt" (string,
// or the first string of an array) for completions, the messages' contents joined with "\n" for
// chat. Empty when there is none.
std::string PromptText(std::string_view body);

}  // namespace hearsay::upstream
