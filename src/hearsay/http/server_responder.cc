#include <charconv>

#include "hearsay/http/error_body.h"
#include "hearsay/http/server_connection.h"

namespace hearsay::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

bool WantsClose(const Headers& headers) {
  auto v = FindHeader(headers, "connection");
  return v && EqualsIgnoreCase(*v, "close");
}

}  // namespace

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

// --- Connection: responses --------------------------------------------------------------------

void Connection::Respond(uint64_t seq, int status, Headers headers, std::string body) {
  if (!IsCurrent(seq) || response_ != ResponseState::kNone) return;
  if (WantsClose(headers) || server_->draining.load()) keep_alive_ = false;
  bool no_body = head_request_ || status == 204 || status == 304 || (status >= 100 && status < 200);
  Enqueue(FormatHead(status, headers,
                     no_body && status != 304 && !head_request_
                         ? std::optional<size_t>()
                         : std::optional<size_t>(body.size()),
                     false, !keep_alive_));
  if (!no_body && !body.empty()) Enqueue(std::move(body));
  response_ = ResponseState::kEnded;
  Flush();
}

void Connection::StartStream(uint64_t seq, int status, Headers headers) {
  if (!IsCurrent(seq) || response_ != ResponseState::kNone) return;
  if (WantsClose(headers) || server_->draining.load()) keep_alive_ = false;
  // HTTP/1.0 has no chunked encoding: the body runs until we close.
  chunked_ = http_minor_ >= 1 && !head_request_;
  if (!chunked_) keep_alive_ = false;
  Enqueue(FormatHead(status, headers, std::nullopt, chunked_, !keep_alive_));
  response_ = ResponseState::kStreaming;
}

void Connection::WriteChunk(uint64_t seq, std::string chunk) {
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

void Connection::EndStream(uint64_t seq) {
  if (!IsCurrent(seq) || response_ != ResponseState::kStreaming) return;
  if (chunked_) Enqueue(std::string("0\r\n\r\n"));
  response_ = ResponseState::kEnded;
}

void Connection::TakeStreamPieces(uint64_t seq, Responder::Shared& shared) {
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

void Connection::Abandoned(uint64_t seq) {
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

// --- Connection: writing ----------------------------------------------------------------------

void Connection::Enqueue(std::string bytes) {
  if (phase_ == Phase::kClosed) return;
  queued_bytes_ += bytes.size();
  out_.push_back(std::move(bytes));
  if (queued_bytes_ > options_.max_write_queue_bytes) {
    server_->counters.slow_readers_dropped.fetch_add(1, std::memory_order_relaxed);
    CloseNow(true);
  }
}

void Connection::Flush() {
  if (writing_ || phase_ == Phase::kClosed) return;
  if (tls_) {
    // A synchronous write through the TLS layer could encrypt bytes the socket then refuses
    // (would_block): always write asynchronously.
    if (out_.empty()) return OnQueueDrained();
    return WriteTls();
  }
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

auto Connection::Gather() const -> std::array<asio::const_buffer, kMaxGather> {
  std::array<asio::const_buffer, kMaxGather> bufs;
  size_t count = 0;
  for (size_t i = 0; i < out_.size() && count < kMaxGather; ++i) {
    std::string_view s = out_[i];
    if (i == 0) s.remove_prefix(front_offset_);
    bufs[count++] = asio::buffer(s.data(), s.size());
  }
  return bufs;
}

void Connection::WriteLater(const std::array<asio::const_buffer, kMaxGather>& bufs) {
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

void Connection::WriteTls() {
  if (out_.size() > 1 || front_offset_ > 0) {
    std::string joined;
    joined.reserve(queued_bytes_);
    for (size_t i = 0; i < out_.size(); ++i) {
      std::string_view piece = out_[i];
      if (i == 0) piece.remove_prefix(front_offset_);
      joined += piece;
    }
    out_.clear();
    out_.push_back(std::move(joined));
    front_offset_ = 0;
  }
  writing_ = true;
  write_deadline_.Set(options_.write_timeout, [self = shared_from_this()] {
    if (!self->writing_) return;
    self->server_->counters.slow_readers_dropped.fetch_add(1, std::memory_order_relaxed);
    self->CloseNow(true);
  });
  tls_->async_write_some(
      asio::buffer(out_.front()),
      [self = shared_from_this()](error_code ec, size_t n) { self->OnWrite(ec, n); });
}

void Connection::OnWrite(error_code ec, size_t n) {
  writing_ = false;
  write_deadline_.Clear();
  if (phase_ == Phase::kClosed) return;
  if (ec) return CloseNow(true);
  Consume(n);
  Flush();
}

void Connection::Consume(size_t n) {
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

void Connection::OnQueueDrained() {
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

}  // namespace hearsay::http
