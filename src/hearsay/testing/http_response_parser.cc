// Incremental HTTP/1.1 response parsing (see the header).
#include "hearsay/harness/http_response_parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace hearsay::harness {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool ParseUnsigned(std::string_view s, int base, uint64_t* out) {
  if (s.empty() || s.size() > 16) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

std::optional<std::string> FindHeader(const HttpHeaders& headers, std::string_view name) {
  const std::string key = Lower(name);
  for (const auto& [k, v] : headers) {
    if (k == key) return v;
  }
  return std::nullopt;
}

Status HttpResponseParser::Fail(std::string message) {
  state_ = State::kError;
  return DataLossError("malformed HTTP response: " + std::move(message));
}

bool HttpResponseParser::PopLine(std::string* line) {
  const size_t nl = buffer_.find('\n');
  if (nl == std::string::npos) return false;
  size_t end = nl;
  if (end > 0 && buffer_[end - 1] == '\r') --end;
  line->assign(buffer_, 0, end);
  buffer_.erase(0, nl + 1);
  return true;
}

Status HttpResponseParser::ParseStatusLine(const std::string& line) {
  // HTTP/1.x SP 3DIGIT SP reason
  if (line.size() < 12 || line.compare(0, 7, "HTTP/1.") != 0 || line[8] != ' ') {
    return Fail("bad status line '" + line.substr(0, 80) + "'");
  }
  uint64_t code = 0;
  if (!ParseUnsigned(std::string_view(line).substr(9, 3), 10, &code) || code < 100 || code > 999 ||
      (line.size() > 12 && line[12] != ' ')) {
    return Fail("bad status code in '" + line.substr(0, 80) + "'");
  }
  status_code_ = static_cast<int>(code);
  reason_ = line.size() > 13 ? line.substr(13) : "";
  headers_.clear();
  return OkStatus();
}

Status HttpResponseParser::ParseHeaderLine(const std::string& line) {
  const size_t colon = line.find(':');
  if (colon == std::string::npos || colon == 0) {
    return Fail("bad header line '" + line.substr(0, 80) + "'");
  }
  std::string_view name(line.data(), colon);
  if (name.find_first_of(" \t") != std::string_view::npos) {
    return Fail("whitespace in header name '" + std::string(name) + "'");
  }
  headers_.emplace_back(Lower(name), std::string(Trim(std::string_view(line).substr(colon + 1))));
  return OkStatus();
}

Status HttpResponseParser::OnHeadersDone() {
  if (status_code_ >= 100 && status_code_ < 200) {  // interim response: a real one follows
    state_ = State::kStatusLine;
    header_bytes_ = 0;
    return OkStatus();
  }
  const std::optional<std::string> te = FindHeader(headers_, "transfer-encoding");
  const std::optional<std::string> cl = FindHeader(headers_, "content-length");
  if (head_request_ || status_code_ == 204 || status_code_ == 304) {
    body_kind_ = BodyKind::kNone;
  } else if (te.has_value()) {
    if (Lower(*te) != "chunked") return Fail("unsupported transfer-encoding '" + *te + "'");
    body_kind_ = BodyKind::kChunked;
  } else if (cl.has_value()) {
    if (!ParseUnsigned(*cl, 10, &remaining_)) return Fail("bad content-length '" + *cl + "'");
    body_kind_ = BodyKind::kLength;
  } else {
    body_kind_ = BodyKind::kUntilClose;
  }
  switch (body_kind_) {
    case BodyKind::kNone:
      state_ = State::kComplete;
      break;
    case BodyKind::kLength:
      state_ = remaining_ == 0 ? State::kComplete : State::kBody;
      break;
    case BodyKind::kChunked:
      state_ = State::kChunkSize;
      break;
    case BodyKind::kUntilClose:
      state_ = State::kBody;
      break;
  }
  return OkStatus();
}

Status HttpResponseParser::Feed(std::string_view bytes) {
  if (state_ == State::kError) return DataLossError("malformed HTTP response (earlier error)");
  buffer_.append(bytes);
  std::string line;
  while (true) {
    switch (state_) {
      case State::kStatusLine:
      case State::kHeaders: {
        if (!PopLine(&line)) {
          if (header_bytes_ + buffer_.size() > kMaxHeaderBytes) {
            return Fail("header block over " + std::to_string(kMaxHeaderBytes) + " bytes");
          }
          return OkStatus();
        }
        header_bytes_ += line.size() + 2;
        if (header_bytes_ > kMaxHeaderBytes) {
          return Fail("header block over " + std::to_string(kMaxHeaderBytes) + " bytes");
        }
        if (state_ == State::kStatusLine) {
          HEARSAY_RETURN_IF_ERROR(ParseStatusLine(line));
          state_ = State::kHeaders;
        } else if (line.empty()) {
          HEARSAY_RETURN_IF_ERROR(OnHeadersDone());
        } else {
          HEARSAY_RETURN_IF_ERROR(ParseHeaderLine(line));
        }
        break;
      }
      case State::kBody: {
        if (buffer_.empty()) return OkStatus();
        if (body_kind_ == BodyKind::kUntilClose) {
          body_.append(buffer_);
          buffer_.clear();
          return OkStatus();
        }
        const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, buffer_.size()));
        body_.append(buffer_, 0, n);
        buffer_.erase(0, n);
        remaining_ -= n;
        if (remaining_ == 0) state_ = State::kComplete;
        break;
      }
      case State::kChunkSize: {
        if (!PopLine(&line)) {
          if (buffer_.size() > 1024) return Fail("chunk size line too long");
          return OkStatus();
        }
        std::string_view size_text = Trim(std::string_view(line).substr(0, line.find(';')));
        if (!ParseUnsigned(size_text, 16, &remaining_)) {
          return Fail("bad chunk size '" + line.substr(0, 40) + "'");
        }
        state_ = remaining_ == 0 ? State::kTrailers : State::kChunkData;
        break;
      }
      case State::kChunkData: {
        if (buffer_.empty()) return OkStatus();
        const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, buffer_.size()));
        body_.append(buffer_, 0, n);
        buffer_.erase(0, n);
        remaining_ -= n;
        if (remaining_ == 0) state_ = State::kChunkDataEnd;
        break;
      }
      case State::kChunkDataEnd: {
        // Exactly CRLF (or LF) must follow the chunk's data.
        if (buffer_.empty()) return OkStatus();
        if (buffer_[0] == '\n') {
          buffer_.erase(0, 1);
        } else if (buffer_[0] == '\r') {
          if (buffer_.size() < 2) return OkStatus();
          if (buffer_[1] != '\n') return Fail("chunk data not followed by CRLF");
          buffer_.erase(0, 2);
        } else {
          return Fail("chunk data not followed by CRLF");
        }
        state_ = State::kChunkSize;
        break;
      }
      case State::kTrailers: {
        if (!PopLine(&line)) {
          if (buffer_.size() > kMaxHeaderBytes) return Fail("trailers too long");
          return OkStatus();
        }
        if (line.empty()) state_ = State::kComplete;
        break;
      }
      case State::kComplete:
        // Bytes after a complete response (a server that sent more than it declared) are ignored:
        // the harness never pipelines, so nothing legitimate can follow.
        buffer_.clear();
        return OkStatus();
      case State::kError:
        return DataLossError("malformed HTTP response (earlier error)");
    }
  }
}

Status HttpResponseParser::FinishOnEof() {
  if (state_ == State::kError) return DataLossError("malformed HTTP response (earlier error)");
  if (state_ == State::kComplete) return OkStatus();
  if (state_ == State::kBody && body_kind_ == BodyKind::kUntilClose) {
    state_ = State::kComplete;
    return OkStatus();
  }
  const bool started = state_ != State::kStatusLine || !buffer_.empty();
  state_ = State::kError;
  return DataLossError(started ? "connection closed in the middle of the response"
                               : "connection closed before any response");
}

}  // namespace hearsay::harness
