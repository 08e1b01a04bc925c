// SseParser: an incremental parser of server-sent events, and the decoder of OpenAI stream events.
//
// The entry node of a forwarded request reads the serving peer's event stream with it. SseParser
// follows the WHATWG event-stream rules for what we use:
//   - lines end in CRLF, LF or CR, and bytes may be split anywhere between Feed() calls (a CR at
//     the end of one chunk and an LF at the start of the next are one line end);
//   - "data:" lines append their value (one leading space removed) to the event's data; several
//     data lines are joined with "\n";
//   - a line starting with ':' is a comment; other fields (event, id, retry) are ignored;
//   - an empty line dispatches the event if it has data; a UTF-8 BOM at the start is skipped;
//   - an unterminated event at the end of the stream is dropped (the caller just stops feeding).
// The bytes buffered for one event (its data plus the current line) are bounded: past the bound
// the parser enters an error state with RESOURCE_EXHAUSTED, dispatches nothing more, and ignores
// further input.
//
// ParseStreamEvent() (stream_event.cc) decodes one event's data: an OpenAI chunk of either
// endpoint, "[DONE]", or an error event, as rendered by openai_response.h. It runs once per
// forwarded token, so it reads the JSON in one pass without building a tree; a key it reads
// that appears twice in one object, or nesting deeper than 64, is refused.
//
// Thread-safety: SseParser is not thread-safe (one per stream); ParseStreamEvent is pure.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "hearsay/api/api_error.h"
#include "hearsay/api/openai_response.h"
#include "hearsay/common/status.h"

namespace hearsay::api {

class SseParser {
 public:
  static constexpr size_t kDefaultMaxEventBytes = size_t{1} << 20;

  // `max_event_bytes` (>= 1) bounds one event's buffered data and current line.
  explicit SseParser(size_t max_event_bytes = kDefaultMaxEventBytes);

  // Parses `bytes`, calling `on_event` with each complete event's data, in order. `data` is valid
  // only during the call (it may point into `bytes` or into the parser), and `on_event` must not
  // destroy the parser. Does nothing once in the error state.
  void Feed(std::string_view bytes, const std::function<void(std::string_view data)>& on_event);

  // OK, or why the parser stopped (RESOURCE_EXHAUSTED for an oversize event).
  const Status& status() const { return status_; }
  bool ok() const { return status_.ok(); }
  // True when no partial line or event is buffered (a clean place for the stream to end).
  bool idle() const { return line_.empty() && data_.empty(); }

 private:
  // Splits `bytes` into lines (after any BOM handling).
  void FeedLines(std::string_view bytes, const std::function<void(std::string_view)>& on_event);
  // Handles one complete line (without its line end).
  void ProcessLine(std::string_view line, const std::function<void(std::string_view)>& on_event);
  // Fails with RESOURCE_EXHAUSTED if `extra` more buffered bytes exceed the bound.
  bool Fits(size_t extra);

  size_t max_event_bytes_;
  Status status_;
  // The current line's bytes so far, when it spans Feed() calls.
  std::string line_;
  // The event's data so far, each data line followed by '\n' (so an empty data line counts).
  std::string data_;
  // The previous byte was a CR: a following LF belongs to the same line end.
  bool after_cr_ = false;
  // Still at the very start of the stream, where a BOM may appear (possibly split), and how
  // many of its bytes were seen.
  bool at_start_ = true;
  size_t bom_bytes_seen_ = 0;
};

// One decoded stream event.
struct StreamEvent {
  // New output text (chunk text or delta content); may be empty.
  std::string delta_text;
  // Present when the chunk carries usage.
  std::optional<UsageCounts> usage;
  // Present for an error event ({"error":{...}}); its http_status is 500 (a stream has no status).
  std::optional<ApiError> error;
  // The choice's finish_reason, empty while the choice goes on.
  std::string finish_reason;
  // True for "[DONE]".
  bool done = false;
};

// Decodes one event's data. INVALID_ARGUMENT when it is neither [DONE], a chunk, nor an error.
// Ordinary chunks take a one-pass scanner (ScanStreamEvent); the rest, errors included, the SAX
// decoder below, whose answers the scanner's are checked against.
Result<StreamEvent> ParseStreamEvent(std::string_view data);

// The same through nlohmann's SAX parser, always: the reference for the fast path.
Result<StreamEvent> ParseStreamEventSax(std::string_view data);

}  // namespace hearsay::api
