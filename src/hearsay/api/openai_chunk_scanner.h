// ScanOpenAiChunk: one pass over the JSON of an OpenAI-compatible completion chunk (a streamed
// event, or a whole answer that was not streamed), keeping the few values hearsay reads and what
// kind of JSON value each field held. It decides nothing about what the chunk means: its two
// readers do, each as its reference decoder would: ScanStreamEvent (stream_event_scanner.h, the
// entry node reading a peer's stream) and upstream::ScanUpstreamChunk (chunk_scanner.h, the
// engine reading an upstream server's).
//
// The scanner validates the whole text as JSON (RFC 8259 as nlohmann parses it: no comments, no
// trailing commas, UTF-8 and surrogate pairs checked; json_scanner.h) without allocating more than
// the text it keeps. nullopt means "not sure, ask the reference decoder": invalid JSON, a non-null
// "error", a read key repeated in one object, "choices" that is not an array or null, "usage" or
// "timings" (or usage's prompt_tokens_details) that is not an object or null, choices[0] that is
// not an object, counts that are not plain unsigned integers within uint32 (or null), a
// timings.prompt_ms that does not parse, and nesting deeper than kMaxScanDepth.
//
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "hearsay/api/json_scanner.h"

namespace hearsay::api {

// The kind of JSON value a read field held.
enum class JsonKind : uint8_t { kAbsent, kNull, kString, kObject, kOther };

// A field read as text.
struct ScannedText {
  JsonKind kind = JsonKind::kAbsent;
  std::string value;             // its decoded value, when kind is kString
  std::optional<TextSpan> span;  // where it lies in the input, when a string without escapes
};

// choices[0].delta or choices[0].message: an object whose "content" is the text.
struct ScannedHolder {
  JsonKind kind = JsonKind::kAbsent;  // kNull, kObject or kOther when present
  ScannedText content;                // read when kind is kObject
};

struct ScannedChunk {
  bool has_choices = false;  // "choices" was an array
  bool has_usage = false;    // "usage" was an object
  bool has_timings = false;  // "timings" (llama.cpp) was an object
  // choices[0]: text, finish_reason, delta and message.
  ScannedText text;
  ScannedText finish_reason;
  ScannedHolder delta;
  ScannedHolder message;
  // usage: unset when absent or null.
  std::optional<uint32_t> prompt_tokens;
  std::optional<uint32_t> completion_tokens;
  std::optional<uint32_t> cached_tokens;  // usage.prompt_tokens_details.cached_tokens
  // timings: unset when absent or null; prompt_ms also when not a number in [0, 1e9).
  std::optional<uint32_t> cache_n;
  std::optional<uint32_t> prompt_n;
  std::optional<double> prompt_ms;
};

// What the chunk in `data` holds, or nullopt when unsure (see above).
std::optional<ScannedChunk> ScanOpenAiChunk(std::string_view data);

}  // namespace hearsay::api
