// http::Client: an asynchronous HTTP/1.1 client with a keep-alive connection pool per host:port.
//
// Used to forward requests to peers and by `hearsay bench`. A response body is delivered as it
// arrives (chunked or Content-Length framing removed), never buffered whole, so a stream's
// latency is the network's. After a complete response on a keep-alive connection, the connection
// goes back to its host's pool (at most max_idle_per_host, closed after idle_expiry).
//
// Retry: a pooled connection the server has since closed is detected before use and discarded.
// If a reused connection still fails, the request is retried once on a fresh connection only when
// no byte of it can have been processed: the write failed, or (for idempotent methods: GET, HEAD,
// OPTIONS, PUT, DELETE, and requests marked `replayable`) the connection was reset or closed
// before any response byte, which is how a server closing an idle keep-alive connection just as
// it is reused shows. Any other POST whose bytes were written is never replayed.
//
// Errors given to on_done: UNAVAILABLE (resolve/connect failure, TLS handshake failure or a
// server certificate that names another node, reset, connection closed early, malformed response),
// DEADLINE_EXCEEDED (connect, response-header or body-idle timeout), ABORTED (cancelled),
// INVALID_ARGUMENT (bad request fields), RESOURCE_EXHAUSTED (response header over
// max_response_header_bytes). Whether headers had arrived is known to the caller: on_headers ran or
// not.
//
// Thread-safety: Send, Cancel and stats may be called from any thread. Callbacks run on a thread
// running the io_context, one request's callbacks never concurrently.
//
// Ownership: a request in flight is owned by its own pending I/O on the io_context, not by its
// RequestHandle (a weak reference), so a caller may keep the handle in state its handlers capture
// without a cycle. Destroying the Client cancels its requests (their sockets close and
// on_done(ABORTED) runs, if the io_context runs on). An io_context stopped and destroyed before a
// request finished destroys that request's handlers with it, without on_done: nothing leaks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "hearsay/common/status.h"
#include "hearsay/env/time.h"
#include "hearsay/http/headers.h"
#include "hearsay/http/tls_context.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace hearsay::http {

using namespace std::chrono_literals;

struct ClientOptions {
  // Idle keep-alive connections kept per host:port.
  size_t max_idle_per_host = 32;
  // An idle pooled connection older than this is closed instead of reused.
  Duration idle_expiry = 30s;
  size_t max_response_header_bytes = 64 * 1024;
  // Exactly one thread runs the io_context: exchanges then need no strand. With more threads
  // this must be false.
  bool one_thread = false;
  // Speak TLS to every server, with this client context (TlsContext::Load with kClient): the
  // server's certificate must verify against its CA, and name the host (or, for a request with
  // tls_peer_id, that node id); its own certificate, if any, goes to servers that ask for one.
  std::shared_ptr<TlsContext> tls = nullptr;
};

struct ClientRequest {
  std::string method = "GET";
  // "host:port" (host may be a name, an IPv4 address or a bracketed IPv6 address).
  std::string host_port;
  // Path and query, for example "/v1/completions".
  std::string target = "/";
  // Extra headers; Host, Content-Length and Connection are set by the client.
  Headers headers;
  std::string body;
  // The caller vouches that sending the request twice is harmless (an LLM completion: its only
  // side effect is the engine's cache), so it is retried like an idempotent method (see above).
  bool replayable = false;
  Duration connect_timeout = 5s;
  // From the start of the write until the response header has arrived.
  Duration response_timeout = 30s;
  // Longest silence between two reads of the body.
  Duration idle_timeout = 30s;
  // With a TLS client: the node id the server's certificate must name (certificates.h), instead
  // of the host name. Pooled connections are kept apart per id.
  std::string tls_peer_id;
};

struct ResponseHandlers {
  // The response status and header (names lowercased). At most once, before any on_body.
  std::function<void(int status, const Headers& headers)> on_headers;
  // A piece of the body, valid during the call only.
  std::function<void(std::string_view chunk)> on_body;
  // Exactly once, last: OK after the whole body, or the error.
  std::function<void(Status status)> on_done;
};

// Cancels one request. Thread-safe; a no-op once the request is done. Holding it does not keep
// the request alive.
class RequestHandle {
 public:
  virtual ~RequestHandle() = default;
  // Aborts the request: its connection is closed and on_done(ABORTED) follows (unless the
  // request had already finished).
  virtual void Cancel() = 0;
};

struct ClientStats {
  uint64_t requests = 0;
  uint64_t connections_opened = 0;
  // Requests sent on a pooled connection.
  uint64_t connections_reused = 0;
  // Pooled connections found closed by the server before use, and discarded.
  uint64_t stale_discarded = 0;
  // Requests retried on a fresh connection after a reused one failed.
  uint64_t retries = 0;
  uint64_t failures = 0;
  // TLS connections whose server certificate named another node than the request's tls_peer_id.
  uint64_t tls_peer_mismatches = 0;
  size_t idle_connections = 0;
};

class Client {
 public:
  Client(boost::asio::io_context& io, ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Starts `request`; its events reach `handlers` on the io_context's thread, never inside Send.
  std::shared_ptr<RequestHandle> Send(ClientRequest request, ResponseHandlers handlers);
  ClientStats stats() const;
  // Closes every idle pooled connection.
  void CloseIdle();

  struct State;  // Shared with in-flight requests; defined in client.cc.

 private:
  std::shared_ptr<State> state_;
};

}  // namespace hearsay::http
