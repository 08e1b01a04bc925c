// ResponseReader over Beast's response_parser (see the header).
#include "hearsay/testkit/response_reader.h"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cctype>
#include <cstdint>

namespace hearsay::testkit {

namespace beast_http = boost::beast::http;

// Beast bounds a body at 8 MB by default; a test may read more (an oversized-body answer).
constexpr uint64_t kMaxBodyBytes = uint64_t{1} << 32;

struct ResponseReader::Parser {
  explicit Parser(bool head_request) {
    parser.header_limit(kMaxHeaderBytes);
    parser.body_limit(kMaxBodyBytes);
    parser.eager(true);
    parser.skip(head_request);
  }
  beast_http::response_parser<beast_http::string_body> parser;
};

ResponseReader::ResponseReader(bool head_request)
    : head_request_(head_request), parser_(std::make_unique<Parser>(head_request)) {}

ResponseReader::~ResponseReader() = default;

bool ResponseReader::headers_done() const { return parser_->parser.is_header_done(); }
bool ResponseReader::complete() const {
  return error_.ok() && parser_->parser.is_done() && !interim();
}
bool ResponseReader::interim() const {
  const int status = status_code();
  return status >= 100 && status < 200 && status != 101;
}
int ResponseReader::status_code() const {
  return headers_done() ? static_cast<int>(parser_->parser.get().result_int()) : 0;
}
std::string ResponseReader::reason() const {
  return headers_done() ? std::string(parser_->parser.get().reason()) : std::string();
}

std::string ResponseReader::TakeBody() { return std::exchange(parser_->parser.get().body(), {}); }

Status ResponseReader::Fail(std::string message) {
  error_ = DataLossError("malformed HTTP response: " + std::move(message));
  return error_;
}

Status ResponseReader::Feed(std::string_view bytes) {
  if (!error_.ok()) return error_;
  buffer_.append(bytes);
  return Parse();
}

Status ResponseReader::Parse() {
  while (!buffer_.empty()) {
    if (parser_->parser.is_done()) {
      // After an interim 1xx response the real one follows on the same connection.
      if (!interim()) return Fail("bytes after the end of the response");
      parser_ = std::make_unique<Parser>(head_request_);
      headers_.clear();
      headers_read_ = false;
    }
    boost::system::error_code ec;
    const size_t used = parser_->parser.put(boost::asio::buffer(buffer_), ec);
    buffer_.erase(0, used);
    // Before need_more: the header may be complete while the body waits for more bytes.
    if (parser_->parser.is_header_done() && !headers_read_) {
      headers_read_ = true;
      for (const auto& field : parser_->parser.get()) {
        std::string name(field.name_string());
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        headers_.emplace_back(std::move(name), std::string(field.value()));
      }
    }
    if (ec == beast_http::error::need_more) break;
    if (ec) return Fail(ec.message());
    if (used == 0 && !parser_->parser.is_done()) break;
  }
  return OkStatus();
}

Status ResponseReader::FinishOnEof() {
  if (!error_.ok()) return error_;
  if (complete()) return OkStatus();
  if (!parser_->parser.got_some()) return DataLossError("connection closed before any response");
  if (parser_->parser.is_done())
    return DataLossError("connection closed after an interim response");
  boost::system::error_code ec;
  parser_->parser.put_eof(ec);
  if (ec) {
    error_ = DataLossError("connection closed in the middle of the response: " + ec.message());
    return error_;
  }
  return OkStatus();
}

}  // namespace hearsay::testkit
