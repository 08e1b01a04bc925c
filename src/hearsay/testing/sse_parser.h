// SseParser: an incremental parser of a server-sent event stream (the text/event-stream format of
// the HTML standard), as OpenAI-style streaming responses use it. Fed decoded body bytes in any
// pieces, it returns each complete event: consecutive `data:` lines joined by '\n', with the
// optional `event:` name. Comment lines (":...") and unknown fields are ignored. Lines end in
// LF, CRLF or CR.
//
// Thread-safety: a plain value; use from one thread at a time.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/common/status.h"

namespace hearsay::harness {

struct SseEvent {
  std::string event;  // the `event:` field; empty means the default "message"
  std::string data;   // the `data:` lines, joined by '\n'
};

class SseParser {
 public:
  // Bound on one line, so a stream without line breaks cannot grow memory without limit.
  static constexpr size_t kMaxLineBytes = 4 * 1024 * 1024;

  // Consumes `bytes` and appends every event they complete to `out`. An error (a line over
  // kMaxLineBytes) is final.
  Status Feed(std::string_view bytes, std::vector<SseEvent>* out);
  // True when bytes of an unfinished event are pending (the stream stopped mid-event).
  bool has_partial_event() const { return !line_.empty() || has_data_ || !event_.event.empty(); }

 private:
  void OnLine(std::string_view line, std::vector<SseEvent>* out);

  std::string line_;  // the current, unterminated line
  bool last_was_cr_ = false;
  bool has_data_ = false;
  bool failed_ = false;
  SseEvent event_;  // the event being assembled
};

}  // namespace hearsay::harness
