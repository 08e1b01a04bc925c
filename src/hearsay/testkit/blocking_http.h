// A small blocking HTTP/1.1 client for tests and tools that drive real `hearsay node` processes:
// one request per connection (`Connection: close`), every call bounded by a deadline, plain
// server-sent event streams followed event by event, and a raw connection for tests that must
// misbehave on purpose (slow headers, oversized bodies, idle sockets).
//
// Responses are parsed by Beast's parser (ResponseReader) and event streams by api::SseParser, the
// parser the daemon itself reads peers' streams with. Built on Boost.Asio: each call runs a private
// io_context until the operation completes or the deadline passes (then the socket is closed and
// the call returns DEADLINE_EXCEEDED). Errors are Status values; nothing throws.
//
// Thread-safety: free functions are safe to call from many threads at once (each call owns its
// io_context and socket). A RawConnection is used from one thread at a time.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/http/headers.h"

namespace hearsay::testkit {

using SteadyClock = std::chrono::steady_clock;
using Deadline = SteadyClock::time_point;
// Header lists; response header names are lower case.
using HttpHeaders = http::Headers;

struct HttpRequest {
  std::string method = "GET";
  std::string target = "/";  // path and query
  HttpHeaders headers;       // extra headers; Host, Content-Length and Connection are added
  std::string body;
};

struct HttpResponse {
  int status = 0;
  HttpHeaders headers;
  std::string body;

  std::optional<std::string> Header(std::string_view name) const {
    std::optional<std::string_view> value = http::FindHeader(headers, name);
    return value ? std::optional<std::string>(*value) : std::nullopt;
  }
};

// Sends `request` to `address` ("host:port") and reads the whole response. A server that answers
// and closes while the request body is still being written (413 on an oversized body) still
// yields its response.
Result<HttpResponse> HttpCall(const std::string& address, const HttpRequest& request,
                              std::chrono::milliseconds timeout);
// GET `target`.
Result<HttpResponse> HttpGet(const std::string& address, const std::string& target,
                             std::chrono::milliseconds timeout);
// POST `json` with Content-Type application/json, plus `extra_headers`.
Result<HttpResponse> HttpPostJson(const std::string& address, const std::string& target,
                                  const std::string& json, std::chrono::milliseconds timeout,
                                  const HttpHeaders& extra_headers = {});

// One server-sent event: its data lines, joined by '\n'.
struct SseEvent {
  std::string data;
};

// One server-sent event and when it arrived.
struct TimedSseEvent {
  SseEvent event;
  SteadyClock::time_point at;
};

// What a streaming call saw. `transport` is OK when the stream ended cleanly (the response was
// complete); otherwise it says how it ended (reset, truncated, deadline).
struct StreamOutcome {
  int status = 0;
  HttpHeaders headers;
  std::string body;  // the body when the response was not an event stream (say, a 4xx JSON)
  std::vector<TimedSseEvent> events;
  Status transport;
  SteadyClock::time_point started;
  std::optional<SteadyClock::time_point> first_event_at;
  SteadyClock::time_point finished;

  // True when the last event is the OpenAI terminator `data: [DONE]`.
  bool saw_done() const { return !events.empty() && events.back().event.data == "[DONE]"; }
  // True when some event carries an OpenAI error object (`{"error": {...}}`).
  bool saw_error_event() const;
};

// POSTs `json` and reads the response as a server-sent event stream until it ends or `timeout`
// passes. A response that is not an event stream (a 4xx JSON error) is returned with its body in
// `body`. The call itself fails only when no response status was received at all (connect error,
// reset before the headers, deadline); everything after that is described in
// StreamOutcome::transport.
Result<StreamOutcome> HttpPostStream(const std::string& address, const std::string& target,
                                     const std::string& json, std::chrono::milliseconds timeout,
                                     const HttpHeaders& extra_headers = {});

// A TCP connection the caller drives byte by byte, for misbehaving-client tests.
class RawConnection {
 public:
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  static Result<std::unique_ptr<RawConnection>> Connect(const std::string& address,
                                                        std::chrono::milliseconds timeout);
  // Writes all of `bytes`; fails if the peer closed or reset the connection.
  Status Write(std::string_view bytes, std::chrono::milliseconds timeout);
  // Reads what arrives within `timeout`: some bytes, or "" when the peer closed the connection
  // (EOF). DEADLINE_EXCEEDED when nothing arrived in time; UNAVAILABLE on a reset.
  Result<std::string> ReadSome(std::chrono::milliseconds timeout);
  // Reads until the peer closes (returns everything read) or `timeout` passes (DEADLINE_EXCEEDED).
  // A reset after some bytes returns those bytes.
  Result<std::string> ReadUntilClose(std::chrono::milliseconds timeout);

  // The connection and its io_context; opaque outside blocking_http.cc.
  struct Impl;

 private:
  explicit RawConnection(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Splits "host:port" (or "[v6]:port"); INVALID_ARGUMENT on anything else.
Result<std::pair<std::string, uint16_t>> SplitHostPort(std::string_view address);

}  // namespace hearsay::testkit
