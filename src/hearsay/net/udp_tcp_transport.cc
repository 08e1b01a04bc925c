#include "hearsay/net/udp_tcp_transport.h"

#include <algorithm>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstring>
#include <utility>

#include "hearsay/http/host_port.h"

namespace hearsay::net {

using http::FormatHostPort;
using http::HostPort;
using http::ParseHostPort;
namespace asio = boost::asio;
using boost::system::error_code;

namespace {

constexpr std::array<uint8_t, 5> kPreambleMagic = {'H', 'S', 'T', 'P', 1};
constexpr size_t kPreambleBytes = 7;
constexpr size_t kMaxAwaitingPerHost = 16;
constexpr size_t kMaxRateSources = 4096;

bool IsPreamble(const std::vector<uint8_t>& frame) {
  return frame.size() == kPreambleBytes &&
         std::equal(kPreambleMagic.begin(), kPreambleMagic.end(), frame.begin());
}

std::chrono::steady_clock::duration ToSteady(Duration d) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
}

// The canonical form of `address` when its host is an IP literal; nullopt otherwise.
std::optional<asio::ip::udp::endpoint> LiteralEndpoint(const HostPort& hp) {
  error_code ec;
  asio::ip::address ip = asio::ip::make_address(hp.host, ec);
  if (ec) return std::nullopt;
  return asio::ip::udp::endpoint(ip, hp.port);
}

}  // namespace

std::string CanonicalAddress(const asio::ip::address& ip, uint16_t port) {
  asio::ip::address a = ip;
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    a = asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
  }
  return FormatHostPort(a.to_string(), port);
}

// One pooled outgoing connection.
struct UdpTcpTransport::OutConn {
  explicit OutConn(Strand& strand, std::string key)
      : socket(strand), timer(strand), key(std::move(key)) {}
  Tcp::socket socket;
  asio::steady_timer timer;  // connect timeout
  std::string key;
  Tcp::endpoint peer;
  std::deque<Frame> queue;
  size_t queued_bytes = 0;
  bool connected = false;
  bool writing = false;
  bool closed = false;
  uint64_t last_use = 0;
  std::chrono::steady_clock::time_point last_activity = std::chrono::steady_clock::now();
  uint8_t sink_byte = 0;
};

// One accepted connection.
struct UdpTcpTransport::InConn {
  explicit InConn(Strand& strand) : socket(strand) {}
  Tcp::socket socket;
  std::array<uint8_t, kPreambleBytes> preamble{};
  std::array<uint8_t, 4> header{};
  std::vector<uint8_t> body;
  size_t received = 0;  // bytes of the current frame read so far
  size_t charged = 0;   // bytes of body charged to the pool
  std::string from;
  std::string source_ip;
  std::chrono::steady_clock::time_point last_activity = std::chrono::steady_clock::now();
};

UdpTcpTransport::UdpTcpTransport(asio::io_context& io, asio::io_context& core,
                                 TransportOptions options)
    : core_(core),
      options_(std::move(options)),
      strand_(asio::make_strand(io)),
      udp_(strand_),
      acceptor_(strand_),
      resolver_(strand_),
      sweep_timer_(strand_) {}

UdpTcpTransport::~UdpTcpTransport() = default;

Result<std::unique_ptr<UdpTcpTransport>> UdpTcpTransport::Open(asio::io_context& io,
                                                               asio::io_context& core,
                                                               TransportOptions options) {
  HEARSAY_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(options.bind));
  error_code ec;
  const asio::ip::address ip = asio::ip::make_address(hp.host, ec);
  if (ec) {
    return InvalidArgumentError("gossip address \"" + options.bind +
                                "\": the bind host must be an IP address");
  }
  if (options.max_datagram_bytes == 0 || options.max_datagram_bytes > 65507 ||
      options.max_frame_bytes == 0 || options.max_inbound_frame_bytes < options.max_frame_bytes ||
      options.max_incoming_per_source == 0) {
    return InvalidArgumentError("transport: bad datagram or frame limit");
  }
  std::unique_ptr<UdpTcpTransport> t(new UdpTcpTransport(io, core, std::move(options)));
  // With port 0, the OS picks the UDP port, and TCP must get the same number: retry a few times
  // if someone else holds it on TCP.
  const int attempts = hp.port == 0 ? 16 : 1;
  std::string last_error;
  for (int i = 0; i < attempts; ++i) {
    error_code e;
    Udp::socket udp(t->strand_);
    udp.open(ip.is_v6() ? Udp::v6() : Udp::v4(), e);
    if (!e) udp.bind(Udp::endpoint(ip, hp.port), e);
    if (e) {
      last_error = "UDP " + e.message();
      continue;
    }
    const uint16_t port = udp.local_endpoint(e).port();
    Tcp::acceptor acceptor(t->strand_);
    acceptor.open(ip.is_v6() ? Tcp::v6() : Tcp::v4(), e);
    if (!e) acceptor.set_option(asio::socket_base::reuse_address(true), e);
    if (!e) acceptor.bind(Tcp::endpoint(ip, port), e);
    if (!e) acceptor.listen(asio::socket_base::max_listen_connections, e);
    if (e) {
      last_error = "TCP " + e.message();
      continue;
    }
    t->udp_ = std::move(udp);
    t->acceptor_ = std::move(acceptor);
    t->port_ = port;
    t->local_address_ = CanonicalAddress(ip, port);
    return t;
  }
  return UnavailableError("cannot bind gossip address " + t->options_.bind + ": " + last_error);
}

void UdpTcpTransport::Start(MessageSink* sink) {
  sink_ = sink;
  asio::post(strand_, [this] {
    ReceiveDatagram();
    Accept();
    Sweep();
  });
}

void UdpTcpTransport::Close() {
  asio::post(strand_, [this] {
    if (closed_) return;
    closed_ = true;
    error_code ec;
    udp_.close(ec);
    acceptor_.close(ec);
    resolver_.cancel();
    sweep_timer_.cancel();
    for (auto& [key, c] : std::map(out_)) CloseOut(c);
    for (auto& c : std::set(in_)) CloseIn(c);
  });
}

TransportCounters UdpTcpTransport::counters() const {
  TransportCounters c;
  for (size_t i = 0; i < 2; ++i) {
    c.messages_sent[i] = counters_.messages_sent[i].load(std::memory_order_relaxed);
    c.bytes_sent[i] = counters_.bytes_sent[i].load(std::memory_order_relaxed);
    c.messages_received[i] = counters_.messages_received[i].load(std::memory_order_relaxed);
    c.bytes_received[i] = counters_.bytes_received[i].load(std::memory_order_relaxed);
  }
  c.send_errors = counters_.send_errors.load(std::memory_order_relaxed);
  c.oversize_drops = counters_.oversize_drops.load(std::memory_order_relaxed);
  c.blocked_drops = counters_.blocked_drops.load(std::memory_order_relaxed);
  c.fault_drops = counters_.fault_drops.load(std::memory_order_relaxed);
  c.protocol_errors = counters_.protocol_errors.load(std::memory_order_relaxed);
  c.connections_opened = counters_.connections_opened.load(std::memory_order_relaxed);
  c.connections_accepted = counters_.connections_accepted.load(std::memory_order_relaxed);
  c.connections_refused = counters_.connections_refused.load(std::memory_order_relaxed);
  c.pool_waits = counters_.pool_waits.load(std::memory_order_relaxed);
  c.rate_drops = counters_.rate_drops.load(std::memory_order_relaxed);
  c.inbound_frame_bytes = counters_.inbound_frame_bytes.load(std::memory_order_relaxed);
  return c;
}

void UdpTcpTransport::SetBlocked(const std::set<std::string>& addresses) {
  std::set<std::string> canonical;
  for (const std::string& a : addresses) {
    Result<HostPort> hp = ParseHostPort(a);
    std::optional<Udp::endpoint> ep = hp.ok() ? LiteralEndpoint(*hp) : std::nullopt;
    canonical.insert(ep ? CanonicalAddress(ep->address(), ep->port()) : a);
  }
  asio::post(strand_, [this, canonical = std::move(canonical)]() mutable {
    blocked_ = std::move(canonical);
  });
}

bool UdpTcpTransport::IsBlocked(const std::string& canonical) const {
  return !blocked_.empty() && blocked_.count(canonical) > 0;
}

void UdpTcpTransport::SetLinkFaults(Duration delay, double loss, uint64_t seed) {
  asio::post(strand_, [this, delay, loss, seed] {
    fault_delay_ = delay;
    fault_loss_ = loss;
    fault_rng_ = Rng(seed);
  });
}

void UdpTcpTransport::Send(const Address& to, Channel channel, std::vector<uint8_t> payload) {
  asio::post(strand_, [this, to, channel, payload = std::move(payload)]() mutable {
    if (channel == Channel::kDatagram && fault_loss_ > 0 && fault_rng_.Bernoulli(fault_loss_)) {
      counters_.fault_drops.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (fault_delay_ <= Duration::zero()) return DoSend(to, channel, std::move(payload));
    auto timer = std::make_shared<asio::steady_timer>(strand_, ToSteady(fault_delay_));
    timer->async_wait(
        [this, timer, to, channel, payload = std::move(payload)](const error_code& ec) mutable {
          if (!ec) DoSend(to, channel, std::move(payload));
        });
  });
}

void UdpTcpTransport::DoSend(const Address& to, Channel channel, std::vector<uint8_t> payload) {
  if (closed_) return;
  const size_t limit =
      channel == Channel::kDatagram ? options_.max_datagram_bytes : options_.max_frame_bytes;
  if (payload.size() > limit) {
    counters_.oversize_drops.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (auto it = resolved_.find(to); it != resolved_.end()) {
    if (std::chrono::steady_clock::now() - it->second.at < ToSteady(options_.resolve_ttl)) {
      const std::vector<Udp::endpoint>& eps = it->second.endpoints;
      for (size_t i = 0; i + 1 < eps.size(); ++i) SendTo(eps[i], channel, payload);
      SendTo(eps.back(), channel, std::move(payload));
      return;
    }
    resolved_.erase(it);  // stale: resolve again below
  }
  Result<HostPort> hp = ParseHostPort(to);
  if (!hp.ok() || hp->port == 0) {
    counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (std::optional<Udp::endpoint> ep = LiteralEndpoint(*hp)) {
    SendTo(*ep, channel, std::move(payload));
    return;
  }
  if (options_.resolver) {  // tests: a synchronous resolver
    Resolved r{{}, std::chrono::steady_clock::now()};
    for (const std::string& ip : options_.resolver(hp->host)) {
      if (std::optional<Udp::endpoint> ep = LiteralEndpoint({ip, hp->port})) {
        r.endpoints.push_back(*ep);
      }
    }
    if (r.endpoints.empty()) {
      counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    for (const Udp::endpoint& ep : r.endpoints) SendTo(ep, channel, payload);
    resolved_[to] = std::move(r);
    return;
  }
  // A hostname: resolve (asynchronously), hold a few messages meanwhile.
  auto& waiting = awaiting_[to];
  if (waiting.size() >= kMaxAwaitingPerHost) {
    counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  waiting.emplace_back(channel, std::move(payload));
  if (waiting.size() == 1) Resolve(to);
}

void UdpTcpTransport::Resolve(const Address& to) {
  Result<HostPort> hp = ParseHostPort(to);
  resolver_.async_resolve(hp->host, std::to_string(hp->port),
                          [this, to](const error_code& ec, Udp::resolver::results_type results) {
                            auto node = awaiting_.extract(to);
                            if (ec || results.empty()) {
                              if (!node.empty()) {
                                counters_.send_errors.fetch_add(node.mapped().size(),
                                                                std::memory_order_relaxed);
                              }
                              return;
                            }
                            // Every address, once each (a name may list one per protocol).
                            Resolved r{{}, std::chrono::steady_clock::now()};
                            for (const auto& entry : results) {
                              if (std::find(r.endpoints.begin(), r.endpoints.end(),
                                            entry.endpoint()) == r.endpoints.end()) {
                                r.endpoints.push_back(entry.endpoint());
                              }
                            }
                            if (node.empty()) {
                              resolved_[to] = std::move(r);
                              return;
                            }
                            for (auto& [channel, payload] : node.mapped()) {
                              for (const Udp::endpoint& ep : r.endpoints) {
                                SendTo(ep, channel, payload);
                              }
                            }
                            resolved_[to] = std::move(r);
                          });
}

void UdpTcpTransport::SendTo(const Udp::endpoint& peer, Channel channel,
                             std::vector<uint8_t> payload) {
  const std::string key = CanonicalAddress(peer.address(), peer.port());
  if (IsBlocked(key)) {
    counters_.blocked_drops.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const size_t bytes = payload.size();
  const size_t ch = static_cast<size_t>(channel);
  if (channel == Channel::kDatagram) {
    if (peer.protocol() != udp_.local_endpoint().protocol()) {
      counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    auto buffer = std::make_shared<std::vector<uint8_t>>(std::move(payload));
    udp_.async_send_to(asio::buffer(*buffer), peer,
                       [this, buffer, ch, bytes](const error_code& ec, size_t) {
                         if (ec) {
                           counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
                           return;
                         }
                         counters_.messages_sent[ch].fetch_add(1, std::memory_order_relaxed);
                         counters_.bytes_sent[ch].fetch_add(bytes, std::memory_order_relaxed);
                       });
    return;
  }
  // Stream: length-prefixed frame on the pooled connection.
  auto frame = std::make_shared<std::vector<uint8_t>>(4 + payload.size());
  const uint32_t n = static_cast<uint32_t>(payload.size());
  (*frame)[0] = static_cast<uint8_t>(n >> 24);
  (*frame)[1] = static_cast<uint8_t>(n >> 16);
  (*frame)[2] = static_cast<uint8_t>(n >> 8);
  (*frame)[3] = static_cast<uint8_t>(n);
  if (!payload.empty()) std::memcpy(frame->data() + 4, payload.data(), payload.size());

  std::shared_ptr<OutConn>& slot = out_[key];
  if (!slot) {
    if (out_.size() > options_.max_connections) {
      // Evict the least recently used other connection.
      std::shared_ptr<OutConn> lru;
      for (auto& [k, c] : out_) {
        if (c && (!lru || c->last_use < lru->last_use)) lru = c;
      }
      if (lru) CloseOut(lru);
    }
    std::shared_ptr<OutConn>& fresh = out_[key];
    fresh = std::make_shared<OutConn>(strand_, key);
    fresh->peer = Tcp::endpoint(peer.address(), peer.port());
    Connect(fresh);
  }
  std::shared_ptr<OutConn> c = out_[key];
  if (c->queued_bytes + frame->size() > options_.max_queued_bytes) {
    counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  c->last_use = ++use_clock_;
  c->queued_bytes += frame->size();
  c->queue.push_back(std::move(frame));
  if (c->connected && !c->writing) WriteNext(c);
}

void UdpTcpTransport::Connect(const std::shared_ptr<OutConn>& c) {
  counters_.connections_opened.fetch_add(1, std::memory_order_relaxed);
  c->timer.expires_after(ToSteady(options_.connect_timeout));
  c->timer.async_wait([this, c](const error_code& ec) {
    if (!ec && !c->connected) CloseOut(c);
  });
  c->socket.async_connect(c->peer, [this, c](const error_code& ec) {
    c->timer.cancel();
    if (c->closed) return;
    if (ec) {
      CloseOut(c);
      return;
    }
    c->connected = true;
    error_code ignored;
    c->socket.set_option(Tcp::no_delay(true), ignored);
    auto preamble =
        std::make_shared<std::vector<uint8_t>>(kPreambleMagic.begin(), kPreambleMagic.end());
    preamble->push_back(static_cast<uint8_t>(port_ >> 8));
    preamble->push_back(static_cast<uint8_t>(port_));
    c->queued_bytes += preamble->size();
    c->queue.push_front(std::move(preamble));
    WatchClose(c);
    WriteNext(c);
  });
}

void UdpTcpTransport::WatchClose(const std::shared_ptr<OutConn>& c) {
  // The receiver never writes: any read completion means it closed (or broke) the connection.
  c->socket.async_read_some(asio::buffer(&c->sink_byte, 1),
                            [this, c](const error_code&, size_t) { CloseOut(c); });
}

void UdpTcpTransport::WriteNext(const std::shared_ptr<OutConn>& c) {
  if (c->closed || c->queue.empty()) {
    c->writing = false;
    return;
  }
  c->writing = true;
  Frame frame = c->queue.front();
  asio::async_write(
      c->socket, asio::buffer(*frame), [this, c, frame](const error_code& ec, size_t) {
        if (c->closed) return;
        if (ec) {
          CloseOut(c);
          return;
        }
        c->queue.pop_front();
        c->queued_bytes -= frame->size();
        c->last_activity = std::chrono::steady_clock::now();
        // The preamble is no message; frames carry a 4-byte length.
        if (!IsPreamble(*frame)) {
          counters_.messages_sent[1].fetch_add(1, std::memory_order_relaxed);
          counters_.bytes_sent[1].fetch_add(frame->size() - 4, std::memory_order_relaxed);
        }
        WriteNext(c);
      });
}

void UdpTcpTransport::CloseOut(const std::shared_ptr<OutConn>& c) {
  if (c->closed) return;
  c->closed = true;
  // Frames still queued (the preamble aside) are lost.
  for (const Frame& f : c->queue) {
    if (!IsPreamble(*f)) counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
  }
  c->queue.clear();
  error_code ec;
  c->timer.cancel();
  c->socket.close(ec);
  auto it = out_.find(c->key);
  if (it != out_.end() && it->second == c) out_.erase(it);
}

void UdpTcpTransport::ReceiveDatagram() {
  udp_.async_receive_from(
      asio::buffer(datagram_buffer_), datagram_from_, [this](const error_code& ec, size_t n) {
        if (closed_ || ec == asio::error::operation_aborted) return;
        if (!ec) {
          const std::string from =
              CanonicalAddress(datagram_from_.address(), datagram_from_.port());
          if (n > options_.max_datagram_bytes) {
            counters_.oversize_drops.fetch_add(1, std::memory_order_relaxed);
          } else if (!DatagramAllowed(datagram_from_.address().to_string())) {
            counters_.rate_drops.fetch_add(1, std::memory_order_relaxed);
          } else if (IsBlocked(from)) {
            counters_.blocked_drops.fetch_add(1, std::memory_order_relaxed);
          } else {
            Deliver(from, Channel::kDatagram,
                    std::vector<uint8_t>(datagram_buffer_.begin(), datagram_buffer_.begin() + n));
          }
        }
        // Errors on UDP (an ICMP unreachable reported on the socket) are per datagram: go on.
        ReceiveDatagram();
      });
}

void UdpTcpTransport::Accept() {
  acceptor_.async_accept(strand_, [this](const error_code& ec, Tcp::socket socket) {
    if (closed_ || ec == asio::error::operation_aborted) return;
    if (!ec) {
      error_code e;
      const Tcp::endpoint remote = socket.remote_endpoint(e);
      const std::string ip = e ? std::string() : remote.address().to_string();
      if (e || in_.size() >= options_.max_incoming ||
          incoming_by_source_[ip] >= options_.max_incoming_per_source) {
        if (!e && incoming_by_source_[ip] == 0) incoming_by_source_.erase(ip);
        counters_.connections_refused.fetch_add(1, std::memory_order_relaxed);
        socket.close(e);
      } else {
        counters_.connections_accepted.fetch_add(1, std::memory_order_relaxed);
        auto c = std::make_shared<InConn>(strand_);
        c->socket = std::move(socket);
        c->source_ip = ip;
        ++incoming_by_source_[ip];
        in_.insert(c);
        ReadPreamble(c);
      }
    }
    Accept();
  });
}

void UdpTcpTransport::ReadPreamble(const std::shared_ptr<InConn>& c) {
  asio::async_read(c->socket, asio::buffer(c->preamble), [this, c](const error_code& ec, size_t) {
    if (ec) {
      CloseIn(c);
      return;
    }
    if (!std::equal(kPreambleMagic.begin(), kPreambleMagic.end(), c->preamble.begin())) {
      counters_.protocol_errors.fetch_add(1, std::memory_order_relaxed);
      CloseIn(c);
      return;
    }
    error_code e;
    const Tcp::endpoint remote = c->socket.remote_endpoint(e);
    if (e) {
      CloseIn(c);
      return;
    }
    const uint16_t port = static_cast<uint16_t>((c->preamble[5] << 8) | c->preamble[6]);
    c->from = CanonicalAddress(remote.address(), port);
    c->last_activity = std::chrono::steady_clock::now();
    ReadFrameHeader(c);
  });
}

void UdpTcpTransport::ReadFrameHeader(const std::shared_ptr<InConn>& c) {
  asio::async_read(c->socket, asio::buffer(c->header), [this, c](const error_code& ec, size_t) {
    if (ec) {
      CloseIn(c);
      return;
    }
    const uint32_t length = (uint32_t{c->header[0]} << 24) | (uint32_t{c->header[1]} << 16) |
                            (uint32_t{c->header[2]} << 8) | uint32_t{c->header[3]};
    if (length > options_.max_frame_bytes) {
      // Checked before allocating: a peer cannot make us reserve more than the limit.
      counters_.oversize_drops.fetch_add(1, std::memory_order_relaxed);
      CloseIn(c);
      return;
    }
    ReadFrameBody(c, length);
  });
}

void UdpTcpTransport::ReadFrameBody(const std::shared_ptr<InConn>& c, uint32_t length) {
  if (c->received == length) {
    c->last_activity = std::chrono::steady_clock::now();
    c->received = 0;
    const size_t charged = std::exchange(c->charged, 0);
    if (IsBlocked(c->from)) {
      counters_.blocked_drops.fetch_add(1, std::memory_order_relaxed);
      c->body = {};
      Release(c->source_ip, charged);
    } else {
      Deliver(c->from, Channel::kStream, std::exchange(c->body, {}), c->source_ip, charged);
    }
    ReadFrameHeader(c);
    return;
  }
  // The frame's whole length is charged to the pool before its first byte is read: all or
  // nothing, so frames never each hold part of the pool while waiting for the rest. The buffer
  // itself grows only with the bytes that arrive, one chunk at a time.
  if (c->charged < length) {
    if (!Charge(c, length - c->charged)) {
      // Back-pressure, not a drop: the connection is not read until the pool has room (a
      // member's frames only wait), and the idle sweep closes it if that takes too long.
      counters_.pool_waits.fetch_add(1, std::memory_order_relaxed);
      parked_.emplace_back(c, length);
      return;
    }
    c->charged = length;
  }
  const size_t want = c->received + std::min<size_t>(kFrameChunkBytes, length - c->received);
  if (want > c->body.capacity()) {
    c->body.reserve(std::min<size_t>(length, std::max(want, 2 * c->body.capacity())));
  }
  c->body.resize(want);
  asio::async_read(c->socket, asio::buffer(c->body.data() + c->received, want - c->received),
                   [this, c, length, want](const error_code& ec, size_t) {
                     if (ec) {
                       CloseIn(c);
                       return;
                     }
                     c->last_activity = std::chrono::steady_clock::now();
                     c->received = want;
                     ReadFrameBody(c, length);
                   });
}

bool UdpTcpTransport::Charge(const std::shared_ptr<InConn>& c, size_t bytes) {
  size_t& source = inbound_by_source_[c->source_ip];
  if (inbound_bytes_ + bytes > options_.max_inbound_frame_bytes ||
      source + bytes > options_.max_frame_bytes) {
    if (source == 0) inbound_by_source_.erase(c->source_ip);
    return false;
  }
  source += bytes;
  inbound_bytes_ += bytes;
  counters_.inbound_frame_bytes.store(inbound_bytes_, std::memory_order_relaxed);
  return true;
}

void UdpTcpTransport::Release(const std::string& source_ip, size_t bytes) {
  if (bytes == 0) return;
  inbound_bytes_ -= bytes;
  auto it = inbound_by_source_.find(source_ip);
  if (it != inbound_by_source_.end() && (it->second -= bytes) == 0) inbound_by_source_.erase(it);
  counters_.inbound_frame_bytes.store(inbound_bytes_, std::memory_order_relaxed);
  // Room was made: the waiting connections try again, in the order they came.
  std::deque<std::pair<std::weak_ptr<InConn>, uint32_t>> waiting;
  waiting.swap(parked_);
  for (auto& [weak, length] : waiting) {
    std::shared_ptr<InConn> c = weak.lock();
    if (c && in_.count(c) > 0) ReadFrameBody(c, length);
  }
}

bool UdpTcpTransport::DatagramAllowed(const std::string& source_ip) {
  const double rate = static_cast<double>(options_.max_datagrams_per_source_per_s);
  if (rate == 0) return true;
  const auto now = std::chrono::steady_clock::now();
  if (datagram_buckets_.size() >= kMaxRateSources && !datagram_buckets_.count(source_ip)) {
    datagram_buckets_.clear();  // bounded memory; every bucket starts full again
  }
  auto [it, fresh] = datagram_buckets_.try_emplace(source_ip, Bucket{rate, now});
  Bucket& b = it->second;
  if (!fresh) {
    const double elapsed = std::chrono::duration<double>(now - b.refilled).count();
    b.tokens = std::min(rate, b.tokens + elapsed * rate);
    b.refilled = now;
  }
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

void UdpTcpTransport::CloseIn(const std::shared_ptr<InConn>& c) {
  error_code ec;
  c->socket.close(ec);
  if (in_.erase(c) == 0) return;
  Release(c->source_ip, std::exchange(c->charged, 0));
  c->body = {};
  auto it = incoming_by_source_.find(c->source_ip);
  if (it != incoming_by_source_.end() && --it->second == 0) incoming_by_source_.erase(it);
}

void UdpTcpTransport::Sweep() {
  if (closed_) return;
  const auto now = std::chrono::steady_clock::now();
  const auto idle = ToSteady(options_.idle_timeout);
  for (auto& [key, c] : std::map(out_)) {
    if (c->connected && c->queue.empty() && now - c->last_activity > idle) CloseOut(c);
  }
  for (auto& c : std::set(in_)) {
    if (now - c->last_activity > idle) CloseIn(c);
  }
  sweep_timer_.expires_after(std::max(idle / 4, ToSteady(std::chrono::milliseconds(10))));
  sweep_timer_.async_wait([this](const error_code& ec) {
    if (!ec) Sweep();
  });
}

void UdpTcpTransport::Deliver(std::string from, Channel channel, std::vector<uint8_t> bytes,
                              std::string source_ip, size_t charged) {
  const size_t ch = static_cast<size_t>(channel);
  counters_.messages_received[ch].fetch_add(1, std::memory_order_relaxed);
  counters_.bytes_received[ch].fetch_add(bytes.size(), std::memory_order_relaxed);
  asio::post(core_, [this, from = std::move(from), channel, bytes = std::move(bytes),
                     source_ip = std::move(source_ip), charged]() mutable {
    if (sink_ != nullptr) sink_->OnMessage(from, channel, bytes);
    if (charged == 0) return;
    bytes = {};
    // The frame's memory is freed: give its charge back to the pool.
    asio::post(strand_,
               [this, source_ip = std::move(source_ip), charged] { Release(source_ip, charged); });
  });
}

}  // namespace hearsay::net
