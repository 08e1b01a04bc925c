// http::Server: an HTTP/1.1 server on Boost.Asio for the daemon's API and the peer protocol.
//
// The server owns the listening socket and every connection. It reads one request at a time per
// connection (keep-alive and pipelining-safe: a pipelined request waits until the previous
// response has ended), hands each complete request to the Handler, and writes the response the
// handler gives through a Responder, either whole (Content-Length) or streamed (chunked transfer
// encoding, each Write flushed at once; TCP_NODELAY is set, because SSE latency matters).
//
// The server enforces its limits itself and answers with OpenAI-shaped error JSON, then closes:
//   header over max_header_bytes -> 431; body over max_body_bytes -> 413 (decided from
//   Content-Length before the body is read, or as soon as a chunked body passes the limit);
//   malformed HTTP -> 400; header not complete within header_timeout, or body within
//   body_timeout -> 408. A keep-alive connection idle for idle_timeout is closed silently. A
//   client that stops reading is dropped: a write that makes no progress for write_timeout, or
//   more than max_write_queue_bytes queued, closes the connection. Connections beyond
//   max_connections get 503 and are closed, unless an idle keep-alive connection can be closed
//   for them (the oldest idle first); more than max_connections_per_client from one IP get 503;
//   once 3/4 of max_connections are open, a connection going idle gets
//   idle_timeout_under_pressure. Header folding (obs-fold) and an HTTP/1.1 request without Host
//   are malformed (400). A slowloris client cannot hold a connection past
//   header_timeout: the timeout is a deadline from the first byte, not an inactivity timer.
//
// A client that closes (or half-closes) its connection while its response is unfinished counts
// as gone: the response is dropped and the Responder's OnClose callback runs, so the request can
// be cancelled.
//
// Thread-safety: Start, StopAccepting, Close, port, open_connections and stats may be called from
// any thread. Each connection runs on its own strand of the io_context, so the server works with
// any number of threads running it. The Handler runs on an I/O thread and must not block. A
// Responder may be used from any thread (it posts onto its connection's strand); a handler that
// drops its last reference to an unfinished Responder ends that request (500, or a cut stream).
// Ownership: connections keep the state they need alive, so the Server may be destroyed while
// the io_context still runs (destroying it closes the listener and every connection); it must be
// destroyed before the io_context.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/env/time.h"
#include "hearsay/http/headers.h"
#include "hearsay/http/tls_context.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace hearsay::http {

using namespace std::chrono_literals;

struct ServerOptions {
  // "host:port"; port 0 picks a free port (see Server::port()).
  std::string listen = "127.0.0.1:8080";
  // Request line plus header fields.
  size_t max_header_bytes = 16 * 1024;
  size_t max_body_bytes = 4 << 20;
  // Deadline for a whole request header, from its first byte (from accept for the first request).
  Duration header_timeout = 10s;
  // Deadline for a whole request body, from the end of its header.
  Duration body_timeout = 30s;
  // A keep-alive connection with no request in progress is closed after this long.
  Duration idle_timeout = 60s;
  // A write that makes no progress for this long drops the connection (the client stopped
  // reading).
  Duration write_timeout = 30s;
  // Connections open at once. At the cap, the connection idle the longest (keep-alive, waiting
  // for its next request) is closed to let a new one in; only when none is idle does the new
  // one get 503.
  size_t max_connections = 1024;
  // Connections open at once from one client IP address; more get 503.
  size_t max_connections_per_client = 256;
  // The idle timeout once 3/4 of max_connections are open.
  Duration idle_timeout_under_pressure = 5s;
  // Bytes of response queued on one connection beyond which the client is deemed stuck and the
  // connection is dropped. Streams are flushed chunk by chunk, so this only fills when the
  // client does not read.
  size_t max_write_queue_bytes = 8 << 20;
  // Exactly one thread runs the io_context: connections then need no strand. With more threads
  // this must be false.
  bool one_thread = false;
  // Serve HTTPS with this certificate (null: plain HTTP). Each connection takes the context
  // current at its accept, so a TlsContext::Reload reaches new connections only.
  std::shared_ptr<TlsContext> tls = nullptr;
  // Deadline for the TLS handshake, from accept: a client that stalls it is closed without a
  // response (it could not read one).
  Duration handshake_timeout = 10s;
};

// One request, as the handler receives it.
struct Request {
  std::string method;
  // As sent: path and query.
  std::string target;
  // The target without its query.
  std::string path;
  // Names lowercased, values as sent, in order.
  Headers headers;
  std::string body;
  // The client's "ip:port".
  std::string remote;
  // HTTP minor version (0 or 1).
  int http_minor = 1;
  // The request came over TLS.
  bool tls = false;
  // The node id (certificates.h) of the client's certificate, verified against the server's CA;
  // empty without one (a client that showed none, or a server without a CA).
  std::string tls_peer_id;

  // The first header named `lowercase_name`, or nullopt.
  std::optional<std::string_view> Header(std::string_view lowercase_name) const;
};

class Connection;

// Writes the response to one request. Every method is thread-safe (it posts onto the
// connection's strand) and is ignored once the connection closed or the response ended; calls
// out of order (Write before StartStream, a second Respond) are ignored too.
class Responder {
 public:
  // Made by the server for request number `sequence` on `connection`.
  Responder(std::weak_ptr<Connection> connection, uint64_t sequence);
  ~Responder();
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;

  // One complete response with Content-Length. A "Connection: close" header closes the
  // connection after it.
  void Respond(int status, Headers headers, std::string body);
  // Starts a chunked response; follow with Write()s and one End().
  void StartStream(int status, Headers headers);
  // One chunk, sent at once. Empty chunks are skipped (an empty chunk would end the stream).
  // A stream's head, chunks and end made before the connection's strand gets to the first of
  // them go out together (the chunks as one chunk) in one write: a burst of events costs one
  // post and one system call.
  void Write(std::string chunk);
  // Ends a chunked response.
  void End();
  // `cb` runs once, on an I/O thread, if the connection closes before the response ended (the
  // client went away, a timeout, or Server::Close); at once, on the caller's thread, if that
  // already happened. A later call replaces an earlier callback.
  void OnClose(std::function<void()> cb);
  // True once the connection is closed (no more bytes can reach the client).
  bool closed() const;

 private:
  friend class Connection;
  // Shared with the connection and with posted tasks, which may outlive the responder.
  struct Shared {
    std::mutex mu;
    // The stream's pieces not yet taken by the connection; one queued task takes them all.
    std::optional<std::pair<int, Headers>> start;  // guarded by mu
    std::string bytes;                             // guarded by mu
    bool end = false;                              // guarded by mu
    bool posted = false;                           // guarded by mu: that task is queued
    bool stream_begun = false;                     // guarded by mu: StartStream was called
    std::function<void()> on_close;                // guarded by mu
    bool close_fired = false;  // guarded by mu: the connection closed unfinished
  };
  // Adds a stream piece with `add` (false: out of order, ignored) and queues the task that
  // hands the pieces to the connection, unless it is queued already.
  template <typename Add>
  void QueueStreamPiece(Add add);
  std::weak_ptr<Connection> connection_;
  const uint64_t sequence_;
  std::atomic<bool> closed_{false};
  // Respond or End was called: the destructor has nothing to abandon.
  std::atomic<bool> answered_{false};
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
};

using Handler = std::function<void(Request, std::shared_ptr<Responder>)>;

struct ServerStats {
  uint64_t connections_accepted = 0;
  // Refused with 503 because max_connections (or max_connections_per_client) were open.
  uint64_t connections_refused = 0;
  // Idle keep-alive connections closed to make room for a new one at max_connections.
  uint64_t idle_evicted = 0;
  uint64_t requests = 0;
  // Error responses the server sent itself (limits, timeouts, malformed input).
  uint64_t bad_requests = 0;          // 400
  uint64_t header_too_large = 0;      // 431
  uint64_t body_too_large = 0;        // 413
  uint64_t read_timeouts = 0;         // 408 (header or body)
  uint64_t idle_closed = 0;           // keep-alive idle timeout
  uint64_t slow_readers_dropped = 0;  // write timeout or write queue over its cap
  uint64_t client_aborts = 0;         // the client went away before its response ended
  // With TLS: handshakes that failed (bad client hello, no shared cipher, a client that refused
  // our certificate), and handshakes not done within handshake_timeout.
  uint64_t tls_handshake_failures = 0;
  uint64_t tls_handshake_timeouts = 0;
};

class Server {
 public:
  // Binds and listens on options.listen and starts accepting on `io` (which the caller runs).
  // Errors: INVALID_ARGUMENT for a bad address or options, UNAVAILABLE if binding fails.
  static Result<std::unique_ptr<Server>> Start(boost::asio::io_context& io, ServerOptions options,
                                               Handler handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The bound port (the ephemeral one when options.listen had port 0).
  uint16_t port() const;
  // Starts draining: closes connections that wait idle for a next request, and ends keep-alive
  // on the others after their current response (which carries "Connection: close" if it has not
  // started yet). New connections are still accepted and serve one request each (a drain
  // answers /health with 503 rather than refusing it). In-flight requests continue.
  void Drain();
  // Drain(), and stops accepting.
  void StopAccepting();
  // Stops accepting and closes every connection (in-flight responses are cut, OnClose fires).
  void Close();
  size_t open_connections() const;
  ServerStats stats() const;

  struct State;  // Shared with connections; defined in server.cc.

 private:
  explicit Server(std::shared_ptr<State> state);
  std::vector<std::shared_ptr<Connection>> LiveConnections() const;
  std::shared_ptr<State> state_;
};

}  // namespace hearsay::http
