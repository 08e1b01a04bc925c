// http::Server on Boost.Asio, with Beast's request parser. See server.h for the contract.
//
// Each connection is a small state machine on its own strand (or, on a context that one thread
// runs, on that thread):
//   kIdle (keep-alive, no byte of the next request yet; idle_timeout)
//   -> kHeader (header_timeout deadline) -> kBody (body_timeout deadline)
//   -> kHandling (the handler has the request; reads continue only to notice a vanished client)
//   -> kIdle again, or kLinger (error/close response flushed, send side shut, draining the input
//      briefly so the client reads our response instead of a reset) -> kClosed.
// Responses are formatted here (not by Beast's serializer) into a queue of strings written with
// gathered write_some calls, so bodies and chunks are never copied and a write's progress is
// visible to the write timeout.
#include "hearsay/http/server.h"

#include <algorithm>
#include <array>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <charconv>
#include <deque>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>  // before Asio (std::exchange on g++ 12 with Boost 1.74)

#include "hearsay/http/deadline.h"
#include "hearsay/http/error_body.h"
#include "hearsay/http/host_port.h"

namespace hearsay::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

// Bytes asked of the socket per read.
constexpr size_t kReadChunk = 16 * 1024;
// Buffers gathered into one write_some. Small enough that the write operation (which holds a
// copy of the array) fits Asio's recycled handler memory: 64 made every write a malloc.
constexpr size_t kMaxGather = 16;
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

// The head of a response: status line and header fields, ending with the blank line. Fields the
// server owns (framing, connection) are dropped from `headers` and set from the arguments.
std::string FormatHead(int status, const Headers& headers, std::optional<size_t> content_length,
                       bool chunked, bool close) {
  std::string head;
  head.reserve(128 + headers.size() * 48);
  head += "HTTP/1.1 ";
  head += std::to_string(status);
  head += ' ';
  head += ReasonPhrase(status);
  head += "\r\n";
  for (const auto& [name, value] : headers) {
    if (EqualsIgnoreCase(name, "content-length") || EqualsIgnoreCase(name, "transfer-encoding") ||
        EqualsIgnoreCase(name, "connection")) {
      continue;
    }
    head += name;
    head += ": ";
    head += value;
    head += "\r\n";
  }
  if (content_length) {
    head += "Content-Length: ";
    head += std::to_string(*content_length);
    head += "\r\n";
  }
  if (chunked) head += "Transfer-Encoding: chunked\r\n";
  if (close) head += "Connection: close\r\n";
  head += "\r\n";
  return head;
}

bool WantsClose(const Headers& headers) {
  auto v = FindHeader(headers, "connection");
  return v && EqualsIgnoreCase(*v, "close");
}

}  // namespace

std::optional<std::string_view> Request::Header(std::string_view lowercase_name) const {
  for (const auto& [n, v] : headers) {
    if (n == lowercase_name) return std::string_view(v);
  }
  return std::nullopt;
}

// State shared by the Server object, its acceptor and its connections.
struct Server::State : std::enable_shared_from_this<Server::State> {
  State(asio::io_context& io_context, ServerOptions opts, Handler h)
      : io(io_context),
        options(std::move(opts)),
        handler(std::move(h)),
        accept_strand(asio::make_strand(io_context)),
        acceptor(accept_strand),
        retry_timer(accept_strand) {}

  void Accept();
  // Accepts `socket` as a connection, or refuses it (503) at the caps.
  void Admit(tcp::socket socket);
  void Refuse(tcp::socket socket);
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

  asio::io_context& io;
  const ServerOptions options;
  const Handler handler;
  asio::strand<asio::io_context::executor_type> accept_strand;
  tcp::acceptor acceptor;          // accept_strand only
  asio::steady_timer retry_timer;  // accept_strand only
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
        slow_readers_dropped{0}, client_aborts{0}, idle_evicted{0};
  } counters;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(std::shared_ptr<Server::State> server, tcp::socket socket, uint64_t id)
      : server_(std::move(server)),
        options_(server_->options),
        socket_(std::move(socket)),
        read_deadline_(
            socket_.get_executor(),
            std::min({options_.header_timeout, options_.body_timeout, options_.idle_timeout})),
        write_deadline_(socket_.get_executor(), options_.write_timeout),
        id_(id) {}

  // On the strand.
  void Start() {
    error_code ec;
    socket_.set_option(tcp::no_delay(true), ec);
    socket_.non_blocking(true, ec);  // Flush writes at once what fits
    auto remote = socket_.remote_endpoint(ec);
    if (!ec) remote_ = remote.address().to_string() + ":" + std::to_string(remote.port());
    BeginHeader();
    ReadMore();
  }

  // From any thread: a draining server closes connections that wait for a next request.
  void PostCloseIfIdle() {
    asio::post(socket_.get_executor(), [self = shared_from_this()] {
      if (self->phase_ == Phase::kIdle) self->CloseNow(false);
    });
  }

  // From any thread.
  void PostClose() {
    asio::post(socket_.get_executor(), [self = shared_from_this()] { self->CloseNow(false); });
  }

  template <typename F>
  void Post(F&& f) {
    asio::post(socket_.get_executor(), std::forward<F>(f));
  }

  // Runs `f` at once when called on the connection's executor, else posts it.
  template <typename F>
  void Dispatch(F&& f) {
    asio::dispatch(socket_.get_executor(), std::forward<F>(f));
  }

  // The Responder's operations, on the strand.
  void Respond(uint64_t seq, int status, Headers headers, std::string body) {
    if (!IsCurrent(seq) || response_ != ResponseState::kNone) return;
    if (WantsClose(headers) || server_->draining.load()) keep_alive_ = false;
    bool no_body =
        head_request_ || status == 204 || status == 304 || (status >= 100 && status < 200);
    Enqueue(FormatHead(status, headers,
                       no_body && status != 304 && !head_request_
                           ? std::optional<size_t>()
                           : std::optional<size_t>(body.size()),
                       false, !keep_alive_));
    if (!no_body && !body.empty()) Enqueue(std::move(body));
    response_ = ResponseState::kEnded;
    Flush();
  }

  void StartStream(uint64_t seq, int status, Headers headers) {
    if (!IsCurrent(seq) || response_ != ResponseState::kNone) return;
    if (WantsClose(headers) || server_->draining.load()) keep_alive_ = false;
    // HTTP/1.0 has no chunked encoding: the body runs until we close.
    chunked_ = http_minor_ >= 1 && !head_request_;
    if (!chunked_) keep_alive_ = false;
    Enqueue(FormatHead(status, headers, std::nullopt, chunked_, !keep_alive_));
    response_ = ResponseState::kStreaming;
  }

  void WriteChunk(uint64_t seq, std::string chunk) {
    if (!IsCurrent(seq) || response_ != ResponseState::kStreaming || chunk.empty()) return;
    if (head_request_) return;
    if (chunked_) {
      // One buffer for the size line, the data and its CRLF: a copy costs less than two more
      // allocations and queue entries.
      std::array<char, 20> size;
      auto [end, _] = std::to_chars(size.data(), size.data() + size.size() - 2, chunk.size(), 16);
      *end++ = '\r';
      *end++ = '\n';
      std::string framed;
      framed.reserve(static_cast<size_t>(end - size.data()) + chunk.size() + 2);
      framed.append(size.data(), end);
      framed += chunk;
      framed += "\r\n";
      Enqueue(std::move(framed));
    } else {
      Enqueue(std::move(chunk));
    }
  }

  void EndStream(uint64_t seq) {
    if (!IsCurrent(seq) || response_ != ResponseState::kStreaming) return;
    if (chunked_) Enqueue(std::string("0\r\n\r\n"));
    response_ = ResponseState::kEnded;
  }

  // The Responder's stream pieces made since the last call, applied in order and written in one
  // go.
  void TakeStreamPieces(uint64_t seq, Responder::Shared& shared) {
    std::optional<std::pair<int, Headers>> start;
    std::string bytes;
    bool end = false;
    {
      std::lock_guard lock(shared.mu);
      start.swap(shared.start);
      bytes.swap(shared.bytes);
      end = std::exchange(shared.end, false);
      shared.posted = false;
    }
    if (start) StartStream(seq, start->first, std::move(start->second));
    if (!bytes.empty()) WriteChunk(seq, std::move(bytes));
    if (end) EndStream(seq);
    Flush();
  }

  // The handler dropped the last reference to an unfinished responder (a bug on its side): the
  // client gets a 500, or a cut stream, rather than a connection that hangs forever.
  void Abandoned(uint64_t seq) {
    if (!IsCurrent(seq)) return;
    if (response_ == ResponseState::kNone) {
      keep_alive_ = false;
      std::string body = ErrorBody(500, "the server dropped this request without an answer");
      Enqueue(FormatHead(500, {{"Content-Type", "application/json"}}, body.size(), false, true));
      Enqueue(std::move(body));
      response_ = ResponseState::kEnded;
      Flush();
    } else if (response_ == ResponseState::kStreaming) {
      // Deliver what was written, then cut the stream without its last chunk: the client sees
      // a broken response, not a complete one.
      response_ = ResponseState::kEnded;
      cut_after_flush_ = true;
      Flush();
    }
  }

 private:
  enum class Phase { kIdle, kHeader, kBody, kHandling, kLinger, kClosed };
  enum class ResponseState { kNone, kStreaming, kEnded };

  bool IsCurrent(uint64_t seq) const {
    return phase_ == Phase::kHandling && responder_active_ && seq == sequence_;
  }

  // --- Reading -------------------------------------------------------------------------------

  void BeginHeader() {
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

  void ReadMore() {
    if (reading_ || phase_ == Phase::kClosed) return;
    // While a request is being handled, input is read only to notice a client that goes away;
    // pipelined bytes wait in the buffer, up to a bound.
    if (phase_ == Phase::kHandling && buffer_.size() >= options_.max_header_bytes + kReadChunk) {
      return;
    }
    reading_ = true;
    socket_.async_read_some(buffer_.prepare(kReadChunk),
                            [self = shared_from_this()](error_code ec, size_t n) {
                              self->reading_ = false;
                              self->OnRead(ec, n);
                            });
  }

  void OnRead(error_code ec, size_t n) {
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

  // Header folding (a field line that begins with a space or tab) is obsolete (RFC 9112 5.2);
  // Beast joins such lines, so they are refused here, on the raw header, before it parses.
  bool HasObsFold() const {
    const std::string_view raw(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    const size_t end = raw.find("\r\n\r\n");
    const std::string_view head = raw.substr(0, end);
    return head.find("\n ") != std::string_view::npos ||
           head.find("\n\t") != std::string_view::npos;
  }

  void Parse() {
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

  // A client that sent "Expect: 100-continue" waits for our go-ahead before the body.
  void MaybeContinue() {
    const auto& req = parser_->get();
    auto it = req.find(bhttp::field::expect);
    if (it == req.end() || !EqualsIgnoreCase(View(it->value()), "100-continue")) return;
    if (req.version() < 11 || parser_->is_done()) return;
    Enqueue(std::string("HTTP/1.1 100 Continue\r\n\r\n"));
    Flush();
  }

  void ParseError(error_code ec) {
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

  void Dispatch() {
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

  // --- Writing -------------------------------------------------------------------------------

  void Enqueue(std::string bytes) {
    if (phase_ == Phase::kClosed) return;
    queued_bytes_ += bytes.size();
    out_.push_back(std::move(bytes));
    if (queued_bytes_ > options_.max_write_queue_bytes) {
      server_->counters.slow_readers_dropped.fetch_add(1, std::memory_order_relaxed);
      CloseNow(true);
    }
  }

  // Writes what is queued. The socket is non-blocking: what fits its buffer (a whole response,
  // usually) goes out at once, with no trip through the scheduler; the rest is written when the
  // socket drains, under the write timeout.
  void Flush() {
    if (writing_ || phase_ == Phase::kClosed) return;
    while (!out_.empty()) {
      const std::array<asio::const_buffer, kMaxGather> bufs = Gather();
      error_code ec;
      const size_t n = socket_.write_some(bufs, ec);
      if (ec == asio::error::would_block || ec == asio::error::try_again) return WriteLater(bufs);
      if (ec) return CloseNow(true);
      Consume(n);
    }
    OnQueueDrained();
  }

  // The front of the queue as one gathered write; unused slots stay empty buffers.
  std::array<asio::const_buffer, kMaxGather> Gather() const {
    std::array<asio::const_buffer, kMaxGather> bufs;
    size_t count = 0;
    for (size_t i = 0; i < out_.size() && count < kMaxGather; ++i) {
      std::string_view s = out_[i];
      if (i == 0) s.remove_prefix(front_offset_);
      bufs[count++] = asio::buffer(s.data(), s.size());
    }
    return bufs;
  }

  void WriteLater(const std::array<asio::const_buffer, kMaxGather>& bufs) {
    writing_ = true;
    write_deadline_.Set(options_.write_timeout, [self = shared_from_this()] {
      if (!self->writing_) return;
      self->server_->counters.slow_readers_dropped.fetch_add(1, std::memory_order_relaxed);
      self->CloseNow(true);
    });
    // The array is copied into the operation: no allocation.
    socket_.async_write_some(
        bufs, [self = shared_from_this()](error_code ec, size_t n) { self->OnWrite(ec, n); });
  }

  void OnWrite(error_code ec, size_t n) {
    writing_ = false;
    write_deadline_.Clear();
    if (phase_ == Phase::kClosed) return;
    if (ec) return CloseNow(true);
    Consume(n);
    Flush();
  }

  // Drops `n` written bytes from the front of the queue.
  void Consume(size_t n) {
    queued_bytes_ -= n;
    while (n > 0) {
      size_t left = out_.front().size() - front_offset_;
      if (n >= left) {
        n -= left;
        out_.pop_front();
        front_offset_ = 0;
      } else {
        front_offset_ += n;
        n = 0;
      }
    }
  }

  void OnQueueDrained() {
    if (phase_ == Phase::kLinger) return BeginLinger();
    if (phase_ != Phase::kHandling || response_ != ResponseState::kEnded) return;
    if (cut_after_flush_) {
      responder_active_ = false;
      return CloseNow(false);
    }
    // The response is complete.
    responder_.reset();
    responder_shared_.reset();
    responder_active_ = false;
    if (!keep_alive_) return StartLinger();
    BeginHeader();
    // A pipelined request waits for its own turn: this may run inside the handler's call to
    // Respond, which must not find itself handling the next request.
    if (buffer_.size() > 0) Post([self = shared_from_this()] { self->Parse(); });
    ReadMore();
  }

  // --- Closing -------------------------------------------------------------------------------

  void SendErrorAndClose(int status, std::string message) {
    // Whatever the request was, nothing more is read from it.
    parser_.reset();
    keep_alive_ = false;
    std::string body = ErrorBody(status, message);
    Headers headers = {{"Content-Type", "application/json"}};
    Enqueue(FormatHead(status, headers, body.size(), false, true));
    Enqueue(std::move(body));
    StartLinger();
  }

  // After the last response: flush it, shut our sending side, and drain the client's input for a
  // moment, so that unread request bytes do not make the kernel reset the connection and destroy
  // the response before the client has read it.
  void StartLinger() {
    if (phase_ == Phase::kClosed) return;
    phase_ = Phase::kLinger;
    read_deadline_.Clear();
    Flush();
  }

  void BeginLinger() {
    if (lingering_) return;
    lingering_ = true;
    if (input_done_) return CloseNow(false);
    error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    ArmReadTimer(kLingerTime);
    buffer_.consume(buffer_.size());
    ReadMore();
  }

  void ArmReadTimer(Duration d) {
    read_deadline_.Set(d, [self = shared_from_this()] { self->OnReadTimeout(); });
  }

  void OnReadTimeout() {
    auto& c = server_->counters;
    switch (phase_) {
      case Phase::kIdle:
        c.idle_closed.fetch_add(1, std::memory_order_relaxed);
        return CloseNow(false);
      case Phase::kHeader:
      case Phase::kBody:
        c.read_timeouts.fetch_add(1, std::memory_order_relaxed);
        return SendErrorAndClose(408, phase_ == Phase::kHeader
                                          ? "request header not received in time"
                                          : "request body not received in time");
      case Phase::kLinger:
        return CloseNow(false);
      case Phase::kHandling:
      case Phase::kClosed:
        return;
    }
  }

  void CloseNow(bool client_gone) {
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

  // The response's OnClose callback runs now, and any later one at once.
  static void FireOnClose(Responder::Shared& shared) {
    std::function<void()> cb;
    {
      std::lock_guard lock(shared.mu);
      shared.close_fired = true;
      cb.swap(shared.on_close);
    }
    if (cb) cb();
  }

  friend class Server;

  std::shared_ptr<Server::State> server_;
  const ServerOptions& options_;
  tcp::socket socket_;
  Deadline read_deadline_;
  Deadline write_deadline_;
  const uint64_t id_;
  std::string remote_;

  Phase phase_ = Phase::kHeader;
  bool first_request_ = true;
  bool reading_ = false;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;

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

// --- Responder -------------------------------------------------------------------------------

Responder::Responder(std::weak_ptr<Connection> connection, uint64_t sequence)
    : connection_(std::move(connection)), sequence_(sequence) {}

Responder::~Responder() {
  // A handler that answered has nothing to abandon: no post.
  if (answered_.load(std::memory_order_relaxed)) return;
  if (auto c = connection_.lock()) c->Post([c, seq = sequence_] { c->Abandoned(seq); });
}

void Responder::Respond(int status, Headers headers, std::string body) {
  {
    std::lock_guard lock(shared_->mu);
    if (shared_->stream_begun) return;  // out of order: a stream began
  }
  answered_.store(true, std::memory_order_relaxed);
  auto c = connection_.lock();
  if (!c) return;
  // A whole response is written at once when the handler runs on the connection's thread (no
  // other call of this responder can be queued before it that it would overtake: Respond is
  // its first and last).
  c->Dispatch([c, seq = sequence_, status, h = std::move(headers), b = std::move(body)]() mutable {
    c->Respond(seq, status, std::move(h), std::move(b));
  });
}

template <typename Add>
void Responder::QueueStreamPiece(Add add) {
  auto c = connection_.lock();
  if (!c) return;
  {
    std::lock_guard lock(shared_->mu);
    if (!add(*shared_) || shared_->posted) return;
    shared_->posted = true;
  }
  c->Post([c, seq = sequence_, shared = shared_] { c->TakeStreamPieces(seq, *shared); });
}

void Responder::StartStream(int status, Headers headers) {
  QueueStreamPiece([&](Shared& s) {
    if (s.stream_begun) return false;
    s.stream_begun = true;
    s.start.emplace(status, std::move(headers));
    return true;
  });
}

void Responder::Write(std::string chunk) {
  if (chunk.empty()) return;
  QueueStreamPiece([&](Shared& s) {
    if (!s.stream_begun || s.end) return false;
    if (s.bytes.empty()) {
      s.bytes = std::move(chunk);
    } else {
      s.bytes += chunk;
    }
    return true;
  });
}

void Responder::End() {
  QueueStreamPiece([&](Shared& s) {
    if (!s.stream_begun || s.end) return false;
    s.end = true;
    answered_.store(true, std::memory_order_relaxed);
    return true;
  });
}

void Responder::OnClose(std::function<void()> cb) {
  {
    std::lock_guard lock(shared_->mu);
    if (!shared_->close_fired) {
      shared_->on_close = std::move(cb);
      return;
    }
  }
  if (cb) cb();
}

bool Responder::closed() const { return closed_.load() || connection_.expired(); }

// --- Server ----------------------------------------------------------------------------------

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
  auto conn = std::make_shared<Connection>(shared_from_this(), std::move(socket), id);
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
  return s;
}

}  // namespace hearsay::http
