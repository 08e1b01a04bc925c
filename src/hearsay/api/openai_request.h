// Parsing and validation of OpenAI request bodies (POST /v1/completions, /v1/chat/completions).
//
// ParseRequest() turns an untrusted body into an ApiRequest or an ApiError; it never throws and
// never crashes. It checks what OpenAI's servers check and what this node cannot honour:
//   - the body is a JSON object (malformed JSON names the error's line and column), nested at
//     most kMaxJsonDepth deep;
//   - `model` is a non-empty string; `prompt` (completions) is a non-empty string or an array of
//     exactly one string; `messages` (chat) is a non-empty array of {role, content} (see
//     chat_template.h), rendered to one prompt string;
//   - every known field has the right type and range, with `param` naming the field at fault
//     (null counts as absent, as with OpenAI); stream_options requires stream = true;
//   - batch prompts, token-array prompts, n != 1, best_of > 1, echo, logprobs and suffix are
//     refused as not supported (code "unsupported_value") rather than silently answered wrong.
// Unknown fields are ignored, as OpenAI's servers do, for forward compatibility.
//
// Whether the model exists, and whether prompt plus output fit the context, are checked by the
// caller: the first needs the node's configuration, the second the tokenized prompt
// (CheckContext below).
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "hearsay/api/api_error.h"
#include "hearsay/api/request_budget.h"

namespace hearsay::api {

enum class Endpoint { kCompletions, kChatCompletions };

// The request path of `endpoint`, e.g. "/v1/chat/completions".
std::string_view EndpointPath(Endpoint endpoint);

struct Limits {
  // Longest prompt accepted, in bytes (for chat: the rendered conversation).
  size_t max_prompt_chars = size_t{1} << 20;
  // The model's context window, in tokens: prompt plus output must fit.
  uint32_t context_tokens = 8192;
  // Largest max_tokens (or max_completion_tokens) accepted.
  uint32_t max_output_tokens = 4096;
  // max_tokens when the request gives none.
  uint32_t default_max_tokens = 16;
  // What the body may hold (members, array elements, depth, number length), checked in one pass
  // before it is parsed.
  Budget budget;
};

struct ApiRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;
  // The completions prompt, or the chat messages rendered by the chat template.
  std::string prompt;
  // Output tokens to generate at most: max_tokens / max_completion_tokens, or the default.
  uint32_t max_tokens = 16;
  bool stream = false;
  // stream_options.include_usage: send a last chunk with usage before [DONE].
  bool include_usage = false;
  std::string user;
  // vLLM's cache_salt: requests with different salts never share prefix-cache entries (the node
  // splits its cache namespace by it, docs/security.md "Tenants"). Empty when absent.
  std::string cache_salt;
  double temperature = 1.0;
  std::optional<uint64_t> seed;
  // Stop sequences (at most kMaxStopSequences, none empty).
  std::vector<std::string> stop;

  friend bool operator==(const ApiRequest&, const ApiRequest&) = default;
};

// OpenAI's limit on `stop`.
inline constexpr size_t kMaxStopSequences = 4;

// Parses and validates `body` for `endpoint`. Errors are 400 invalid_request_error. A valid body
// within `limits.budget` is read in one pass without a JSON tree (ScanRequest, request_scanner.h,
// which gives up past the budget's counts); anything that pass is not sure of, every invalid or
// over-budget body included, goes to ParseRequestTree, which refuses a body over the budget first
// (request_budget.h) and so keeps the work linear in the body; errors are the tree's.
std::variant<ApiRequest, ApiError> ParseRequest(Endpoint endpoint, std::string_view body,
                                                const Limits& limits);

// The same through an nlohmann tree, always: the reference the fast path is checked against.
std::variant<ApiRequest, ApiError> ParseRequestTree(Endpoint endpoint, std::string_view body,
                                                    const Limits& limits);

// The context check, done once the prompt is tokenized: nullopt if `prompt_tokens + max_tokens`
// fits `limits.context_tokens`, else 400 context_length_exceeded in OpenAI's wording (the
// endpoint picks "prompt" or "messages" for the wording and `param`).
std::optional<ApiError> CheckContext(uint32_t prompt_tokens, uint32_t max_tokens,
                                     const Limits& limits,
                                     Endpoint endpoint = Endpoint::kCompletions);

}  // namespace hearsay::api
