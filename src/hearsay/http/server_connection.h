// The internals of http::Server (server.h), shared by its files: the state the server shares with
// its connections, and Connection, one accepted connection.
//
// Each connection is a small state machine on its own strand (or, on a context that one thread
// runs, on that thread):
//   [kHandshake (TLS only; handshake_timeout from accept)]
//   -> kIdle (keep-alive, no byte of the next request yet; idle_timeout)
//   -> kHeader (header_timeout deadline) -> kBody (body_timeout deadline)
//   -> kHandling (the handler has the request; reads continue only to notice a vanished client)
//   -> kIdle again, or kLinger (error/close response flushed, send side shut, draining the input
//      briefly so the client reads our response instead of a reset) -> kClosed.
// Responses are formatted here (not by Beast's serializer) into a queue of strings written with
// gathered write_some calls, so bodies and chunks are never copied and a write's progress is
// visible to the write timeout. With TLS the same bytes go through an ssl::stream over the socket
// (one read and one write may be pending on it at once); writes are then always asynchronous,
// and the queue is joined into one buffer per write, one TLS record rather than one per piece.
// server_connection.cc reads and closes; server_responder.cc writes
// responses and holds the Responder.
//
// Thread-safety: as server.h; a Connection's private state is touched on its strand only.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>  // before Asio (std::exchange on g++ 12 with Boost 1.74)

#include "hearsay/http/deadline.h"
#include "hearsay/http/server.h"

namespace hearsay::http {

// The head of a response: status line and header fields, ending with the blank line. Fields the
// server owns (framing, connection) are dropped from `headers` and set from the arguments.
std::string FormatHead(int status, const Headers& headers, std::optional<size_t> content_length,
                       bool chunked, bool close);

// State shared by the Server object, its acceptor and its connections.
struct Server::State : std::enable_shared_from_this<Server::State> {
  State(boost::asio::io_context& io_context, ServerOptions opts, Handler h)
      : io(io_context),
        options(std::move(opts)),
        handler(std::move(h)),
        accept_strand(boost::asio::make_strand(io_context)),
        acceptor(accept_strand),
        retry_timer(accept_strand) {}

  void Accept();
  // Accepts `socket` as a connection, or refuses it (503) at the caps.
  void Admit(boost::asio::ip::tcp::socket socket);
  void Refuse(boost::asio::ip::tcp::socket socket);
  // True when `client_ip` has max_connections_per_client open. Connections are registered on
  // the accept strand only, so the answer holds until Register.
  bool ClientFull(const std::string& client_ip) const {
    std::lock_guard lock(mu);
    auto it = by_client.find(client_ip);
    return it != by_client.end() && it->second >= options.max_connections_per_client;
  }
  void Register(uint64_t id, std::weak_ptr<Connection> c, const std::string& client_ip) {
    std::lock_guard lock(mu);
    ++by_client[client_ip];
    connections.emplace(id, Entry{std::move(c), client_ip, 0});
  }
  void Unregister(uint64_t id) {
    std::lock_guard lock(mu);
    auto it = connections.find(id);
    if (it == connections.end()) return;
    if (it->second.idle_stamp != 0) idle.erase(it->second.idle_stamp);
    auto c = by_client.find(it->second.client_ip);
    if (c != by_client.end() && --c->second == 0) by_client.erase(c);
    connections.erase(it);
  }
  // A connection starts or stops waiting for its next request.
  void SetIdle(uint64_t id, bool is_idle) {
    std::lock_guard lock(mu);
    auto it = connections.find(id);
    if (it == connections.end()) return;
    if (it->second.idle_stamp != 0) idle.erase(std::exchange(it->second.idle_stamp, 0));
    if (is_idle) {
      it->second.idle_stamp = ++idle_clock;
      idle.emplace(it->second.idle_stamp, id);
    }
  }
  // The connection idle the longest, taken off the idle list; null if none is.
  std::shared_ptr<Connection> TakeOldestIdle() {
    std::lock_guard lock(mu);
    while (!idle.empty()) {
      const uint64_t id = idle.begin()->second;
      idle.erase(idle.begin());
      auto it = connections.find(id);
      if (it == connections.end()) continue;
      it->second.idle_stamp = 0;
      if (auto c = it->second.connection.lock()) return c;
    }
    return nullptr;
  }
  bool UnderPressure() const { return open.load() * 4 >= options.max_connections * 3; }

  boost::asio::io_context& io;
  const ServerOptions options;
  const Handler handler;
  boost::asio::strand<boost::asio::io_context::executor_type> accept_strand;
  boost::asio::ip::tcp::acceptor acceptor;  // accept_strand only
  boost::asio::steady_timer retry_timer;    // accept_strand only
  uint16_t port = 0;
  std::atomic<bool> closed{false};
  // StopAccepting was called: keep-alive ends after each connection's current request.
  std::atomic<bool> draining{false};
  std::atomic<size_t> open{0};
  uint64_t next_id = 0;  // accept_strand only

  struct Entry {
    std::weak_ptr<Connection> connection;
    std::string client_ip;
    uint64_t idle_stamp = 0;  // its key in `idle` while idle, else 0
  };
  mutable std::mutex mu;
  std::unordered_map<uint64_t, Entry> connections;    // guarded by mu
  std::unordered_map<std::string, size_t> by_client;  // guarded by mu: open per client IP
  std::map<uint64_t, uint64_t> idle;                  // guarded by mu: stamp -> id, oldest first
  uint64_t idle_clock = 0;                            // guarded by mu

  struct Counters {
    std::atomic<uint64_t> accepted{0}, refused{0}, requests{0}, bad_requests{0},
        header_too_large{0}, body_too_large{0}, read_timeouts{0}, idle_closed{0},
        slow_readers_dropped{0}, client_aborts{0}, idle_evicted{0}, tls_handshake_failures{0},
        tls_handshake_timeouts{0};
  } counters;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // `tls`: the context this connection's handshake uses; null for plain HTTP.
  Connection(std::shared_ptr<Server::State> server, boost::asio::ip::tcp::socket socket,
             uint64_t id, std::shared_ptr<boost::asio::ssl::context> tls)
      : server_(std::move(server)),
        options_(server_->options),
        socket_(std::move(socket)),
        tls_context_(std::move(tls)),
        read_deadline_(socket_.get_executor(),
                       std::min({options_.header_timeout, options_.body_timeout,
                                 options_.idle_timeout, options_.handshake_timeout})),
        write_deadline_(socket_.get_executor(), options_.write_timeout),
        id_(id) {
    if (tls_context_) tls_.emplace(socket_, *tls_context_);
  }

  // On the strand.
  void Start();

  // From any thread: a draining server closes connections that wait for a next request.
  void PostCloseIfIdle();

  // From any thread.
  void PostClose();

  template <typename F>
  void Post(F&& f) {
    boost::asio::post(socket_.get_executor(), std::forward<F>(f));
  }

  // Runs `f` at once when called on the connection's executor, else posts it.
  template <typename F>
  void Dispatch(F&& f) {
    boost::asio::dispatch(socket_.get_executor(), std::forward<F>(f));
  }

  // The Responder's operations, on the strand.
  void Respond(uint64_t seq, int status, Headers headers, std::string body);
  void StartStream(uint64_t seq, int status, Headers headers);
  void WriteChunk(uint64_t seq, std::string chunk);
  void EndStream(uint64_t seq);

  // The Responder's stream pieces made since the last call, applied in order and written in one
  // go.
  void TakeStreamPieces(uint64_t seq, Responder::Shared& shared);

  // The handler dropped the last reference to an unfinished responder (a bug on its side): the
  // client gets a 500, or a cut stream, rather than a connection that hangs forever.
  void Abandoned(uint64_t seq);

 private:
  using error_code = boost::system::error_code;
  using tcp = boost::asio::ip::tcp;

  // Buffers gathered into one write_some. Small enough that the write operation (which holds a
  // copy of the array) fits Asio's recycled handler memory: 64 made every write a malloc.
  static constexpr size_t kMaxGather = 16;

  enum class Phase { kHandshake, kIdle, kHeader, kBody, kHandling, kLinger, kClosed };
  enum class ResponseState { kNone, kStreaming, kEnded };

  bool IsCurrent(uint64_t seq) const;

  // --- Reading -------------------------------------------------------------------------------

  void OnHandshake(error_code ec);
  void BeginHeader();
  void ReadMore();
  void OnRead(error_code ec, size_t n);
  // Header folding (a field line that begins with a space or tab) is obsolete (RFC 9112 5.2);
  // Beast joins such lines, so they are refused here, on the raw header, before it parses.
  bool HasObsFold() const;
  void Parse();

  // A client that sent "Expect: 100-continue" waits for our go-ahead before the body.
  void MaybeContinue();
  void ParseError(error_code ec);
  void Dispatch();

  // --- Writing -------------------------------------------------------------------------------

  void Enqueue(std::string bytes);

  // Writes what is queued. The socket is non-blocking: what fits its buffer (a whole response,
  // usually) goes out at once, with no trip through the scheduler; the rest is written when the
  // socket drains, under the write timeout.
  void Flush();

  // The front of the queue as one gathered write; unused slots stay empty buffers.
  std::array<boost::asio::const_buffer, kMaxGather> Gather() const;
  void WriteLater(const std::array<boost::asio::const_buffer, kMaxGather>& bufs);
  // TLS: joins the queue into one piece and writes it (asynchronously).
  void WriteTls();
  void OnWrite(error_code ec, size_t n);

  // Drops `n` written bytes from the front of the queue.
  void Consume(size_t n);
  void OnQueueDrained();

  // --- Closing -------------------------------------------------------------------------------

  void SendErrorAndClose(int status, std::string message);

  // After the last response: flush it, shut our sending side, and drain the client's input for a
  // moment, so that unread request bytes do not make the kernel reset the connection and destroy
  // the response before the client has read it.
  void StartLinger();
  void BeginLinger();
  void ArmReadTimer(Duration d);
  void OnReadTimeout();
  void CloseNow(bool client_gone);

  // The response's OnClose callback runs now, and any later one at once.
  static void FireOnClose(Responder::Shared& shared);

  friend class Server;

  std::shared_ptr<Server::State> server_;
  const ServerOptions& options_;
  boost::asio::ip::tcp::socket socket_;
  // Keeps the context of tls_ alive across a reload.
  const std::shared_ptr<boost::asio::ssl::context> tls_context_;
  // With TLS, reads and writes go through this stream over socket_.
  std::optional<boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>> tls_;
  Deadline read_deadline_;
  Deadline write_deadline_;
  const uint64_t id_;
  std::string remote_;
  std::string tls_peer_id_;  // see Request::tls_peer_id

  Phase phase_ = Phase::kHeader;
  bool first_request_ = true;
  bool reading_ = false;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;

  // The request being handled.
  uint64_t sequence_ = 0;
  // Weak: the handler owns the responder; when it drops it unfinished, the connection hears
  // (Abandoned) instead of hanging.
  std::weak_ptr<Responder> responder_;
  // The current response's OnClose callback (the handler may drop the responder before the
  // response is flushed whole).
  std::shared_ptr<Responder::Shared> responder_shared_;
  // The current response is not flushed whole yet.
  bool responder_active_ = false;
  // The handler abandoned a stream: close once what it wrote is flushed.
  bool cut_after_flush_ = false;
  ResponseState response_ = ResponseState::kNone;
  bool keep_alive_ = true;
  bool chunked_ = false;
  bool head_request_ = false;
  int http_minor_ = 1;

  // Invariant: queued_bytes_ == total size of out_ minus front_offset_.
  std::deque<std::string> out_;
  size_t front_offset_ = 0;
  size_t queued_bytes_ = 0;
  bool writing_ = false;
  bool lingering_ = false;
  size_t linger_bytes_ = 0;
  // The client's input ended (or overflowed) while our last response was still being written.
  bool input_done_ = false;
};

}  // namespace hearsay::http
