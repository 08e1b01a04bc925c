// The engine's own tokenizer over HTTP: the requests hearsay sends to an upstream's /tokenize (and
// llama.cpp's /apply-template), and decoders for their answers.
//
// Per engine:
//   - llama.cpp server: POST /tokenize {"content", "add_special": true, "parse_special": true}
//     -> {"tokens": [ids]} (or [{"id", "piece"}] with with_pieces). add_special adds BOS as the
//     server does for a completion, so the ids are exactly what the engine caches. Chat messages
//     are first rendered by the server's own template: POST /apply-template {"messages"} ->
//     {"prompt"}.
//   - vLLM: POST /tokenize {"model", "prompt"} or {"model", "messages", "add_generation_prompt":
//     true} -> {"tokens", "count", "max_model_len"}: one call for chat, with the engine's template.
//   - SGLang: POST /tokenize {"model", "prompt"} -> {"tokens", "count", "max_model_len"}; it takes
//     no messages, so chat prompts are rendered by the node's configured template.
//
// Responses are untrusted bytes: anything but the documented shapes is INVALID_ARGUMENT naming the
// problem (never an exception or a crash); token ids must fit uint32; a "count" that disagrees
// with the list, or more tokens than the caller's limit, is refused.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/upstream/openai_engine_options.h"

namespace hearsay::upstream {

// One HTTP call to the upstream: POST `target` with the JSON `body`.
struct TokenizeCall {
  std::string target;
  std::string body;
};

// True when the flavor's /tokenize accepts chat messages and applies the engine's template in
// the same call (vLLM).
bool TokenizeTakesMessages(UpstreamFlavor flavor);
// True when the flavor can render messages with its own template in a separate call (llama.cpp
// /apply-template).
bool HasApplyTemplate(UpstreamFlavor flavor);

// The /tokenize call for a prompt string, as the flavor expects it. `model` may be empty (the
// field is then omitted). FAILED_PRECONDITION for kGeneric (no known /tokenize).
Result<TokenizeCall> TokenizePromptCall(UpstreamFlavor flavor, std::string_view model,
                                        std::string_view prompt);
// The call that renders chat `messages_json` (a JSON array, as the client sent it) with the
// engine's own template: /tokenize with messages (vLLM) or /apply-template (llama.cpp).
// FAILED_PRECONDITION when the flavor has neither; INVALID_ARGUMENT when messages_json is not an
// array.
Result<TokenizeCall> TokenizeMessagesCall(UpstreamFlavor flavor, std::string_view model,
                                          std::string_view messages_json);

// Decodes a /tokenize response body: {"tokens": [uint32...]} or {"tokens": [{"id": uint32}...]},
// with an optional "count" that must equal the number of tokens. At most `max_tokens` tokens.
Result<std::vector<uint32_t>> ParseTokenizeResponse(std::string_view body, size_t max_tokens);
// Decodes an /apply-template response body: {"prompt": "..."}; at most `max_bytes` of prompt.
Result<std::string> ParseApplyTemplateResponse(std::string_view body, size_t max_bytes);

// The "messages" array of a chat request body, as JSON text; INVALID_ARGUMENT if absent.
Result<std::string> MessagesJson(std::string_view chat_body);

}  // namespace hearsay::upstream
