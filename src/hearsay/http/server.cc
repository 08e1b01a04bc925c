// http::Server on Boost.Asio, with Beast's request parser. See server.h for the contract, and
// server_connection.h for a connection's life.
#include "hearsay/http/server.h"

#include "hearsay/http/error_body.h"
#include "hearsay/http/host_port.h"
#include "hearsay/http/server_connection.h"

namespace hearsay::http {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

std::optional<std::string_view> Request::Header(std::string_view lowercase_name) const {
  for (const auto& [n, v] : headers) {
    if (n == lowercase_name) return std::string_view(v);
  }
  return std::nullopt;
}

void Server::State::Accept() {
  // On a context run by one thread, handlers never overlap: a strand would only add a lock and,
  // for many completions, another trip through the scheduler.
  acceptor.async_accept(options.one_thread ? asio::any_io_executor(io.get_executor())
                                           : asio::any_io_executor(asio::make_strand(io)),
                        [self = shared_from_this()](error_code ec, tcp::socket socket) {
                          if (ec == asio::error::operation_aborted || !self->acceptor.is_open())
                            return;
                          if (ec) {
                            // Out of descriptors or a transient network error: back off briefly,
                            // keep serving.
                            self->retry_timer.expires_after(std::chrono::milliseconds(50));
                            self->retry_timer.async_wait([self](error_code e) {
                              if (!e && self->acceptor.is_open()) self->Accept();
                            });
                            return;
                          }
                          self->Admit(std::move(socket));
                          self->Accept();
                        });
}

void Server::State::Admit(tcp::socket socket) {
  error_code ec;
  const tcp::endpoint remote = socket.remote_endpoint(ec);
  const std::string ip = ec ? std::string() : remote.address().to_string();
  if (ClientFull(ip)) return Refuse(std::move(socket));
  std::shared_ptr<Connection> victim;
  if (open.load() >= options.max_connections) {
    victim = TakeOldestIdle();
    if (!victim) return Refuse(std::move(socket));
  }
  const uint64_t id = next_id++;
  auto conn = std::make_shared<Connection>(shared_from_this(), std::move(socket), id,
                                           options.tls ? options.tls->Current() : nullptr);
  Register(id, conn, ip);
  if (victim) {
    // Room is made by closing the connection idle the longest; it closes on its own strand, so
    // the count may pass the cap by the connections being evicted.
    counters.idle_evicted.fetch_add(1, std::memory_order_relaxed);
    victim->PostCloseIfIdle();
  }
  open.fetch_add(1);
  counters.accepted.fetch_add(1, std::memory_order_relaxed);
  conn->Post([conn] { conn->Start(); });
}

void Server::State::Refuse(tcp::socket socket) {
  counters.refused.fetch_add(1, std::memory_order_relaxed);
  if (options.tls) {
    // A TLS client could not read a plain 503: it sees the connection close.
    error_code ec;
    socket.close(ec);
    return;
  }
  struct Refusal {
    tcp::socket socket;
    std::string bytes;
  };
  std::string body = ErrorBody(503, "server is at its connection limit; retry later");
  Headers headers = {{"Content-Type", "application/json"}, {"Retry-After", "1"}};
  auto r = std::make_shared<Refusal>(
      Refusal{std::move(socket), FormatHead(503, headers, body.size(), false, true) + body});
  // A few hundred bytes fit in any socket buffer, so this write does not wait on the client.
  r->socket.async_write_some(asio::buffer(r->bytes), [r](error_code, size_t) {
    error_code ec;
    r->socket.shutdown(tcp::socket::shutdown_send, ec);
    r->socket.close(ec);
  });
}

Server::Server(std::shared_ptr<State> state) : state_(std::move(state)) {}

Server::~Server() { Close(); }

Result<std::unique_ptr<Server>> Server::Start(asio::io_context& io, ServerOptions options,
                                              Handler handler) {
  if (!handler) return InvalidArgumentError("http server needs a handler");
  if (options.max_connections == 0 || options.max_connections_per_client == 0 ||
      options.max_header_bytes < 64 || options.max_write_queue_bytes == 0) {
    return InvalidArgumentError("http server limits must be positive");
  }
  auto hp = ParseHostPort(options.listen);
  if (!hp.ok()) return hp.status();
  error_code ec;
  tcp::endpoint endpoint;
  auto addr = asio::ip::make_address(hp->host, ec);
  if (!ec) {
    endpoint = tcp::endpoint(addr, hp->port);
  } else {
    tcp::resolver resolver(io);
    auto results = resolver.resolve(hp->host, std::to_string(hp->port),
                                    tcp::resolver::passive | tcp::resolver::numeric_service, ec);
    if (ec || results.empty()) {
      return InvalidArgumentError("cannot resolve listen address '" + options.listen +
                                  "': " + ec.message());
    }
    endpoint = results.begin()->endpoint();
  }

  auto state = std::make_shared<State>(io, std::move(options), std::move(handler));
  auto& acc = state->acceptor;
  acc.open(endpoint.protocol(), ec);
  if (!ec) acc.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acc.bind(endpoint, ec);
  if (!ec) acc.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return UnavailableError("cannot listen on '" + state->options.listen + "': " + ec.message());
  }
  state->port = acc.local_endpoint(ec).port();
  asio::post(state->accept_strand, [state] { state->Accept(); });
  return std::unique_ptr<Server>(new Server(std::move(state)));
}

uint16_t Server::port() const { return state_->port; }

void Server::StopAccepting() {
  asio::post(state_->accept_strand, [s = state_] {
    error_code ec;
    s->acceptor.close(ec);
    s->retry_timer.cancel();
  });
  Drain();
}

void Server::Drain() {
  if (state_->draining.exchange(true)) return;
  for (auto& c : LiveConnections()) c->PostCloseIfIdle();
}

std::vector<std::shared_ptr<Connection>> Server::LiveConnections() const {
  std::vector<std::shared_ptr<Connection>> conns;
  std::lock_guard lock(state_->mu);
  for (auto& [id, entry] : state_->connections) {
    if (auto c = entry.connection.lock()) conns.push_back(std::move(c));
  }
  return conns;
}

void Server::Close() {
  if (state_->closed.exchange(true)) return;
  StopAccepting();
  for (auto& c : LiveConnections()) c->PostClose();
}

size_t Server::open_connections() const { return state_->open.load(); }

ServerStats Server::stats() const {
  const auto& c = state_->counters;
  ServerStats s;
  s.connections_accepted = c.accepted.load();
  s.connections_refused = c.refused.load();
  s.requests = c.requests.load();
  s.bad_requests = c.bad_requests.load();
  s.header_too_large = c.header_too_large.load();
  s.body_too_large = c.body_too_large.load();
  s.read_timeouts = c.read_timeouts.load();
  s.idle_closed = c.idle_closed.load();
  s.idle_evicted = c.idle_evicted.load();
  s.slow_readers_dropped = c.slow_readers_dropped.load();
  s.client_aborts = c.client_aborts.load();
  s.tls_handshake_failures = c.tls_handshake_failures.load();
  s.tls_handshake_timeouts = c.tls_handshake_timeouts.load();
  return s;
}

}  // namespace hearsay::http
