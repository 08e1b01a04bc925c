// ScanStreamEvent: the fast path of ParseStreamEvent (sse_parser.h).
//
// The entry node of a forwarded request decodes one event of the serving peer per generated
// token; nlohmann's SAX parser made that most of the entry node's instructions per request
// (docs/benchmarks.md, "Forwarding path vs nginx"). This reads the event in one pass over its
// bytes (ScanOpenAiChunk, openai_chunk_scanner.h, shared with the upstream engine's decoder),
// validating the whole text as JSON and keeping only the text, finish reason and usage.
//
// Contract: it answers only when it is sure. A value means the SAX decoder
// (ParseStreamEventSax) would return exactly the same event. nullopt means "ask the SAX decoder":
// "[DONE]", invalid JSON, error events, read keys repeated in one object, values of the wrong
// type in read fields, counts that are not plain integers within uint32, a UTF-8 byte-order mark,
// nesting deeper than kMaxScanDepth, and the other shapes ScanOpenAiChunk leaves to a reference
// decoder. Those are rare, so they cost the SAX decoder's time only when they happen.
// stream_event_scanner_test.cc and openai_request_fuzz.cc check the equivalence.
//
// Thread-safety: a pure function.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "hearsay/api/json_scanner.h"
#include "hearsay/api/repeated_event_decoder.h"
#include "hearsay/api/sse_parser.h"

namespace hearsay::api {

// With `text_span`, an answer also tells where the string that became delta_text lies (nullopt:
// no such string, or one with escapes).
std::optional<StreamEvent> ScanStreamEvent(std::string_view data,
                                           std::optional<TextSpan>* text_span = nullptr);

// ParseStreamEvent for the events of one stream (the serving peer's, at the entry node),
// answering an event that repeats the one before it around another plain text without scanning
// it again (repeated_event_decoder.h).
struct StreamEventTraits {
  using Event = StreamEvent;
  static std::optional<StreamEvent> Scan(std::string_view data, std::optional<TextSpan>* span) {
    return ScanStreamEvent(data, span);  // never accepts "[DONE]": not an object
  }
  static Result<StreamEvent> Parse(std::string_view data) { return ParseStreamEvent(data); }
  static std::string& Text(StreamEvent& e) { return e.delta_text; }
};
using StreamEventDecoder = RepeatedEventDecoder<StreamEventTraits>;

}  // namespace hearsay::api
