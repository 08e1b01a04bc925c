#include "hearsay/net/udp_tcp_transport.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "hearsay/http/host_port.h"
#include "hearsay/testutil/eventually.h"

namespace hearsay::net {

using http::FormatHostPort;
using http::HostPort;
using http::ParseHostPort;
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;

struct Received {
  Address from;
  Channel channel;
  std::vector<uint8_t> bytes;
};

// Records messages; the test thread waits on it.
class RecordingSink final : public MessageSink {
 public:
  void OnMessage(const Address& from, Channel channel, std::span<const uint8_t> payload) override {
    std::lock_guard lock(mu_);
    got_.push_back({from, channel, {payload.begin(), payload.end()}});
    cv_.notify_all();
  }
  // Waits (at most 5 s) until `n` messages arrived; returns them.
  std::vector<Received> WaitFor(size_t n, std::chrono::milliseconds bound = 5000ms) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, bound, [&] { return got_.size() >= n; });
    return got_;
  }
  // What arrived so far.
  std::vector<Received> received() {
    std::lock_guard lock(mu_);
    return got_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Received> got_;
};

// One I/O and one core io_context, each run by its own thread.
class Loops {
 public:
  Loops() : io_guard_(io.get_executor()), core_guard_(core.get_executor()) {
    io_thread_ = std::thread([this] {
      io.run();
      io_done_ = true;
    });
    core_thread_ = std::thread([this] {
      core.run();
      core_done_ = true;
    });
  }
  ~Loops() { Stop(); }
  // Returns once everything already queued on `loop` has run (false if it did not within 10 s).
  bool Sync(asio::io_context& loop) {
    std::promise<void> done;
    asio::post(loop, [&] { done.set_value(); });
    return done.get_future().wait_for(10s) == std::future_status::ready;
  }
  // Lets both loops run until they have no work left, then stops them. After the transports'
  // Close(), every socket operation ends, so this returns true; false means an operation outlived
  // Close() (the loops are stopped anyway).
  bool Drain() {
    io_guard_.reset();
    core_guard_.reset();
    const bool drained = testutil::Eventually([&] { return io_done_ && core_done_; });
    Stop();
    return drained;
  }
  // Stops both loops; transports may be destroyed after this (their contract).
  void Stop() {
    io_guard_.reset();
    core_guard_.reset();
    io.stop();
    core.stop();
    if (io_thread_.joinable()) io_thread_.join();
    if (core_thread_.joinable()) core_thread_.join();
  }
  asio::io_context io;
  asio::io_context core;

 private:
  asio::executor_work_guard<asio::io_context::executor_type> io_guard_;
  asio::executor_work_guard<asio::io_context::executor_type> core_guard_;
  std::thread io_thread_;
  std::thread core_thread_;
  std::atomic<bool> io_done_{false};
  std::atomic<bool> core_done_{false};
};

TransportOptions Local(std::string bind = "127.0.0.1:0") {
  TransportOptions o;
  o.bind = std::move(bind);
  return o;
}

class TransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ta = UdpTcpTransport::Open(loops_.io, loops_.core, Local());
    auto tb = UdpTcpTransport::Open(loops_.io, loops_.core, Local());
    ASSERT_TRUE(ta.ok()) << ta.status().ToString();
    ASSERT_TRUE(tb.ok()) << tb.status().ToString();
    a_ = std::move(*ta);
    b_ = std::move(*tb);
    a_->Start(&sink_a_);
    b_->Start(&sink_b_);
  }
  void TearDown() override {
    if (a_) a_->Close();
    if (b_) b_->Close();
    // Let the closes run, then stop the loops before the transports are destroyed.
    EXPECT_TRUE(loops_.Drain()) << "work left on the loops after Close()";
  }

  Loops loops_;
  RecordingSink sink_a_;
  RecordingSink sink_b_;
  std::unique_ptr<UdpTcpTransport> a_;
  std::unique_ptr<UdpTcpTransport> b_;
};

TEST_F(TransportTest, BindsEphemeralPortOnBothProtocols) {
  EXPECT_NE(a_->port(), 0);
  EXPECT_EQ(a_->local_address(), "127.0.0.1:" + std::to_string(a_->port()));
  // The same port is taken on UDP and TCP: a second bind to it fails.
  auto again = UdpTcpTransport::Open(loops_.io, loops_.core, Local(a_->local_address()));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(again.status().message().find(a_->local_address()), std::string::npos);
}

TEST_F(TransportTest, DatagramRoundTrip) {
  a_->Send(b_->local_address(), Channel::kDatagram, {1, 2, 3});
  auto got = sink_b_.WaitFor(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].from, a_->local_address());
  EXPECT_EQ(got[0].channel, Channel::kDatagram);
  EXPECT_EQ(got[0].bytes, (std::vector<uint8_t>{1, 2, 3}));
  // And back, to the address the receiver saw.
  b_->Send(got[0].from, Channel::kDatagram, {9});
  auto back = sink_a_.WaitFor(1);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].from, b_->local_address());
  EXPECT_EQ(a_->counters().messages_sent[0], 1u);
  EXPECT_EQ(b_->counters().messages_received[0], 1u);
  EXPECT_EQ(b_->counters().bytes_received[0], 3u);
}

TEST_F(TransportTest, StreamRoundTripNamesTheSendersGossipAddress) {
  std::vector<uint8_t> big(300 * 1024);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 7);
  a_->Send(b_->local_address(), Channel::kStream, big);
  a_->Send(b_->local_address(), Channel::kStream, {});
  a_->Send(b_->local_address(), Channel::kStream, {42});
  auto got = sink_b_.WaitFor(3);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].from, a_->local_address());
  EXPECT_EQ(got[0].channel, Channel::kStream);
  EXPECT_EQ(got[0].bytes, big);
  EXPECT_TRUE(got[1].bytes.empty());
  EXPECT_EQ(got[2].bytes, (std::vector<uint8_t>{42}));
  EXPECT_EQ(a_->counters().connections_opened, 1u);  // one pooled connection
  EXPECT_EQ(b_->counters().messages_received[1], 3u);
}

TEST_F(TransportTest, OversizeDatagramIsDroppedBeforeSending) {
  a_->Send(b_->local_address(), Channel::kDatagram, std::vector<uint8_t>(1401, 0));
  a_->Send(b_->local_address(), Channel::kDatagram, std::vector<uint8_t>(1400, 1));
  auto got = sink_b_.WaitFor(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].bytes.size(), 1400u);
  EXPECT_EQ(a_->counters().oversize_drops, 1u);
}

TEST_F(TransportTest, OversizeIncomingFrameClosesTheConnectionWithoutAllocating) {
  asio::io_context client_io;
  asio::ip::tcp::socket s(client_io);
  Result<HostPort> hp = ParseHostPort(b_->local_address());
  ASSERT_TRUE(hp.ok());
  s.connect({asio::ip::make_address(hp->host), hp->port});
  // A valid preamble, then a frame that claims 4 GiB - 1.
  std::vector<uint8_t> bytes = {'H', 'S', 'T', 'P', 1, 0x1f, 0x90, 0xff, 0xff, 0xff, 0xff};
  asio::write(s, asio::buffer(bytes));
  uint8_t byte = 0;
  boost::system::error_code ec;
  s.read_some(asio::buffer(&byte, 1), ec);  // returns when the server closes
  EXPECT_TRUE(ec == asio::error::eof || ec == asio::error::connection_reset) << ec.message();
  EXPECT_EQ(b_->counters().oversize_drops, 1u);
  // A delivery would have been queued on the core before the server closed the connection.
  ASSERT_TRUE(loops_.Sync(loops_.core));
  EXPECT_TRUE(sink_b_.received().empty());
}

using testutil::Eventually;

// Opens `n` connections to `address`, each sending a preamble, a frame length and `sent` bytes
// of the frame (never the rest).
std::vector<std::unique_ptr<asio::ip::tcp::socket>> HalfFrames(asio::io_context& io,
                                                               const std::string& address, size_t n,
                                                               uint32_t length, size_t sent) {
  Result<HostPort> hp = ParseHostPort(address);
  std::vector<std::unique_ptr<asio::ip::tcp::socket>> sockets;
  std::vector<uint8_t> bytes = {'H',
                                'S',
                                'T',
                                'P',
                                1,
                                0x1f,
                                0x90,
                                static_cast<uint8_t>(length >> 24),
                                static_cast<uint8_t>(length >> 16),
                                static_cast<uint8_t>(length >> 8),
                                static_cast<uint8_t>(length)};
  bytes.resize(bytes.size() + sent, 0xab);
  for (size_t i = 0; i < n; ++i) {
    auto s = std::make_unique<asio::ip::tcp::socket>(io);
    boost::system::error_code ec;
    s->connect({asio::ip::make_address(hp->host), hp->port}, ec);
    if (!ec) asio::write(*s, asio::buffer(bytes), ec);
    sockets.push_back(std::move(s));
  }
  return sockets;
}

TEST(TransportPoolTest, UnfinishedLargeFramesHoldNoMoreThanThePool) {
  Loops loops;
  RecordingSink sink;
  TransportOptions o = Local();
  o.max_frame_bytes = 1 << 20;
  o.max_inbound_frame_bytes = 2 << 20;
  o.max_incoming_per_source = 1000;
  auto t = UdpTcpTransport::Open(loops.io, loops.core, o);
  ASSERT_TRUE(t.ok());
  (*t)->Start(&sink);
  // 64 connections each declare a 1 MiB frame and send 100 KiB of it: read by declared length,
  // they would hold 64 MiB; charged to the pool (at most one frame per source IP), 1 MiB.
  asio::io_context client_io;
  auto sockets = HalfFrames(client_io, (*t)->local_address(), 64, 1 << 20, 100 << 10);
  // A frame is charged whole: one connection reads, the 63 others wait unread.
  ASSERT_TRUE(Eventually([&] {
    const TransportCounters c = (*t)->counters();
    return c.connections_accepted == 64 && c.pool_waits >= 63;
  })) << (*t)->counters().pool_waits;
  const TransportCounters c = (*t)->counters();
  EXPECT_LE(c.inbound_frame_bytes, o.max_frame_bytes);
  EXPECT_GT(c.inbound_frame_bytes, 0u);
  // Closing the connections gives the pool back (each waiting one in turn reads, meets the
  // close and gives back its charge); a whole frame then goes through.
  sockets.clear();
  ASSERT_TRUE(Eventually([&] { return (*t)->counters().inbound_frame_bytes == 0; }));
  auto whole = HalfFrames(client_io, (*t)->local_address(), 1, 300 << 10, 300 << 10);
  auto got = sink.WaitFor(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].bytes.size(), size_t{300} << 10);
  EXPECT_TRUE(Eventually([&] { return (*t)->counters().inbound_frame_bytes == 0; }));
  (*t)->Close();
  EXPECT_TRUE(loops.Drain()) << "work left on the loops after Close()";
}

TEST(TransportPoolTest, FramesFromOneSourceWaitForRoomInsteadOfBeingDropped) {
  Loops loops;
  RecordingSink sink;
  TransportOptions o = Local();
  o.max_frame_bytes = 1 << 20;
  o.max_inbound_frame_bytes = 1 << 20;
  auto a = UdpTcpTransport::Open(loops.io, loops.core, Local());
  auto b = UdpTcpTransport::Open(loops.io, loops.core, o);
  ASSERT_TRUE(a.ok() && b.ok());
  (*a)->Start(nullptr);
  (*b)->Start(&sink);
  // Three frames of 900 KiB: each needs almost the whole pool, so each waits for the last.
  for (int i = 0; i < 3; ++i) {
    (*a)->Send((*b)->local_address(), Channel::kStream, std::vector<uint8_t>(900 << 10, i));
  }
  auto got = sink.WaitFor(3);
  ASSERT_EQ(got.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(got[i].bytes, std::vector<uint8_t>(900 << 10, i));
  EXPECT_TRUE(Eventually([&] { return (*b)->counters().inbound_frame_bytes == 0; }));
  (*a)->Close();
  (*b)->Close();
  EXPECT_TRUE(loops.Drain()) << "work left on the loops after Close()";
}

TEST_F(TransportTest, ConnectionsPerSourceAreCapped) {
  asio::io_context client_io;
  // Preamble and an empty frame header only: each connection stays open and holds nothing.
  auto sockets = HalfFrames(client_io, b_->local_address(), 40, 0, 0);
  ASSERT_TRUE(Eventually([&] {
    const TransportCounters c = b_->counters();
    return c.connections_accepted + c.connections_refused == 40;
  }));
  EXPECT_EQ(b_->counters().connections_accepted, TransportOptions{}.max_incoming_per_source);
  EXPECT_EQ(b_->counters().connections_refused, 40u - TransportOptions{}.max_incoming_per_source);
}

TEST(TransportRateTest, DatagramsOverASourcesRateAreDropped) {
  Loops loops;
  RecordingSink sink;
  TransportOptions o = Local();
  o.max_datagrams_per_source_per_s = 5;
  auto a = UdpTcpTransport::Open(loops.io, loops.core, Local());
  auto b = UdpTcpTransport::Open(loops.io, loops.core, o);
  ASSERT_TRUE(a.ok() && b.ok());
  (*a)->Start(nullptr);
  (*b)->Start(&sink);
  for (int i = 0; i < 50; ++i) (*a)->Send((*b)->local_address(), Channel::kDatagram, {1});
  ASSERT_TRUE(Eventually([&] {
    const TransportCounters c = (*b)->counters();
    return c.messages_received[0] + c.rate_drops == 50;
  }));
  EXPECT_GE((*b)->counters().rate_drops, 1u);
  EXPECT_LT((*b)->counters().messages_received[0], 50u);
  (*a)->Close();
  (*b)->Close();
  EXPECT_TRUE(loops.Drain()) << "work left on the loops after Close()";
}

TEST_F(TransportTest, BadPreambleIsAProtocolError) {
  asio::io_context client_io;
  asio::ip::tcp::socket s(client_io);
  Result<HostPort> hp = ParseHostPort(b_->local_address());
  ASSERT_TRUE(hp.ok());
  s.connect({asio::ip::make_address(hp->host), hp->port});
  asio::write(s, asio::buffer(std::string("GET / HTTP/1.1\r\n\r\n")));
  uint8_t byte = 0;
  boost::system::error_code ec;
  s.read_some(asio::buffer(&byte, 1), ec);
  EXPECT_TRUE(ec);
  EXPECT_EQ(b_->counters().protocol_errors, 1u);
}

TEST_F(TransportTest, BlockedAddressesDropBothWays) {
  b_->SetBlocked({a_->local_address()});
  a_->Send(b_->local_address(), Channel::kDatagram, {1});
  a_->Send(b_->local_address(), Channel::kStream, {2});
  b_->Send(a_->local_address(), Channel::kDatagram, {3});
  // Two received, one sent; a delivery would have been queued on the core before its drop count.
  ASSERT_TRUE(testutil::Eventually([&] { return b_->counters().blocked_drops >= 3; }));
  ASSERT_TRUE(loops_.Sync(loops_.core));
  EXPECT_TRUE(sink_b_.received().empty());
  EXPECT_TRUE(sink_a_.received().empty());
  EXPECT_EQ(b_->counters().blocked_drops, 3u);
  // Unblocking heals.
  b_->SetBlocked({});
  a_->Send(b_->local_address(), Channel::kDatagram, {4});
  auto got = sink_b_.WaitFor(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].bytes, (std::vector<uint8_t>{4}));
}

TEST_F(TransportTest, UnreachablePeerCountsASendError) {
  // A port nobody listens on (bound then released).
  std::string dead;
  {
    // Never started, so nothing of it runs on the loops: safe to destroy here.
    auto t = UdpTcpTransport::Open(loops_.io, loops_.core, Local());
    ASSERT_TRUE(t.ok());
    dead = (*t)->local_address();
  }
  a_->Send(dead, Channel::kStream, {1, 2});
  a_->Send("not an address", Channel::kDatagram, {1});
  EXPECT_TRUE(testutil::Eventually([&] { return a_->counters().send_errors >= 2; }));
  EXPECT_EQ(a_->counters().send_errors, 2u);
}

TEST(TransportStandaloneTest, HostnamesResolveAndIpv6Works) {
  Loops loops;
  RecordingSink sink;
  auto a = UdpTcpTransport::Open(loops.io, loops.core, Local());
  auto b = UdpTcpTransport::Open(loops.io, loops.core, Local());
  ASSERT_TRUE(a.ok() && b.ok());
  (*a)->Start(nullptr);
  (*b)->Start(&sink);
  (*a)->Send("localhost:" + std::to_string((*b)->port()), Channel::kStream, {7});
  auto got = sink.WaitFor(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].bytes, (std::vector<uint8_t>{7}));

  RecordingSink sink6;
  auto v6 = UdpTcpTransport::Open(loops.io, loops.core, Local("[::1]:0"));
  Result<std::unique_ptr<UdpTcpTransport>> v6b = InvalidArgumentError("unused");
  if (v6.ok()) {  // hosts without IPv6 loopback skip this half
    v6b = UdpTcpTransport::Open(loops.io, loops.core, Local("[::1]:0"));
    ASSERT_TRUE(v6b.ok());
    (*v6)->Start(nullptr);
    (*v6b)->Start(&sink6);
    EXPECT_EQ((*v6)->local_address(), "[::1]:" + std::to_string((*v6)->port()));
    (*v6)->Send((*v6b)->local_address(), Channel::kDatagram, {6});
    auto g6 = sink6.WaitFor(1);
    ASSERT_EQ(g6.size(), 1u);
    EXPECT_EQ(g6[0].from, (*v6)->local_address());
    (*v6)->Close();
    (*v6b)->Close();
  }
  (*a)->Close();
  (*b)->Close();
  EXPECT_TRUE(loops.Drain()) << "work left on the loops after Close()";
}

// A seed given as a name that resolves to several addresses (DNS round robin, a Kubernetes
// headless service) reaches every one of them, and the name is resolved again for each attempt
// once resolve_ttl has passed, so members that appear later are found.
TEST(TransportStandaloneTest, ANameWithSeveralAddressesReachesEachAndIsResolvedAgain) {
  Loops loops;
  RecordingSink sink_b, sink_c;
  std::mutex mu;
  std::vector<std::string> addresses = {"127.0.0.1"};
  int lookups = 0;
  TransportOptions o = Local();
  o.resolve_ttl = Duration(0);  // every send resolves
  o.resolver = [&](const std::string& host) {
    std::lock_guard lock(mu);
    EXPECT_EQ(host, "seeds.hearsay.test");
    ++lookups;
    return addresses;
  };
  auto a = UdpTcpTransport::Open(loops.io, loops.core, o);
  auto b = UdpTcpTransport::Open(loops.io, loops.core, Local("127.0.0.1:0"));
  ASSERT_TRUE(a.ok() && b.ok());
  // c listens on the same port on another loopback address: one name, one port, two nodes.
  auto c = UdpTcpTransport::Open(loops.io, loops.core,
                                 Local("127.0.0.2:" + std::to_string((*b)->port())));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  (*a)->Start(nullptr);
  (*b)->Start(&sink_b);
  (*c)->Start(&sink_c);
  const std::string name = "seeds.hearsay.test:" + std::to_string((*b)->port());
  (*a)->Send(name, Channel::kDatagram, {1});
  ASSERT_EQ(sink_b.WaitFor(1).size(), 1u);
  EXPECT_TRUE(sink_c.received().empty());
  {
    std::lock_guard lock(mu);
    addresses = {"127.0.0.1", "127.0.0.2"};  // the name now lists both
  }
  (*a)->Send(name, Channel::kDatagram, {2});
  ASSERT_EQ(sink_b.WaitFor(2).size(), 2u);
  ASSERT_EQ(sink_c.WaitFor(1).size(), 1u);
  EXPECT_EQ(sink_c.received()[0].bytes, (std::vector<uint8_t>{2}));
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(lookups, 2);
  }
  (*a)->Close();
  (*b)->Close();
  (*c)->Close();
  EXPECT_TRUE(loops.Drain());
}

TEST(TransportOpenTest, RejectsBadAddresses) {
  asio::io_context io, core;
  auto r = UdpTcpTransport::Open(io, core, Local("nohost"));
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  r = UdpTcpTransport::Open(io, core, Local("example.invalid:7946"));
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(HostPortTest, ParsesAndFormats) {
  auto a = ParseHostPort("127.0.0.1:7946");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 7946);
  auto b = ParseHostPort("[::1]:0");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(FormatHostPort("::1", 80), "[::1]:80");
  EXPECT_EQ(FormatHostPort("node-1", 80), "node-1:80");
  for (const char* bad :
       {"", "host", ":80", "h:", "h:65536", "h:-1", "h:1x", "::1:80", "[::1]", "[::1]80"}) {
    EXPECT_FALSE(ParseHostPort(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace hearsay::net
