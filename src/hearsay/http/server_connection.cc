#include "hearsay/http/server_connection.h"

#include <boost/beast/http/error.hpp>
#include <limits>

#include "hearsay/http/certificates.h"
#include "hearsay/http/error_body.h"

namespace hearsay::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

// Bytes asked of the socket per read.
constexpr size_t kReadChunk = 16 * 1024;
// How long a closing connection drains the client's input after our last response.
constexpr Duration kLingerTime = 2s;
constexpr size_t kLingerMaxBytes = 1 << 20;

std::string_view View(beast::string_view s) { return {s.data(), s.size()}; }

std::string LowerCopy(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

void Connection::Start() {
  error_code ec;
  socket_.set_option(tcp::no_delay(true), ec);
  socket_.non_blocking(true, ec);  // Flush writes at once what fits
  auto remote = socket_.remote_endpoint(ec);
  if (!ec) remote_ = remote.address().to_string() + ":" + std::to_string(remote.port());
  if (tls_) {
    phase_ = Phase::kHandshake;
    ArmReadTimer(options_.handshake_timeout);
    return tls_->async_handshake(
        boost::asio::ssl::stream_base::server,
        [self = shared_from_this()](error_code e) { self->OnHandshake(e); });
  }
  BeginHeader();
  ReadMore();
}

void Connection::OnHandshake(error_code ec) {
  if (phase_ != Phase::kHandshake) return;  // closed (a timeout, Server::Close)
  if (ec) {
    server_->counters.tls_handshake_failures.fetch_add(1, std::memory_order_relaxed);
    return CloseNow(false);
  }
  SSL* ssl = tls_->native_handle();
  if (X509* peer = SSL_get0_peer_certificate(ssl);
      peer != nullptr && SSL_get_verify_result(ssl) == X509_V_OK) {
    tls_peer_id_ = NodeIdOf(peer);
  }
  BeginHeader();
  ReadMore();
}

void Connection::PostCloseIfIdle() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    if (self->phase_ == Phase::kIdle) self->CloseNow(false);
  });
}

void Connection::PostClose() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->CloseNow(false); });
}

bool Connection::IsCurrent(uint64_t seq) const {
  return phase_ == Phase::kHandling && responder_active_ && seq == sequence_;
}

// --- Reading -------------------------------------------------------------------------------

void Connection::BeginHeader() {
  parser_.emplace();
  parser_->header_limit(static_cast<uint32_t>(
      std::min<size_t>(options_.max_header_bytes, std::numeric_limits<uint32_t>::max())));
  parser_->body_limit(options_.max_body_bytes);
  parser_->eager(true);
  response_ = ResponseState::kNone;
  chunked_ = false;
  head_request_ = false;
  // The first request's header is due header_timeout after accept; later ones get idle_timeout
  // to begin and header_timeout from their first byte.
  if (first_request_ || buffer_.size() > 0) {
    if (!first_request_ && server_->draining.load()) return CloseNow(false);
    phase_ = Phase::kHeader;
    ArmReadTimer(options_.header_timeout);
  } else {
    phase_ = Phase::kIdle;
    server_->SetIdle(id_, true);
    ArmReadTimer(server_->UnderPressure() ? options_.idle_timeout_under_pressure
                                          : options_.idle_timeout);
  }
  first_request_ = false;
}

void Connection::ReadMore() {
  if (reading_ || phase_ == Phase::kClosed) return;
  // While a request is being handled, input is read only to notice a client that goes away;
  // pipelined bytes wait in the buffer, up to a bound.
  if (phase_ == Phase::kHandling && buffer_.size() >= options_.max_header_bytes + kReadChunk) {
    return;
  }
  reading_ = true;
  auto on_read = [self = shared_from_this()](error_code ec, size_t n) {
    self->reading_ = false;
    self->OnRead(ec, n);
  };
  if (tls_) {
    tls_->async_read_some(buffer_.prepare(kReadChunk), std::move(on_read));
  } else {
    socket_.async_read_some(buffer_.prepare(kReadChunk), std::move(on_read));
  }
}

void Connection::OnRead(error_code ec, size_t n) {
  if (phase_ == Phase::kClosed) return;
  if (phase_ == Phase::kLinger) {
    linger_bytes_ += n;
    if (ec || linger_bytes_ > kLingerMaxBytes) {
      // Our last response may still be on its way out: finish writing it before closing.
      if (lingering_) return CloseNow(false);
      input_done_ = true;
      return;
    }
    buffer_.consume(buffer_.size());
    return ReadMore();
  }
  if (ec) {
    // The client closed or reset. Mid-response that is an abort the handler must hear about.
    return CloseNow(phase_ == Phase::kHandling);
  }
  buffer_.commit(n);
  if (phase_ == Phase::kIdle && buffer_.size() > 0) {
    server_->SetIdle(id_, false);
    phase_ = Phase::kHeader;
    ArmReadTimer(options_.header_timeout);
  }
  if (phase_ == Phase::kHeader || phase_ == Phase::kBody) {
    Parse();
  }
  ReadMore();
}

bool Connection::HasObsFold() const {
  const std::string_view raw(static_cast<const char*>(buffer_.data().data()), buffer_.size());
  const size_t end = raw.find("\r\n\r\n");
  const std::string_view head = raw.substr(0, end);
  return head.find("\n ") != std::string_view::npos || head.find("\n\t") != std::string_view::npos;
}

void Connection::Parse() {
  while (phase_ == Phase::kHeader || phase_ == Phase::kBody) {
    if (phase_ == Phase::kHeader && HasObsFold()) {
      server_->counters.bad_requests.fetch_add(1, std::memory_order_relaxed);
      return SendErrorAndClose(400, "malformed HTTP request: obsolete header line folding");
    }
    error_code ec;
    size_t used = parser_->put(buffer_.data(), ec);
    buffer_.consume(used);
    if (ec == bhttp::error::need_more) return;
    if (ec) return ParseError(ec);
    if (phase_ == Phase::kHeader && parser_->is_header_done()) {
      const auto& head = parser_->get();
      if (head.version() == 11 && head.find(bhttp::field::host) == head.end()) {
        server_->counters.bad_requests.fetch_add(1, std::memory_order_relaxed);
        return SendErrorAndClose(400, "malformed HTTP request: an HTTP/1.1 request needs Host");
      }
      phase_ = Phase::kBody;
      ArmReadTimer(options_.body_timeout);
      MaybeContinue();
    }
    if (parser_->is_done()) return Dispatch();
    if (used == 0 || buffer_.size() == 0) return;
  }
}

void Connection::MaybeContinue() {
  const auto& req = parser_->get();
  auto it = req.find(bhttp::field::expect);
  if (it == req.end() || !EqualsIgnoreCase(View(it->value()), "100-continue")) return;
  if (req.version() < 11 || parser_->is_done()) return;
  Enqueue(std::string("HTTP/1.1 100 Continue\r\n\r\n"));
  Flush();
}

void Connection::ParseError(error_code ec) {
  auto& c = server_->counters;
  if (ec == bhttp::error::header_limit) {
    c.header_too_large.fetch_add(1, std::memory_order_relaxed);
    return SendErrorAndClose(431, "request header is larger than " +
                                      std::to_string(options_.max_header_bytes) + " bytes");
  }
  if (ec == bhttp::error::body_limit) {
    c.body_too_large.fetch_add(1, std::memory_order_relaxed);
    return SendErrorAndClose(
        413, "request body is larger than " + std::to_string(options_.max_body_bytes) + " bytes");
  }
  c.bad_requests.fetch_add(1, std::memory_order_relaxed);
  SendErrorAndClose(400, "malformed HTTP request: " + ec.message());
}

void Connection::Dispatch() {
  read_deadline_.Clear();  // no read deadline while the handler works
  auto& msg = parser_->get();
  Request req;
  req.method = std::string(View(msg.method_string()));
  req.target = std::string(View(msg.target()));
  req.path = req.target.substr(0, req.target.find('?'));
  req.headers.reserve(std::distance(msg.begin(), msg.end()));
  for (const auto& field : msg) {
    req.headers.emplace_back(LowerCopy(View(field.name_string())),
                             std::string(View(field.value())));
  }
  req.remote = remote_;
  req.tls = tls_.has_value();
  req.tls_peer_id = tls_peer_id_;
  req.http_minor = static_cast<int>(msg.version() % 10);
  keep_alive_ = parser_->keep_alive();
  http_minor_ = req.http_minor;
  head_request_ = msg.method() == bhttp::verb::head;
  req.body = std::move(msg.body());
  parser_.reset();

  phase_ = Phase::kHandling;
  sequence_++;
  auto responder = std::make_shared<Responder>(weak_from_this(), sequence_);
  responder_ = responder;
  responder_shared_ = responder->shared_;
  responder_active_ = true;
  server_->counters.requests.fetch_add(1, std::memory_order_relaxed);
  if (server_->closed.load()) return CloseNow(false);
  server_->handler(std::move(req), std::move(responder));
}

// --- Closing -------------------------------------------------------------------------------

void Connection::SendErrorAndClose(int status, std::string message) {
  // Whatever the request was, nothing more is read from it.
  parser_.reset();
  keep_alive_ = false;
  std::string body = ErrorBody(status, message);
  Headers headers = {{"Content-Type", "application/json"}};
  Enqueue(FormatHead(status, headers, body.size(), false, true));
  Enqueue(std::move(body));
  StartLinger();
}

void Connection::StartLinger() {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kLinger;
  read_deadline_.Clear();
  Flush();
}

void Connection::BeginLinger() {
  if (lingering_) return;
  lingering_ = true;
  if (input_done_) return CloseNow(false);
  error_code ec;
  socket_.shutdown(tcp::socket::shutdown_send, ec);
  ArmReadTimer(kLingerTime);
  buffer_.consume(buffer_.size());
  ReadMore();
}

void Connection::ArmReadTimer(Duration d) {
  read_deadline_.Set(d, [self = shared_from_this()] { self->OnReadTimeout(); });
}

void Connection::OnReadTimeout() {
  auto& c = server_->counters;
  switch (phase_) {
    case Phase::kHandshake:
      c.tls_handshake_timeouts.fetch_add(1, std::memory_order_relaxed);
      return CloseNow(false);
    case Phase::kIdle:
      c.idle_closed.fetch_add(1, std::memory_order_relaxed);
      return CloseNow(false);
    case Phase::kHeader:
    case Phase::kBody:
      c.read_timeouts.fetch_add(1, std::memory_order_relaxed);
      return SendErrorAndClose(408, phase_ == Phase::kHeader ? "request header not received in time"
                                                             : "request body not received in time");
    case Phase::kLinger:
      return CloseNow(false);
    case Phase::kHandling:
    case Phase::kClosed:
      return;
  }
}

void Connection::CloseNow(bool client_gone) {
  if (phase_ == Phase::kClosed) return;
  // The responder is current until its response is flushed whole: closing before that is an
  // abort, even if the handler already ended the response.
  bool aborted = responder_active_;
  phase_ = Phase::kClosed;
  error_code ec;
  read_deadline_.Cancel();
  write_deadline_.Cancel();
  socket_.close(ec);
  out_.clear();
  queued_bytes_ = 0;
  server_->Unregister(id_);
  server_->open.fetch_sub(1);
  if (auto r = responder_.lock()) r->closed_.store(true);
  responder_.reset();
  responder_active_ = false;
  auto shared = std::move(responder_shared_);
  if (aborted) {
    if (client_gone) server_->counters.client_aborts.fetch_add(1, std::memory_order_relaxed);
    if (shared) FireOnClose(*shared);
  }
}

// static
void Connection::FireOnClose(Responder::Shared& shared) {
  std::function<void()> cb;
  {
    std::lock_guard lock(shared.mu);
    shared.close_fired = true;
    cb.swap(shared.on_close);
  }
  if (cb) cb();
}

}  // namespace hearsay::http
