// Incremental event-stream parsing, by the WHATWG rules for data lines.
#include "hearsay/api/sse_parser.h"

#include <cstring>

namespace hearsay::api {

namespace {
constexpr std::string_view kBom = "\xEF\xBB\xBF";

// The length of the line end at bytes[at] (a CR, LF or CRLF): 1 or 2, or 0 for a CR that ends the
// buffer (whether an LF follows is not known yet).
size_t LineEndLength(std::string_view bytes, size_t at) {
  if (bytes[at] == '\n') return 1;
  if (at + 1 == bytes.size()) return 0;
  return bytes[at + 1] == '\n' ? 2 : 1;
}
}  // namespace

SseParser::SseParser(size_t max_event_bytes) : max_event_bytes_(max_event_bytes) {
  HEARSAY_CHECK(max_event_bytes_ >= 1);
}

bool SseParser::Fits(size_t extra) {
  if (data_.size() + extra <= max_event_bytes_) return true;
  status_ = ResourceExhaustedError("server-sent event exceeds the limit of " +
                                   std::to_string(max_event_bytes_) + " bytes");
  line_.clear();
  line_.shrink_to_fit();
  data_.clear();
  data_.shrink_to_fit();
  return false;
}

void SseParser::Feed(std::string_view bytes,
                     const std::function<void(std::string_view)>& on_event) {
  if (!ok()) return;
  if (at_start_) {
    while (!bytes.empty() && bom_bytes_seen_ < kBom.size() && bytes[0] == kBom[bom_bytes_seen_]) {
      ++bom_bytes_seen_;
      bytes.remove_prefix(1);
    }
    if (bom_bytes_seen_ < kBom.size()) {
      if (bytes.empty()) return;  // still possibly a BOM
      // Not a BOM after all: the bytes taken for one were ordinary input.
      at_start_ = false;
      FeedLines(kBom.substr(0, bom_bytes_seen_), on_event);
    }
    at_start_ = false;
  }
  FeedLines(bytes, on_event);
}

void SseParser::FeedLines(std::string_view bytes,
                          const std::function<void(std::string_view)>& on_event) {
  size_t i = 0;
  const size_t n = bytes.size();
  if (after_cr_ && n > 0) {
    if (bytes[0] == '\n') i = 1;
    after_cr_ = false;
  }
  while (i < n && ok()) {
    // Two memchr calls (the LF, then a CR before it) instead of a loop over every byte;
    // find_first_of with a two-byte set would call memchr once per input byte.
    const char* from = bytes.data() + i;
    const auto* lf = static_cast<const char*>(std::memchr(from, '\n', n - i));
    const size_t until_lf = lf == nullptr ? n - i : static_cast<size_t>(lf - from);
    const auto* cr = static_cast<const char*>(std::memchr(from, '\r', until_lf));
    const size_t end = i + (cr == nullptr ? until_lf : static_cast<size_t>(cr - from));
    if (end == n) {
      if (!Fits(line_.size() + (n - i))) return;
      line_.append(bytes.substr(i));
      return;
    }
    const std::string_view piece = bytes.substr(i, end - i);
    if (line_.empty()) {
      if (!Fits(piece.size())) return;
      // The common event, one data line and a blank one, both in this buffer: dispatched from
      // the input itself, without copying it into data_.
      const size_t next = LineEndLength(bytes, end) == 0 ? n : end + LineEndLength(bytes, end);
      if (data_.empty() && next < n && (bytes[next] == '\n' || bytes[next] == '\r') &&
          piece.starts_with("data:")) {
        std::string_view value = piece.substr(5);
        if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
        if (!Fits(value.size() + 1)) return;
        on_event(value);
        const size_t blank_end = LineEndLength(bytes, next);
        if (blank_end == 0) {
          after_cr_ = true;  // a CR ends the buffer: an LF may follow in the next Feed()
          return;
        }
        i = next + blank_end;
        continue;
      }
      ProcessLine(piece, on_event);
    } else {
      if (!Fits(line_.size() + piece.size())) return;
      line_.append(piece);
      std::string line = std::move(line_);
      line_.clear();
      ProcessLine(line, on_event);
    }
    if (bytes[end] == '\r') {
      if (end + 1 == n) {
        after_cr_ = true;  // an LF may follow in the next Feed()
        i = n;
      } else {
        i = bytes[end + 1] == '\n' ? end + 2 : end + 1;
      }
    } else {
      i = end + 1;
    }
  }
}

void SseParser::ProcessLine(std::string_view line,
                            const std::function<void(std::string_view)>& on_event) {
  if (line.empty()) {
    if (data_.empty()) return;
    data_.pop_back();  // the '\n' after the last data line
    on_event(data_);
    data_.clear();  // keeps its capacity for the next event
    return;
  }
  if (line[0] == ':') return;  // comment
  const size_t colon = line.find(':');
  const std::string_view field = line.substr(0, colon);
  if (field != "data") return;  // event, id, retry and unknown fields do not concern us
  std::string_view value =
      colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  if (!Fits(value.size() + 1)) return;
  data_.append(value);
  data_.push_back('\n');
}

}  // namespace hearsay::api
