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
// EnvelopeFramer, so a forged or replayed frame is dropped there.
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
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hearsay/common/status.h"
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
  // Frames waiting on one outgoing connection, in bytes; beyond it new frames are dropped.
  size_t max_queued_bytes = size_t{32} << 20;
  // Connections without traffic for this long are closed; also the connect timeout.
  Duration idle_timeout = std::chrono::seconds(60);
  Duration connect_timeout = std::chrono::seconds(3);
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
  uint64_t protocol_errors = 0;  // bad preamble on an incoming connection
  uint64_t connections_opened = 0;
  uint64_t connections_accepted = 0;
};

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
  void Connect(const std::shared_ptr<OutConn>& c);
  void WriteNext(const std::shared_ptr<OutConn>& c);
  void WatchClose(const std::shared_ptr<OutConn>& c);
  void CloseOut(const std::shared_ptr<OutConn>& c);
  void CloseIn(const std::shared_ptr<InConn>& c);
  void Sweep();
  bool IsBlocked(const std::string& canonical) const;
  void Deliver(std::string from, Channel channel, std::vector<uint8_t> bytes);

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
  std::map<std::string, Udp::endpoint> resolved_;  // hostname cache, by the address as given
  std::map<std::string, std::vector<std::pair<Channel, std::vector<uint8_t>>>> awaiting_;
  std::set<std::string> blocked_;
  uint64_t use_clock_ = 0;

  struct AtomicCounters {
    std::array<std::atomic<uint64_t>, 2> messages_sent{};
    std::array<std::atomic<uint64_t>, 2> bytes_sent{};
    std::array<std::atomic<uint64_t>, 2> messages_received{};
    std::array<std::atomic<uint64_t>, 2> bytes_received{};
    std::atomic<uint64_t> send_errors{0};
    std::atomic<uint64_t> oversize_drops{0};
    std::atomic<uint64_t> blocked_drops{0};
    std::atomic<uint64_t> protocol_errors{0};
    std::atomic<uint64_t> connections_opened{0};
    std::atomic<uint64_t> connections_accepted{0};
  };
  AtomicCounters counters_;
};

// "ip:port" of an endpoint, with brackets for IPv6 (the canonical form compared by SetBlocked).
std::string CanonicalAddress(const boost::asio::ip::address& ip, uint16_t port);

}  // namespace hearsay::net
