// Blocking HTTP/1.1 over Boost.Asio with deadlines (see the header).
#include "hearsay/testkit/blocking_http.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <charconv>
#include <nlohmann/json.hpp>
#include <utility>  // before Asio: Boost 1.74's coroutine headers need std::exchange

#include "hearsay/api/sse_parser.h"
#include "hearsay/testkit/response_reader.h"

namespace hearsay::testkit {
namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr size_t kReadChunk = 16 * 1024;
// Bound on one buffered server-sent event.
constexpr size_t kMaxEventBytes = 4 * 1024 * 1024;

Deadline DeadlineIn(std::chrono::milliseconds timeout) { return SteadyClock::now() + timeout; }

bool IsResetLike(const error_code& ec) {
  return ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == asio::error::connection_aborted;
}

}  // namespace

Result<std::pair<std::string, uint16_t>> SplitHostPort(std::string_view address) {
  std::string_view host;
  std::string_view port;
  if (!address.empty() && address.front() == '[') {
    const size_t close = address.find(']');
    if (close == std::string_view::npos || close + 1 >= address.size() ||
        address[close + 1] != ':') {
      return InvalidArgumentError("bad address '" + std::string(address) + "': want [v6]:port");
    }
    host = address.substr(1, close - 1);
    port = address.substr(close + 2);
  } else {
    const size_t colon = address.rfind(':');
    if (colon == std::string_view::npos) {
      return InvalidArgumentError("bad address '" + std::string(address) + "': want host:port");
    }
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
  }
  unsigned value = 0;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (host.empty() || port.empty() || ec != std::errc() || ptr != port.data() + port.size() ||
      value == 0 || value > 65535) {
    return InvalidArgumentError("bad address '" + std::string(address) + "': want host:port");
  }
  return std::pair<std::string, uint16_t>(std::string(host), static_cast<uint16_t>(value));
}

// One connection and the io_context that drives it. Each operation starts an async op and runs
// the io_context until the op completes or the deadline passes; on the deadline the socket is
// closed (which cancels the op) and the connection is dead.
struct RawConnection::Impl {
  asio::io_context io;
  tcp::socket socket{io};
  bool open = false;

  // Runs until `done` or `deadline`. False on the deadline (the socket is then closed).
  bool RunUntil(const bool& done, Deadline deadline) {
    io.restart();
    while (!done) {
      if (io.run_one_until(deadline) == 0 && !done) {
        if (SteadyClock::now() >= deadline || io.stopped()) {
          Close();
          io.restart();
          io.run();  // deliver the cancelled handler so nothing refers to the stack
          return false;
        }
      }
    }
    return true;
  }

  void Close() {
    error_code ignored;
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
    open = false;
  }

  Status Connect(const std::string& address, Deadline deadline) {
    HEARSAY_ASSIGN_OR_RETURN(auto host_port, SplitHostPort(address));
    error_code ec;
    tcp::resolver resolver(io);
    auto endpoints = resolver.resolve(host_port.first, std::to_string(host_port.second),
                                      tcp::resolver::numeric_service, ec);
    if (ec) return UnavailableError("resolve " + address + ": " + ec.message());
    bool done = false;
    error_code result;
    asio::async_connect(socket, endpoints, [&](const error_code& e, const tcp::endpoint&) {
      result = e;
      done = true;
    });
    if (!RunUntil(done, deadline)) return DeadlineExceededError("connect " + address + ": timeout");
    if (result) return UnavailableError("connect " + address + ": " + result.message());
    socket.set_option(tcp::no_delay(true), ec);
    open = true;
    return OkStatus();
  }

  Status Write(std::string_view bytes, Deadline deadline) {
    if (!open) return FailedPreconditionError("write on a closed connection");
    bool done = false;
    error_code result;
    asio::async_write(socket, asio::buffer(bytes.data(), bytes.size()),
                      [&](const error_code& e, size_t) {
                        result = e;
                        done = true;
                      });
    if (!RunUntil(done, deadline)) return DeadlineExceededError("write: timeout");
    if (result) {
      return IsResetLike(result) ? UnavailableError("write: " + result.message())
                                 : InternalError("write: " + result.message());
    }
    return OkStatus();
  }

  // Some bytes, "" at EOF.
  Result<std::string> ReadSome(Deadline deadline) {
    if (!open) return FailedPreconditionError("read on a closed connection");
    std::string buf(kReadChunk, '\0');
    bool done = false;
    error_code result;
    size_t n = 0;
    socket.async_read_some(asio::buffer(buf), [&](const error_code& e, size_t got) {
      result = e;
      n = got;
      done = true;
    });
    if (!RunUntil(done, deadline)) return DeadlineExceededError("read: timeout");
    if (result == asio::error::eof) return std::string();
    if (result) {
      return IsResetLike(result) ? UnavailableError("read: " + result.message())
                                 : InternalError("read: " + result.message());
    }
    buf.resize(n);
    return buf;
  }
};

RawConnection::RawConnection(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RawConnection::~RawConnection() { impl_->Close(); }

Result<std::unique_ptr<RawConnection>> RawConnection::Connect(const std::string& address,
                                                              std::chrono::milliseconds timeout) {
  auto impl = std::make_unique<Impl>();
  HEARSAY_RETURN_IF_ERROR(impl->Connect(address, DeadlineIn(timeout)));
  return std::unique_ptr<RawConnection>(new RawConnection(std::move(impl)));
}

Status RawConnection::Write(std::string_view bytes, std::chrono::milliseconds timeout) {
  return impl_->Write(bytes, DeadlineIn(timeout));
}

Result<std::string> RawConnection::ReadSome(std::chrono::milliseconds timeout) {
  return impl_->ReadSome(DeadlineIn(timeout));
}

Result<std::string> RawConnection::ReadUntilClose(std::chrono::milliseconds timeout) {
  const Deadline deadline = DeadlineIn(timeout);
  std::string all;
  while (true) {
    Result<std::string> got = impl_->ReadSome(deadline);
    if (!got.ok()) {
      if (got.status().code() == StatusCode::kUnavailable && !all.empty()) return all;
      return got.status();
    }
    if (got->empty()) return all;
    all += *got;
  }
}

namespace {

std::string Serialize(const std::string& address, const HttpRequest& request) {
  std::string out =
      request.method + " " + request.target + " HTTP/1.1\r\nHost: " + address + "\r\n";
  bool has_length = false;
  bool has_connection = false;
  for (const auto& [name, value] : request.headers) {
    has_length = has_length || http::EqualsIgnoreCase(name, "content-length");
    has_connection = has_connection || http::EqualsIgnoreCase(name, "connection");
    out += name + ": " + value + "\r\n";
  }
  if (!has_length &&
      (!request.body.empty() || request.method == "POST" || request.method == "PUT")) {
    out += "Content-Length: " + std::to_string(request.body.size()) + "\r\n";
  }
  if (!has_connection) out += "Connection: close\r\n";
  out += "\r\n";
  out += request.body;
  return out;
}

// Connects and sends the request. A failed write is returned in `*write_status`, not as an error:
// the server may have answered (and closed) before reading the whole body.
Result<std::unique_ptr<RawConnection::Impl>> Send(const std::string& address,
                                                  const HttpRequest& request, Deadline deadline,
                                                  Status* write_status) {
  auto conn = std::make_unique<RawConnection::Impl>();
  HEARSAY_RETURN_IF_ERROR(conn->Connect(address, deadline));
  *write_status = conn->Write(Serialize(address, request), deadline);
  if (write_status->code() == StatusCode::kDeadlineExceeded) return *write_status;
  return conn;
}

}  // namespace

Result<HttpResponse> HttpCall(const std::string& address, const HttpRequest& request,
                              std::chrono::milliseconds timeout) {
  const Deadline deadline = DeadlineIn(timeout);
  Status write_status;
  HEARSAY_ASSIGN_OR_RETURN(auto conn, Send(address, request, deadline, &write_status));
  ResponseReader parser(request.method == "HEAD");
  HttpResponse response;
  while (!parser.complete()) {
    Result<std::string> got = conn->ReadSome(deadline);
    if (!got.ok()) {
      return write_status.ok() ? got.status() : write_status;
    }
    if (got->empty()) {
      Status eof = parser.FinishOnEof();
      if (!eof.ok()) return write_status.ok() ? eof : write_status;
      break;
    }
    HEARSAY_RETURN_IF_ERROR(parser.Feed(*got));
    response.body += parser.TakeBody();
  }
  response.body += parser.TakeBody();
  response.status = parser.status_code();
  response.headers = parser.headers();
  return response;
}

Result<HttpResponse> HttpGet(const std::string& address, const std::string& target,
                             std::chrono::milliseconds timeout) {
  HttpRequest request;
  request.method = "GET";
  request.target = target;
  return HttpCall(address, request, timeout);
}

Result<HttpResponse> HttpPostJson(const std::string& address, const std::string& target,
                                  const std::string& json, std::chrono::milliseconds timeout,
                                  const HttpHeaders& extra_headers) {
  HttpRequest request;
  request.method = "POST";
  request.target = target;
  request.headers = extra_headers;
  request.headers.emplace_back("Content-Type", "application/json");
  request.body = json;
  return HttpCall(address, request, timeout);
}

bool StreamOutcome::saw_error_event() const {
  for (const TimedSseEvent& e : events) {
    if (e.event.data.empty() || e.event.data.front() != '{') continue;
    nlohmann::json j = nlohmann::json::parse(e.event.data, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("error")) return true;
  }
  return false;
}

Result<StreamOutcome> HttpPostStream(const std::string& address, const std::string& target,
                                     const std::string& json, std::chrono::milliseconds timeout,
                                     const HttpHeaders& extra_headers) {
  const Deadline deadline = DeadlineIn(timeout);
  StreamOutcome out;
  out.started = SteadyClock::now();
  HttpRequest request;
  request.method = "POST";
  request.target = target;
  request.headers = extra_headers;
  request.headers.emplace_back("Content-Type", "application/json");
  request.headers.emplace_back("Accept", "text/event-stream");
  request.body = json;
  Status write_status;
  HEARSAY_ASSIGN_OR_RETURN(auto conn, Send(address, request, deadline, &write_status));

  ResponseReader parser;
  api::SseParser sse(kMaxEventBytes);
  bool is_stream = false;
  auto consume_body = [&]() -> Status {
    std::string body = parser.TakeBody();
    if (!is_stream) {
      out.body += body;
      return OkStatus();
    }
    const auto now = SteadyClock::now();
    sse.Feed(body, [&](std::string_view data) {
      if (!out.first_event_at) out.first_event_at = now;
      out.events.push_back({SseEvent{std::string(data)}, now});
    });
    return sse.status();
  };

  while (!parser.complete()) {
    Result<std::string> got = conn->ReadSome(deadline);
    Status step;
    if (!got.ok()) {
      step = got.status();
    } else if (got->empty()) {
      step = parser.FinishOnEof();
    } else {
      step = parser.Feed(*got);
    }
    if (!parser.headers_done()) {
      if (!step.ok()) return write_status.ok() ? step : write_status;
      if (got.ok() && got->empty()) break;  // unreachable: FinishOnEof fails without headers
      continue;
    }
    if (out.status == 0) {
      out.status = parser.status_code();
      out.headers = parser.headers();
      const std::string_view type = http::FindHeader(out.headers, "content-type").value_or("");
      is_stream = type.rfind("text/event-stream", 0) == 0;
    }
    Status body_status = consume_body();
    if (!body_status.ok()) step = body_status;
    if (!step.ok()) {
      out.transport = step;
      break;
    }
    if (got.ok() && got->empty()) break;
  }
  if (out.transport.ok() && is_stream && !sse.idle()) {
    out.transport = DataLossError("event stream ended in the middle of an event");
  }
  out.finished = SteadyClock::now();
  return out;
}

}  // namespace hearsay::testkit
