// ResponseReader: reads one HTTP/1.1 response from bytes that arrive in arbitrary pieces, for the
// blocking test client. Boost.Beast's http::response_parser does the parsing (status line,
// headers, Content-Length, chunked or close-delimited body); this adaptor buffers what the
// parser has not consumed yet, hands out decoded body bytes as soon as they arrive (so a caller
// can follow a server-sent event stream), skips interim 1xx responses, and turns Beast's errors
// into Status values.
//
// A malformed response (bad status line, bad chunk size, a header block over kMaxHeaderBytes) is
// a DATA_LOSS Status, never a crash, and errors are final.
//
// Thread-safety: a plain value; use from one thread at a time.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "hearsay/common/status.h"
#include "hearsay/http/headers.h"

namespace hearsay::testkit {

class ResponseReader {
 public:
  static constexpr size_t kMaxHeaderBytes = 64 * 1024;

  // `head_request`: the response to a HEAD request has no body whatever its headers say.
  explicit ResponseReader(bool head_request = false);
  ~ResponseReader();
  ResponseReader(const ResponseReader&) = delete;
  ResponseReader& operator=(const ResponseReader&) = delete;

  // Consumes `bytes`. An error is final: the response is malformed.
  Status Feed(std::string_view bytes);
  // The peer closed the connection. OK when that completes the response (a close-delimited body,
  // or an already complete one); DATA_LOSS when the response was cut short.
  Status FinishOnEof();

  // True once the status line and every header have been read.
  bool headers_done() const;
  // True once the whole response has been read.
  bool complete() const;
  int status_code() const;
  std::string reason() const;
  // Names lower case, in arrival order.
  const http::Headers& headers() const { return headers_; }

  // Decoded body bytes received since the last call (chunk framing removed).
  std::string TakeBody();

  struct Parser;  // Beast's parser; defined in response_reader.cc

 private:
  Status Fail(std::string message);
  // Runs the parser over buffer_ until it needs more bytes, completes, or fails.
  Status Parse();
  // The parsed response is an interim 1xx (not 101 Switching Protocols).
  bool interim() const;

  bool head_request_;
  std::unique_ptr<Parser> parser_;
  std::string buffer_;  // bytes the parser has not consumed
  http::Headers headers_;
  bool headers_read_ = false;  // headers_ holds the current response's header
  Status error_;
};

}  // namespace hearsay::testkit
