// Rendering of OpenAI responses: completion objects, streamed chunks, the model list.
//
// Shapes follow OpenAI's API:
//   - /v1/completions: object "text_completion", choices[0].text; streamed chunks are also
//     "text_completion" objects carrying the new text;
//   - /v1/chat/completions: object "chat.completion" with choices[0].message {role, content};
//     streamed chunks are "chat.completion.chunk" with choices[0].delta (the role only in the
//     first);
//   - usage {prompt_tokens, completion_tokens, total_tokens, prompt_tokens_details{cached_tokens}};
//     with stream_options.include_usage a last chunk carries it with "choices": [].
// Streamed pieces are returned as complete server-sent events ("data: {...}\n\n").
// Output is always valid JSON: invalid UTF-8 in text (an upstream engine may split a character
// across chunks) becomes U+FFFD.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "hearsay/api/api_error.h"
#include "hearsay/api/openai_request.h"

namespace hearsay::api {

// Token accounting, in the shape of OpenAI's `usage`.
struct UsageCounts {
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;
  // Prompt tokens served from the engine's prefix cache (prompt_tokens_details.cached_tokens).
  uint32_t cached_tokens = 0;

  friend bool operator==(const UsageCounts&, const UsageCounts&) = default;
};

// What every response object of one request repeats.
struct ResponseMeta {
  Endpoint endpoint = Endpoint::kCompletions;
  // "cmpl-..." or "chatcmpl-...".
  std::string id;
  // Unix seconds, chosen by the caller (core code reads no clock).
  int64_t created = 0;
  std::string model;
  // The serving node's id.
  std::string system_fingerprint;
};

// finish_reason values.
inline constexpr std::string_view kFinishLength = "length";
inline constexpr std::string_view kFinishStop = "stop";

// The end of every stream.
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

// A non-streaming response: a text_completion or chat.completion object with usage.
std::string RenderCompletion(const ResponseMeta& meta, std::string_view text,
                             std::string_view finish_reason, const UsageCounts& usage);

// One streamed chunk with `delta_text`. For chat, `first` puts "role":"assistant" in the delta.
std::string RenderChunk(const ResponseMeta& meta, std::string_view delta_text, bool first);
// The same, for the many chunks of one answer: the part before "choices" (id, object, created,
// model, system_fingerprint) is the same in every chunk, so it is rendered once.
class ChunkRenderer {
 public:
  explicit ChunkRenderer(const ResponseMeta& meta);
  void Append(std::string_view delta_text, bool first, std::string* out) const;

 private:
  std::string head_;  // "data: {...," up to "choices"
  bool chat_;
};
// The chunk that ends the choice: empty delta (or text) and `finish_reason`.
std::string RenderFinalChunk(const ResponseMeta& meta, std::string_view finish_reason);
// The usage chunk: "choices": [] and `usage`.
std::string RenderUsageChunk(const ResponseMeta& meta, const UsageCounts& usage);
// An error inside a stream: data: {"error":{...}}.
std::string RenderSseError(const ApiError& error);

// GET /v1/models: {"object":"list","data":[{"id","object":"model","created","owned_by"}...]}.
std::string RenderModels(std::span<const std::string> models, int64_t created,
                         std::string_view owner);

}  // namespace hearsay::api
