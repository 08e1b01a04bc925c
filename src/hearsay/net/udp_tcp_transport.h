// UdpTcpTransport: the gossip Transport on real sockets.
//
// kDatagram is one UDP datagram from the socket bound to the gossip address (so a receiver sees
// the sender's gossip address as the source). kStream is one frame on a TCP connection to the
// peer's gossip address (same port number as UDP): a connection opens with a 7-byte preamble
// ("HSTP", version 1, the sender's gossip port, big-endian) so the receiver can name the sender
// as "source-ip:gossip-port", the same address its datagrams come from; then frames follow, each
// a big-endian u32 length and that many bytes. Lengths are checked against max_frame_bytes before
// anything is allocated; a bad preamble or an oversized frame closes the connection. Outgoing
// connections are pooled per peer (at most max_connections, least recently used closed first)
// and every connection idle for idle_timeout is closed.
//
// The transport only moves bytes: frames are sealed and opened by the gossip node's
// EnvelopeFramer, so a forged or replayed frame is dropped there. Nothing is authenticated before
// that, so what an unauthenticated sender can make the transport hold is bounded:
//   - a frame is read in chunks of at most kFrameChunkBytes, its buffer growing with the bytes
//     that actually arrived, never by the declared length alone;
//   - a frame's declared length is charged, whole, before its first byte is read, to one pool
//     per transport (max_inbound_frame_bytes) and to its source IP (max_frame_bytes at most, so
//     one large frame per source at a time), and given back once the core has handed it to the
//     sink; a connection whose frame does not fit is not read until the pool has room (counted
//     as pool_waits), and the idle timeout closes it if that takes too long;
//   - at most max_incoming_per_source accepted connections per source IP, and at most
//     max_datagrams_per_source_per_s datagrams per second per source IP (a token bucket with a
//     burst of one second's worth; the excess is dropped and counted).
//
// Threads: Send() and SetBlocked() may be called from any thread; they post to a strand on the
// I/O io_context, where all socket state lives. Received messages are posted to the core
// io_context and handed to the MessageSink there (never on an I/O thread).
// Ownership: the transport borrows both io_contexts and the sink. Call Close() and stop both
// io_contexts before destroying it.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/env/rng.h"
#include "hearsay/env/time.h"
#include "hearsay/env/transport.h"
#include "hearsay/gossip/wire.h"

namespace hearsay::net {

struct TransportOptions {
  // "host:port" to bind UDP and TCP on; port 0 picks one free for both.
  std::string bind = "127.0.0.1:7946";
  // Largest datagram sent or accepted (the whole sealed envelope; fits a 1500-byte MTU).
  size_t max_datagram_bytes = 1400;
  // Largest stream frame sent or accepted: a gossip message plus envelope overhead.
  size_t max_frame_bytes = gossip::kMaxMessageBytes + 1024;
  // Outgoing connections kept open at most; incoming connections accepted at most.
  size_t max_connections = 64;
  size_t max_incoming = 256;
  // Accepted connections per source IP at most.
  size_t max_incoming_per_source = 32;
  // Bytes of incoming frames held at once (being received or waiting for the core), over every
  // connection: the pre-authentication pool. At least max_frame_bytes.
  size_t max_inbound_frame_bytes = 2 * (gossip::kMaxMessageBytes + 1024);
  // Datagrams accepted per second from one source IP; 0: no limit.
  size_t max_datagrams_per_source_per_s = 2000;
  // Frames waiting on one outgoing connection, in bytes; beyond it new frames are dropped.
  size_t max_queued_bytes = size_t{32} << 20;
  // Connections without traffic for this long are closed; also the connect timeout.
  Duration idle_timeout = std::chrono::seconds(60);
  Duration connect_timeout = std::chrono::seconds(3);
  // A message to a hostname goes to every address the name resolves to, and the name is
  // resolved again once this has passed (below the gossip join retry, so each join attempt sees
  // the current addresses of a DNS round-robin name or a Kubernetes headless service).
  Duration resolve_ttl = std::chrono::milliseconds(500);
  // Tests only: resolves a hostname to IP address strings synchronously, instead of the OS
  // resolver. Null: the OS resolver.
  std::function<std::vector<std::string>(const std::string& host)> resolver;
};

// Monotone counters, by channel (index = Channel value).
struct TransportCounters {
  std::array<uint64_t, 2> messages_sent{};
  std::array<uint64_t, 2> bytes_sent{};
  std::array<uint64_t, 2> messages_received{};
  std::array<uint64_t, 2> bytes_received{};
  uint64_t send_errors = 0;      // unresolvable, connect or write failure, queue full
  uint64_t oversize_drops = 0;   // datagram or frame over its limit (sent or received)
  uint64_t blocked_drops = 0;    // dropped by SetBlocked
  uint64_t fault_drops = 0;      // datagrams lost by SetLinkFaults
  uint64_t protocol_errors = 0;  // bad preamble on an incoming connection
  uint64_t connections_opened = 0;
  uint64_t connections_accepted = 0;
  uint64_t connections_refused = 0;  // over max_incoming or max_incoming_per_source
  uint64_t pool_waits = 0;           // a frame waited for room in the inbound pool
  uint64_t rate_drops = 0;           // datagrams over a source's rate
  // Gauge: bytes of incoming frames charged to the pool now (at least what they allocated).
  uint64_t inbound_frame_bytes = 0;
};

// How much of a frame is read (and allocated) at a time.
inline constexpr size_t kFrameChunkBytes = 64 * 1024;

class UdpTcpTransport final : public Transport {
 public:
  // Binds the UDP socket and the TCP listener. UNAVAILABLE naming the address if it is in use
  // or cannot be bound; INVALID_ARGUMENT for a bad address. Nothing is received until Start().
  static Result<std::unique_ptr<UdpTcpTransport>> Open(boost::asio::io_context& io,
                                                       boost::asio::io_context& core,
                                                       TransportOptions options);
  ~UdpTcpTransport() override;
  UdpTcpTransport(const UdpTcpTransport&) = delete;
  UdpTcpTransport& operator=(const UdpTcpTransport&) = delete;

  // Starts receiving; messages go to `sink` on the core io_context's thread.
  void Start(MessageSink* sink);
  // Closes every socket (asynchronously, on the strand). Sends after it are dropped.
  void Close();
  // Called on the core thread: no message reaches the sink after it.
  void DetachSink() { sink_ = nullptr; }

  // The bound address, with the actual port ("127.0.0.1:40123").
  const std::string& local_address() const { return local_address_; }
  uint16_t port() const { return port_; }

  // Transport.
  void Send(const Address& to, Channel channel, std::vector<uint8_t> payload) override;
  size_t MaxDatagramBytes() const override { return options_.max_datagram_bytes; }

  // Test hook (fault injection): drops every datagram and frame to or from these addresses
  // ("host:port"; IP literals compare by value). Replaces the previous set.
  void SetBlocked(const std::set<std::string>& addresses);
  // Test hook (fault injection where the kernel has no netem): every message sent from now on
  // waits `delay` (from Send), and each datagram is lost with probability `loss` (TCP frames are
  // not: TCP would resend them), drawn from a generator seeded with `seed`. The simulator's
  // network model (simenv/sim_network.h: a fixed latency, loss per message). Zero and zero heal.
  void SetLinkFaults(Duration delay, double loss, uint64_t seed);

  TransportCounters counters() const;

 private:
  using Udp = boost::asio::ip::udp;
  using Tcp = boost::asio::ip::tcp;
  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;
  using Frame = std::shared_ptr<const std::vector<uint8_t>>;
  struct OutConn;
  struct InConn;

  UdpTcpTransport(boost::asio::io_context& io, boost::asio::io_context& core,
                  TransportOptions options);

  // All below run on the strand.
  void DoSend(const Address& to, Channel channel, std::vector<uint8_t> payload);
  void SendTo(const Udp::endpoint& peer, Channel channel, std::vector<uint8_t> payload);
  void Resolve(const Address& to);
  void ReceiveDatagram();
  void Accept();
  void ReadPreamble(const std::shared_ptr<InConn>& c);
  void ReadFrameHeader(const std::shared_ptr<InConn>& c);
  void ReadFrameBody(const std::shared_ptr<InConn>& c, uint32_t length);
  // Charges `bytes` to the pool and to c's source; false (nothing charged) if either is full.
  bool Charge(const std::shared_ptr<InConn>& c, size_t bytes);
  void Release(const std::string& source_ip, size_t bytes);
  bool DatagramAllowed(const std::string& source_ip);
  void Connect(const std::shared_ptr<OutConn>& c);
  void WriteNext(const std::shared_ptr<OutConn>& c);
  void WatchClose(const std::shared_ptr<OutConn>& c);
  void CloseOut(const std::shared_ptr<OutConn>& c);
  void CloseIn(const std::shared_ptr<InConn>& c);
  void Sweep();
  bool IsBlocked(const std::string& canonical) const;
  // Hands bytes to the sink on the core thread; `charged` bytes of `source_ip` are released
  // once the sink has seen them.
  void Deliver(std::string from, Channel channel, std::vector<uint8_t> bytes,
               std::string source_ip = {}, size_t charged = 0);

  boost::asio::io_context& core_;
  TransportOptions options_;
  Strand strand_;
  Udp::socket udp_;
  Tcp::acceptor acceptor_;
  boost::asio::ip::udp::resolver resolver_;
  boost::asio::steady_timer sweep_timer_;
  std::string local_address_;
  uint16_t port_ = 0;
  MessageSink* sink_ = nullptr;  // core thread only
  bool closed_ = false;          // strand

  // Strand state. Invariants: out_ holds at most options_.max_connections entries, keyed by the
  // peer's canonical address; in_ holds the accepted connections still open.
  std::array<uint8_t, 65536> datagram_buffer_{};
  Udp::endpoint datagram_from_;
  std::map<std::string, std::shared_ptr<OutConn>> out_;
  std::set<std::shared_ptr<InConn>> in_;
  // A hostname's addresses, by the address as given, with when they were resolved. A message to
  // a hostname goes to every address it resolves to (a DNS round-robin name or a Kubernetes
  // headless service seeds a cluster), and the name is resolved again once kResolveTtl has
  // passed, so every join attempt (at least a second apart) sees the current addresses.
  struct Resolved {
    std::vector<Udp::endpoint> endpoints;
    std::chrono::steady_clock::time_point at;
  };
  std::map<std::string, Resolved> resolved_;
  std::map<std::string, std::vector<std::pair<Channel, std::vector<uint8_t>>>> awaiting_;
  std::set<std::string> blocked_;
  // SetLinkFaults' settings and generator.
  Duration fault_delay_{0};
  double fault_loss_ = 0;
  Rng fault_rng_{0};
  uint64_t use_clock_ = 0;
  // The inbound pool: bytes charged in total and per source IP; accepted connections per IP.
  size_t inbound_bytes_ = 0;
  std::map<std::string, size_t> inbound_by_source_;
  std::map<std::string, size_t> incoming_by_source_;
  // Connections waiting for room in the pool, with the length of the frame they are reading.
  std::deque<std::pair<std::weak_ptr<InConn>, uint32_t>> parked_;
  // Datagram token buckets per source IP (cleared whole when kMaxRateSources are tracked).
  struct Bucket {
    double tokens = 0;
    std::chrono::steady_clock::time_point refilled;
  };
  std::map<std::string, Bucket> datagram_buckets_;

  struct AtomicCounters {
    std::array<std::atomic<uint64_t>, 2> messages_sent{};
    std::array<std::atomic<uint64_t>, 2> bytes_sent{};
    std::array<std::atomic<uint64_t>, 2> messages_received{};
    std::array<std::atomic<uint64_t>, 2> bytes_received{};
    std::atomic<uint64_t> send_errors{0};
    std::atomic<uint64_t> oversize_drops{0};
    std::atomic<uint64_t> blocked_drops{0};
    std::atomic<uint64_t> fault_drops{0};
    std::atomic<uint64_t> protocol_errors{0};
    std::atomic<uint64_t> connections_opened{0};
    std::atomic<uint64_t> connections_accepted{0};
    std::atomic<uint64_t> connections_refused{0};
    std::atomic<uint64_t> pool_waits{0};
    std::atomic<uint64_t> rate_drops{0};
    std::atomic<uint64_t> inbound_frame_bytes{0};
  };
  AtomicCounters counters_;
};

// "ip:port" of an endpoint, with brackets for IPv6 (the canonical form compared by SetBlocked).
std::string CanonicalAddress(const boost::asio::ip::address& ip, uint16_t port);

}  // namespace hearsay::net
