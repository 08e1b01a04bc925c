// The canned answers of the forwarding benchmark's fixed-response upstream (fixed_upstream.cc).
//
// The upstream stands in for an inference engine whose cost is zero, so that what a benchmark
// measures through a proxy is the proxy's own cost. It answers every completion with the same
// OpenAI-shaped body: a JSON object, or, when the request says "stream": true, a fixed list of
// server-sent events ending in "data: [DONE]" (with the usage chunk when the request asks for it
// through stream_options.include_usage, as hearsay's openai engine does). The request body is
// parsed, so a malformed request gets a 400 as from a real server, and every path through a proxy
// pays the same parsing cost upstream.
//
// Thread-safety: pure functions over immutable values; a FixedResponses may be shared by threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/common/status.h"

namespace hearsay::bench {

struct FixedResponseOptions {
  // Output pieces (one SSE event each when streaming); each piece is one word.
  uint32_t completion_tokens = 16;
  // What the usage block reports as the prompt's length and its cached part.
  uint32_t prompt_tokens = 64;
  uint32_t cached_tokens = 0;
  std::string model = "fixed";
};

// What a completion request asks of the upstream.
struct FixedRequest {
  bool chat = false;           // /v1/chat/completions (else /v1/completions)
  bool stream = false;         // "stream": true
  bool include_usage = false;  // "stream_options": {"include_usage": true}
};

// Reads the fields of `body` the answer depends on. INVALID_ARGUMENT when the body is not a JSON
// object or "stream" / "stream_options" have the wrong type.
Result<FixedRequest> ParseFixedRequest(std::string_view body, bool chat);

// The canned answers, rendered once at start (answering is then a copy).
class FixedResponses {
 public:
  // INVALID_ARGUMENT when completion_tokens is 0 or cached_tokens > prompt_tokens.
  static Result<FixedResponses> Create(FixedResponseOptions options);

  // The whole JSON body of a non-streaming answer.
  const std::string& Body(bool chat) const { return chat ? chat_body_ : completion_body_; }
  // The SSE events of a streaming answer, each a complete "data: ...\n\n" event, in order; the
  // usage event is included only when `include_usage`.
  std::vector<std::string_view> Stream(bool chat, bool include_usage) const;

 private:
  std::string completion_body_;
  std::string chat_body_;
  std::vector<std::string> completion_events_;  // text pieces + finish, without usage or [DONE]
  std::vector<std::string> chat_events_;
  std::string completion_usage_event_;
  std::string chat_usage_event_;
};

}  // namespace hearsay::bench
