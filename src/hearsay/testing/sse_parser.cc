// Incremental server-sent events parsing (see the header).
#include "hearsay/harness/sse_parser.h"

#include <utility>

namespace hearsay::harness {

Status SseParser::Feed(std::string_view bytes, std::vector<SseEvent>* out) {
  if (failed_) return DataLossError("event stream: earlier error");
  for (char c : bytes) {
    if (c == '\n' && last_was_cr_) {  // the LF of a CRLF: the line already ended at the CR
      last_was_cr_ = false;
      continue;
    }
    last_was_cr_ = c == '\r';
    if (c == '\n' || c == '\r') {
      OnLine(line_, out);
      line_.clear();
      continue;
    }
    if (line_.size() >= kMaxLineBytes) {
      failed_ = true;
      return ResourceExhaustedError("event stream: a line over " + std::to_string(kMaxLineBytes) +
                                    " bytes");
    }
    line_.push_back(c);
  }
  return OkStatus();
}

void SseParser::OnLine(std::string_view line, std::vector<SseEvent>* out) {
  if (line.empty()) {  // dispatch
    if (has_data_) out->push_back(std::move(event_));
    event_ = SseEvent{};
    has_data_ = false;
    return;
  }
  if (line.front() == ':') return;  // comment
  const size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value;
  if (colon != std::string_view::npos) {
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (has_data_) event_.data.push_back('\n');
    event_.data.append(value);
    has_data_ = true;
  } else if (field == "event") {
    event_.event.assign(value);
  }
  // id, retry and unknown fields do not matter to the harness.
}

}  // namespace hearsay::harness
