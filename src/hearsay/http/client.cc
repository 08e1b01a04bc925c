// http::Client on Boost.Asio, with a Beast basic_parser subclass that hands body bytes straight
// from the read buffer to the caller. See client.h for the contract.
//
// One Exchange is one request: it runs on its own strand, takes a pooled connection or opens
// one, writes the request (head and body as two buffers, no copy), then reads and parses the
// response. A connection goes back to the pool only after a complete response with keep-alive and
// no stray bytes after it.
#include "hearsay/http/client.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <limits>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>  // before Asio (std::exchange on g++ 12 with Boost 1.74)
#include <vector>

#include "hearsay/http/certificates.h"
#include "hearsay/http/client_pool.h"
#include "hearsay/http/deadline.h"
#include "hearsay/http/host_port.h"

namespace hearsay::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr size_t kReadChunk = 16 * 1024;

bool IsIdempotent(std::string_view method) {
  return method == "GET" || method == "HEAD" || method == "OPTIONS" || method == "PUT" ||
         method == "DELETE";
}

// RFC 9110 tchar, as a table: the request's method and header names are checked on every send.
constexpr std::array<bool, 256> kTokenChar = [] {
  std::array<bool, 256> t{};
  for (int c = '!'; c <= '~'; ++c) t[c] = true;
  for (char c : std::string_view("\"(),/:;<=>?@[\\]{}")) t[static_cast<uint8_t>(c)] = false;
  return t;
}();

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!kTokenChar[static_cast<uint8_t>(c)]) return false;
  }
  return true;
}

// One plain loop: find_first_of calls memchr once per byte of `s`.
bool HasLineBreakOrNul(std::string_view s, bool or_space = false) {
  for (char c : s) {
    if (c == '\r' || c == '\n' || c == '\0' || (or_space && c == ' ')) return true;
  }
  return false;
}

Status Validate(const ClientRequest& r) {
  if (!IsToken(r.method)) return InvalidArgumentError("bad HTTP method '" + r.method + "'");
  if (r.target.empty() || r.target.front() != '/' ||
      HasLineBreakOrNul(r.target, /*or_space=*/true)) {
    return InvalidArgumentError("bad request target (want an absolute path)");
  }
  for (const auto& [name, value] : r.headers) {
    if (!IsToken(name) || HasLineBreakOrNul(value)) {
      return InvalidArgumentError("bad header '" + name + "'");
    }
  }
  return OkStatus();
}

std::string FormatRequestHead(const ClientRequest& r) {
  std::string head;
  head.reserve(96 + r.target.size() + r.host_port.size() + r.headers.size() * 48);
  head += r.method;
  head += ' ';
  head += r.target;
  head += " HTTP/1.1\r\nHost: ";
  head += r.host_port;
  head += "\r\n";
  for (const auto& [name, value] : r.headers) {
    if (EqualsIgnoreCase(name, "host") || EqualsIgnoreCase(name, "content-length") ||
        EqualsIgnoreCase(name, "transfer-encoding") || EqualsIgnoreCase(name, "connection")) {
      continue;
    }
    head += name;
    head += ": ";
    head += value;
    head += "\r\n";
  }
  if (!r.body.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH") {
    head += "Content-Length: ";
    head += std::to_string(r.body.size());
    head += "\r\n";
  }
  head += "\r\n";
  return head;
}

// Parses a response, handing header and body pieces to the owner as they are parsed.
template <typename Owner>
class StreamingResponseParser final : public bhttp::basic_parser<false> {
 public:
  explicit StreamingResponseParser(Owner& owner) : owner_(owner) {}

  int status() const { return status_; }
  Headers& headers() { return headers_; }

 private:
  void on_request_impl(bhttp::verb, beast::string_view, beast::string_view, int,
                       error_code&) override {}
  void on_response_impl(int code, beast::string_view, int, error_code&) override { status_ = code; }
  void on_field_impl(bhttp::field, beast::string_view name, beast::string_view value,
                     error_code&) override {
    std::string lower(name.data(), name.size());
    for (char& c : lower) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    headers_.emplace_back(std::move(lower), std::string(value.data(), value.size()));
  }
  void on_header_impl(error_code&) override { owner_.OnResponseHeader(status_, headers_); }
  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}
  size_t on_body_impl(beast::string_view body, error_code&) override {
    owner_.OnResponseBody(std::string_view(body.data(), body.size()));
    return body.size();
  }
  void on_chunk_header_impl(std::uint64_t, beast::string_view, error_code&) override {}
  size_t on_chunk_body_impl(std::uint64_t, beast::string_view body, error_code&) override {
    owner_.OnResponseBody(std::string_view(body.data(), body.size()));
    return body.size();
  }
  void on_finish_impl(error_code&) override {}

  Owner& owner_;
  int status_ = 0;
  Headers headers_;
};

}  // namespace

// Owned by its own pending operations (every handler it starts holds it) until they all have
// completed after Finish; never by its handle, so nothing outside the io_context keeps it alive.
class Exchange final : public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(std::shared_ptr<Client::State> client, ClientRequest request, ResponseHandlers handlers,
           uint64_t id)
      : client_(std::move(client)),
        executor_(client_->options.one_thread
                      ? asio::any_io_executor(client_->io.get_executor())
                      : asio::any_io_executor(asio::make_strand(client_->io))),
        request_(std::move(request)),
        handlers_(std::move(handlers)),
        id_(id),
        deadline_(executor_, std::min({request_.connect_timeout, request_.response_timeout,
                                       request_.idle_timeout})),
        resolver_(executor_) {}

  // Begins at once when the caller runs on the exchange's executor (one thread running
  // everything), else posts. Either way no handler runs inside Client::Send: the caller has its
  // handle first (Finish posts an outcome found while starting).
  void Start() {
    asio::dispatch(executor_, [self = shared_from_this()] {
      self->starting_ = true;
      self->Begin();
      self->starting_ = false;
    });
  }

  void Cancel() {
    asio::post(executor_,
               [self = shared_from_this()] { self->Finish(AbortedError("request cancelled")); });
  }

  // Parser callbacks, on the strand inside Parse().
  void OnResponseHeader(int status, const Headers& headers) {
    if (status >= 100 && status < 200 && status != 101) return;  // interim; the real one follows
    headers_seen_ = true;
    ArmTimer(request_.idle_timeout, Awaiting::kBody);
    if (handlers_.on_headers) handlers_.on_headers(status, headers);
  }
  // Body pieces of one Parse() (e.g. the chunks of a chunked stream that one read brought) are
  // collected and handed on together: one on_body per read, not one per chunk.
  void OnResponseBody(std::string_view bytes) {
    if (!done_ && handlers_.on_body) pending_body_.append(bytes);
  }

 private:
  using Parser = StreamingResponseParser<Exchange>;
  // What the deadline waits for; its timeout message is made only when it expires.
  enum class Awaiting { kConnect, kResponse, kBody };

  void Begin() {
    if (done_) return;
    Status valid = Validate(request_);
    if (!valid.ok()) return Finish(valid);
    head_ = FormatRequestHead(request_);
    pool_key_ = request_.host_port;
    if (client_->options.tls) pool_key_ += "\n" + request_.tls_peer_id;
    if (auto pooled = client_->TakeIdle(pool_key_)) {
      conn_ = std::move(pooled);
      reused_ = true;
      client_->counters.reused.fetch_add(1, std::memory_order_relaxed);
      return Write();
    }
    Connect();
  }

  // Only a new connection needs the address parsed: a pooled one was made from the same text.
  void Connect() {
    auto hp = ParseHostPort(request_.host_port);
    if (!hp.ok()) return Finish(hp.status());
    host_port_ = *hp;
    reused_ = false;
    conn_ = std::make_shared<ClientConnection>(client_->io);
    if (client_->options.tls) {
      if (Status s = StartTls(); !s.ok()) return Finish(s);
    }
    ArmTimer(request_.connect_timeout, Awaiting::kConnect);
    error_code ec;
    auto addr = asio::ip::make_address(host_port_.host, ec);
    if (!ec) {
      conn_->socket.async_connect(
          tcp::endpoint(addr, host_port_.port),
          asio::bind_executor(executor_,
                              [self = shared_from_this()](error_code e) { self->OnConnect(e); }));
      return;
    }
    resolver_.async_resolve(
        host_port_.host, std::to_string(host_port_.port),
        asio::bind_executor(executor_, [self = shared_from_this()](
                                           error_code e, tcp::resolver::results_type results) {
          if (self->done_) return;
          if (e) return self->Fail(e, "cannot resolve " + self->host_port_.host);
          asio::async_connect(
              self->conn_->socket, results,
              asio::bind_executor(self->executor_, [self](error_code e2, const tcp::endpoint&) {
                self->OnConnect(e2);
              }));
        }));
  }

  void OnConnect(error_code ec) {
    if (done_) return;
    if (ec) return Fail(ec, "cannot connect to " + request_.host_port);
    client_->counters.opened.fetch_add(1, std::memory_order_relaxed);
    error_code ignored;
    conn_->socket.set_option(tcp::no_delay(true), ignored);
    if (conn_->tls) {
      // Still under the connect deadline: the handshake is part of opening the connection.
      return conn_->tls->async_handshake(
          asio::ssl::stream_base::client,
          asio::bind_executor(executor_, [self = shared_from_this(), c = conn_](error_code e) {
            self->OnHandshake(e);
          }));
    }
    Write();
  }

  // The TLS stream of a new connection: the server must show a certificate the client's
  // context trusts, naming request_.tls_peer_id (checked in OnHandshake) or else the host.
  Status StartTls() {
    conn_->tls_context = client_->options.tls->Current();
    conn_->tls.emplace(conn_->socket, *conn_->tls_context);
    SSL* ssl = conn_->tls->native_handle();
    if (!request_.tls_peer_id.empty()) return OkStatus();
    error_code ec;
    asio::ip::make_address(host_port_.host, ec);
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    const bool ok = ec ? SSL_set_tlsext_host_name(ssl, host_port_.host.c_str()) == 1 &&
                             X509_VERIFY_PARAM_set1_host(param, host_port_.host.c_str(), 0) == 1
                       : X509_VERIFY_PARAM_set1_ip_asc(param, host_port_.host.c_str()) == 1;
    if (!ok) return InvalidArgumentError("cannot check a TLS certificate for " + host_port_.host);
    return OkStatus();
  }

  void OnHandshake(error_code ec) {
    if (done_) return;
    if (ec) return Fail(ec, "TLS handshake with " + request_.host_port);
    if (!request_.tls_peer_id.empty()) {
      const std::string id = NodeIdOf(SSL_get0_peer_certificate(conn_->tls->native_handle()));
      if (id != request_.tls_peer_id) {
        client_->counters.tls_peer_mismatches.fetch_add(1, std::memory_order_relaxed);
        return Finish(UnavailableError("the certificate of " + request_.host_port +
                                       " names node '" + id.substr(0, 128) + "', not '" +
                                       request_.tls_peer_id + "'"));
      }
    }
    Write();
  }

  // The request goes out at once when it fits the socket's buffer (the socket is non-blocking),
  // with no trip through the scheduler; the rest, if any, asynchronously.
  void Write() {
    ArmTimer(request_.response_timeout, Awaiting::kResponse);
    std::array<asio::const_buffer, 2> bufs = {asio::buffer(head_), asio::buffer(request_.body)};
    if (conn_->tls) {
      return asio::async_write(
          *conn_->tls, bufs,
          asio::bind_executor(executor_, [self = shared_from_this(), c = conn_](
                                             error_code e, size_t) { self->OnWritten(e); }));
    }
    tcp::socket& socket = conn_->socket;
    error_code ec;
    if (!socket.non_blocking()) socket.non_blocking(true, ec);
    const size_t n = ec ? 0 : socket.write_some(bufs, ec);
    if (!ec && n == head_.size() + request_.body.size()) return OnWritten(ec);
    if (ec && ec != asio::error::would_block && ec != asio::error::try_again) {
      return OnWritten(ec);
    }
    if (n < head_.size()) {
      bufs[0] = asio::buffer(head_) + n;
    } else {
      bufs[0] = asio::const_buffer();
      bufs[1] = asio::buffer(request_.body) + (n - head_.size());
    }
    asio::async_write(
        socket, bufs,
        asio::bind_executor(
            executor_, [self = shared_from_this()](error_code e, size_t) { self->OnWritten(e); }));
  }

  void OnWritten(error_code ec) {
    if (done_) return;
    if (ec) {
      // Nothing of a request whose write failed on a reused connection can have been processed:
      // replay it once on a fresh connection.
      if (reused_ && !retried_) return Retry();
      return Fail(ec, "sending to " + request_.host_port);
    }
    NewParser();
    Read();
  }

  void NewParser() {
    parser_.emplace(*this);
    // Streams have no size limit. (Not boost::none: Boost 1.74 compares a length against an
    // empty optional as "over the limit".)
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    parser_->header_limit(static_cast<uint32_t>(std::min<size_t>(
        client_->options.max_response_header_bytes, std::numeric_limits<uint32_t>::max())));
    parser_->eager(true);
    if (request_.method == "HEAD") parser_->skip(true);
  }

  void Read() {
    if (conn_->tls) {
      return conn_->tls->async_read_some(
          buffer_.prepare(kReadChunk),
          asio::bind_executor(executor_, [self = shared_from_this(), c = conn_](
                                             error_code ec, size_t n) { self->OnRead(ec, n); }));
    }
    conn_->socket.async_read_some(
        buffer_.prepare(kReadChunk),
        asio::bind_executor(executor_, [self = shared_from_this()](error_code ec, size_t n) {
          self->OnRead(ec, n);
        }));
  }

  void OnRead(error_code ec, size_t n) {
    if (done_) return;
    if (n > 0) {
      got_response_bytes_ = true;
      buffer_.commit(n);
      if (headers_seen_) ArmTimer(request_.idle_timeout, Awaiting::kBody);
    }
    if (ec == asio::error::eof || ec == asio::ssl::error::stream_truncated) {
      if (!got_response_bytes_ && reused_ && !retried_ && Replayable()) {
        return Retry();
      }
      // A body delimited by the end of the connection ends here.
      Parse();
      if (done_) return;
      // Only a body delimited by the end of the connection can end at EOF (put_eof would accept
      // an empty or header-less message).
      if (parser_->is_header_done()) {
        error_code pec;
        parser_->put_eof(pec);
        if (!pec && parser_->is_done()) return Complete(false);
      }
      return Finish(UnavailableError("connection to " + request_.host_port +
                                     " closed before the response ended"));
    }
    if (ec) {
      if (!got_response_bytes_ && reused_ && !retried_ && Replayable()) {
        return Retry();
      }
      return Fail(ec, "reading from " + request_.host_port);
    }
    Parse();
    if (!done_) Read();
  }

  // Hands the collected body bytes to on_body; false when the exchange ended (a callback
  // cancelled it).
  bool FlushBody() {
    if (!pending_body_.empty() && !done_ && handlers_.on_body) handlers_.on_body(pending_body_);
    pending_body_.clear();
    return !done_;
  }

  // Feeds the buffer to the parser; completes the exchange when the message ends. The body
  // parsed goes to on_body before anything else is reported.
  void Parse() {
    ParseBuffer();
    FlushBody();
  }

  void ParseBuffer() {
    while (!done_ && buffer_.size() > 0) {
      error_code ec;
      size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (done_) return;  // a callback cancelled
      if (ec && ec != bhttp::error::need_more && !FlushBody()) return;
      if (ec == bhttp::error::need_more) return;
      if (ec == bhttp::error::header_limit) {
        return Finish(
            ResourceExhaustedError("response header from " + request_.host_port + " is too large"));
      }
      if (ec) {
        return Finish(UnavailableError("malformed response from " + request_.host_port + ": " +
                                       ec.message()));
      }
      if (parser_->is_done()) {
        int status = parser_->status();
        if (status >= 100 && status < 200 && status != 101) {
          // Interim response: parse the final one from what follows.
          NewParser();
          continue;
        }
        if (!FlushBody()) return;
        return Complete(parser_->keep_alive() && buffer_.size() == 0);
      }
      if (used == 0) return;
    }
  }

  void Complete(bool reusable) {
    if (reusable && conn_) client_->PutIdle(pool_key_, std::move(conn_));
    Finish(OkStatus());
  }

  bool Replayable() const { return request_.replayable || IsIdempotent(request_.method); }

  void Retry() {
    retried_ = true;
    client_->counters.retries.fetch_add(1, std::memory_order_relaxed);
    CloseSocket();
    buffer_.consume(buffer_.size());
    parser_.reset();
    got_response_bytes_ = false;
    Connect();
  }

  void Fail(error_code ec, const std::string& what) {
    if (timed_out_) return Finish(DeadlineExceededError(TimeoutMessage()));
    Finish(UnavailableError(what + ": " + ec.message()));
  }

  void ArmTimer(Duration d, Awaiting awaiting) {
    awaiting_ = awaiting;
    deadline_.Set(d, [self = shared_from_this()] {
      if (self->done_) return;
      self->timed_out_ = true;
      self->Finish(DeadlineExceededError(self->TimeoutMessage()));
    });
  }

  std::string TimeoutMessage() const {
    switch (awaiting_) {
      case Awaiting::kConnect:
        return "connect to " + request_.host_port + " timed out";
      case Awaiting::kResponse:
        return "no response from " + request_.host_port + " in time";
      case Awaiting::kBody:
        break;
    }
    return "response body stalled";
  }

  void CloseSocket() {
    if (!conn_) return;
    error_code ec;
    conn_->socket.close(ec);
    conn_.reset();
  }

  void Finish(Status status) {
    if (done_) return;
    done_ = true;
    deadline_.Cancel();
    resolver_.cancel();
    CloseSocket();
    if (!status.ok()) client_->counters.failures.fetch_add(1, std::memory_order_relaxed);
    {
      std::lock_guard lock(client_->mu);
      client_->in_flight.erase(id_);
    }
    auto on_done = std::move(handlers_.on_done);
    handlers_ = {};
    if (!on_done) return;
    if (starting_) {
      asio::post(executor_, [on_done = std::move(on_done), status = std::move(status)]() mutable {
        on_done(std::move(status));
      });
      return;
    }
    on_done(std::move(status));
  }

  std::shared_ptr<Client::State> client_;
  // The exchange's strand, or the io_context's executor when one thread runs it.
  asio::any_io_executor executor_;
  ClientRequest request_;
  ResponseHandlers handlers_;
  const uint64_t id_;
  Deadline deadline_;
  tcp::resolver resolver_;

  HostPort host_port_;
  std::string head_;
  std::string pool_key_;
  std::shared_ptr<ClientConnection> conn_;
  beast::flat_buffer buffer_;
  std::optional<Parser> parser_;
  std::string pending_body_;  // body bytes parsed but not yet handed to on_body
  Awaiting awaiting_ = Awaiting::kConnect;
  bool timed_out_ = false;
  bool reused_ = false;
  bool retried_ = false;
  bool got_response_bytes_ = false;
  bool headers_seen_ = false;
  bool done_ = false;
  bool starting_ = false;  // Begin runs inside Start
};

// What Send returns. Weak, because callers keep the handle in state that their own handlers
// capture (a forward's record, an upstream call): a strong handle would close a cycle through the
// exchange's handlers that only Finish breaks, and an exchange whose io_context stopped before it
// finished would then never be freed.
class ExchangeHandle final : public RequestHandle {
 public:
  explicit ExchangeHandle(std::weak_ptr<Exchange> exchange) : exchange_(std::move(exchange)) {}
  void Cancel() override {
    if (auto e = exchange_.lock()) e->Cancel();
  }

 private:
  std::weak_ptr<Exchange> exchange_;
};

// --- Client ----------------------------------------------------------------------------------

Client::Client(asio::io_context& io, ClientOptions options)
    : state_(std::make_shared<State>(io, std::move(options))) {}

Client::~Client() {
  std::vector<std::shared_ptr<Exchange>> live;
  {
    std::lock_guard lock(state_->mu);
    state_->shut_down = true;
    for (auto& [id, weak] : state_->in_flight) {
      if (auto e = weak.lock()) live.push_back(std::move(e));
    }
  }
  for (auto& e : live) e->Cancel();
  CloseIdle();
  asio::post(state_->sweep_strand, [s = state_] { s->sweep_timer.cancel(); });
}

std::shared_ptr<RequestHandle> Client::Send(ClientRequest request, ResponseHandlers handlers) {
  state_->counters.requests.fetch_add(1, std::memory_order_relaxed);
  uint64_t id;
  {
    std::lock_guard lock(state_->mu);
    id = state_->next_exchange++;
  }
  auto exchange = std::make_shared<Exchange>(state_, std::move(request), std::move(handlers), id);
  {
    std::lock_guard lock(state_->mu);
    state_->in_flight.emplace(id, exchange);
  }
  exchange->Start();
  return std::make_shared<ExchangeHandle>(exchange);
}

ClientStats Client::stats() const {
  const auto& c = state_->counters;
  ClientStats s;
  s.requests = c.requests.load();
  s.connections_opened = c.opened.load();
  s.connections_reused = c.reused.load();
  s.stale_discarded = c.stale.load();
  s.retries = c.retries.load();
  s.failures = c.failures.load();
  s.tls_peer_mismatches = c.tls_peer_mismatches.load();
  std::lock_guard lock(state_->mu);
  s.idle_connections = state_->idle_count;
  return s;
}

void Client::CloseIdle() { state_->CloseIdle(); }

}  // namespace hearsay::http
