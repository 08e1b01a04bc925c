// HttpResponseParser: an incremental parser of one HTTP/1.1 response, for the test harness's
// blocking client. Bytes arrive in arbitrary pieces; the parser decodes the status line, the
// headers and the body (Content-Length, chunked, or delimited by the connection closing) and hands
// out decoded body bytes as soon as they arrive, so a caller can follow a server-sent event stream.
//
// It is strict where a test wants to notice a broken server (malformed status line, bad chunk
// size, a header block over kMaxHeaderBytes) and reports it as an error Status, never a crash.
// Interim 1xx responses are skipped.
//
// Thread-safety: a plain value; use from one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hearsay/common/status.h"

namespace hearsay::harness {

// Response headers in arrival order; names are lower-cased, values trimmed.
using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// The value of the first header called `name` (case-insensitive), if any.
std::optional<std::string> FindHeader(const HttpHeaders& headers, std::string_view name);

class HttpResponseParser {
 public:
  static constexpr size_t kMaxHeaderBytes = 64 * 1024;

  // `head_request`: the response to a HEAD request has no body whatever its headers say.
  explicit HttpResponseParser(bool head_request = false) : head_request_(head_request) {}

  // Consumes `bytes`. An error is final: the response is malformed.
  Status Feed(std::string_view bytes);
  // The peer closed the connection. OK when that completes the response (a close-delimited body,
  // or an already complete one); DATA_LOSS when the response was cut short.
  Status FinishOnEof();

  // True once the status line and every header have been read.
  bool headers_done() const { return state_ > State::kHeaders; }
  // True once the whole response has been read.
  bool complete() const { return state_ == State::kComplete; }
  int status_code() const { return status_code_; }
  const std::string& reason() const { return reason_; }
  const HttpHeaders& headers() const { return headers_; }

  // Decoded body bytes received since the last call (chunk framing removed).
  std::string TakeBody() { return std::exchange(body_, {}); }

 private:
  enum class State {
    kStatusLine,
    kHeaders,
    kBody,
    kChunkSize,
    kChunkData,
    kChunkDataEnd,
    kTrailers,
    kComplete,
    kError
  };
  enum class BodyKind { kNone, kLength, kChunked, kUntilClose };

  Status Fail(std::string message);
  // Pops one CRLF- (or LF-) terminated line from buffer_ into `line`; false if none is complete.
  bool PopLine(std::string* line);
  Status ParseStatusLine(const std::string& line);
  Status ParseHeaderLine(const std::string& line);
  Status OnHeadersDone();

  bool head_request_;
  State state_ = State::kStatusLine;
  BodyKind body_kind_ = BodyKind::kNone;
  std::string buffer_;  // undecoded bytes
  size_t header_bytes_ = 0;
  int status_code_ = 0;
  std::string reason_;
  HttpHeaders headers_;
  uint64_t remaining_ = 0;  // bytes left of the Content-Length body or the current chunk
  std::string body_;
};

}  // namespace hearsay::harness
