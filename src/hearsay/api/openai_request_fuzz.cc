// Fuzzes the API's untrusted-input parsers with arbitrary bytes. Properties checked (a violation
// aborts):
//   - ParseRequest never crashes, for either endpoint; an accepted request satisfies the limits
//     (non-empty prompt within max_prompt_chars, max_tokens in 1..max_output_tokens, at most four
//     non-empty stop sequences); a refused one renders as valid error JSON with status 400;
//   - SseParser gives the same events whether the bytes come whole or split at any point, and its
//     buffered bytes never exceed the bound;
//   - ParseStreamEvent never crashes on any event; a decoded chunk re-rendered and decoded again
//     gives the same text, finish reason and usage;
//   - the tokenizer's pieces are non-empty and concatenate back to the input.
// The seed corpus (fuzz/corpus/openai_request_fuzz/) holds valid and invalid request bodies and
// event streams.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/api/openai_request.h"
#include "hearsay/api/openai_response.h"
#include "hearsay/api/sse_parser.h"
#include "hearsay/api/tokenizer.h"
#include "hearsay/common/check.h"

namespace hearsay::api {
namespace {

void CheckRequest(Endpoint endpoint, std::string_view body) {
  Limits limits;
  limits.max_prompt_chars = 4096;
  limits.max_output_tokens = 256;
  limits.default_max_tokens = 16;
  const auto result = ParseRequest(endpoint, body, limits);
  if (const auto* request = std::get_if<ApiRequest>(&result)) {
    HEARSAY_CHECK(request->endpoint == endpoint);
    HEARSAY_CHECK(!request->model.empty());
    HEARSAY_CHECK(!request->prompt.empty() && request->prompt.size() <= limits.max_prompt_chars);
    HEARSAY_CHECK(request->max_tokens >= 1 && request->max_tokens <= limits.max_output_tokens);
    HEARSAY_CHECK(request->stop.size() <= kMaxStopSequences);
    for (const std::string& stop : request->stop) HEARSAY_CHECK(!stop.empty());
    HEARSAY_CHECK(request->temperature >= 0 && request->temperature <= 2);
    HEARSAY_CHECK(!request->include_usage || request->stream);
    return;
  }
  const ApiError& error = std::get<ApiError>(result);
  HEARSAY_CHECK(error.http_status == 400);
  HEARSAY_CHECK(!error.message.empty() && error.message.size() < 1024);
  const auto rendered = nlohmann::json::parse(RenderError(error), nullptr, false);
  HEARSAY_CHECK(!rendered.is_discarded());
  HEARSAY_CHECK(rendered["error"]["message"].is_string());
}

std::vector<std::string> Events(std::string_view bytes, size_t split, size_t limit, bool* ok) {
  SseParser parser(limit);
  std::vector<std::string> events;
  const auto on_event = [&](std::string_view data) {
    HEARSAY_CHECK(data.size() <= limit);
    events.emplace_back(data);
  };
  parser.Feed(bytes.substr(0, split), on_event);
  parser.Feed(bytes.substr(split), on_event);
  *ok = parser.ok();
  return events;
}

void CheckEvent(std::string_view data) {
  const auto event = ParseStreamEvent(data);
  if (!event.ok() || event->done || event->error) return;
  // Re-render what was decoded and decode it again.
  for (const Endpoint endpoint : {Endpoint::kCompletions, Endpoint::kChatCompletions}) {
    ResponseMeta meta{endpoint, "id", 1, "m", "n"};
    std::string rendered = event->usage ? RenderUsageChunk(meta, *event->usage)
                                        : RenderChunk(meta, event->delta_text, true);
    const auto again = ParseStreamEvent(std::string_view(rendered).substr(6, rendered.size() - 8));
    HEARSAY_CHECK(again.ok());
    HEARSAY_CHECK(again->usage == event->usage);
    if (!event->usage) HEARSAY_CHECK(again->delta_text == event->delta_text);
  }
}

void CheckSse(std::string_view bytes) {
  if (bytes.empty()) return;
  const size_t split = static_cast<uint8_t>(bytes[0]) % (bytes.size() + 1);
  constexpr size_t kLimit = 512;
  bool whole_ok = false;
  bool split_ok = false;
  const auto whole = Events(bytes, bytes.size(), kLimit, &whole_ok);
  const auto parts = Events(bytes, split, kLimit, &split_ok);
  HEARSAY_CHECK(whole_ok == split_ok);
  HEARSAY_CHECK(whole == parts);
  for (const std::string& data : whole) CheckEvent(data);
  // Each input is also tried as one event's data.
  CheckEvent(bytes);
}

void CheckTokenizer(std::string_view text) {
  const Tokenizer tokenizer;
  std::string joined;
  for (std::string_view piece : tokenizer.Pieces(text)) {
    HEARSAY_CHECK(!piece.empty());
    joined.append(piece);
  }
  HEARSAY_CHECK(joined == text);
  HEARSAY_CHECK(tokenizer.Encode(text).size() == tokenizer.Pieces(text).size());
}

}  // namespace
}  // namespace hearsay::api

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  hearsay::api::CheckRequest(hearsay::api::Endpoint::kCompletions, input);
  hearsay::api::CheckRequest(hearsay::api::Endpoint::kChatCompletions, input);
  hearsay::api::CheckSse(input);
  hearsay::api::CheckTokenizer(input);
  return 0;
}
