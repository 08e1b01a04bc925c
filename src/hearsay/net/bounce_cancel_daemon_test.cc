// Forwards the node bounces whose sender has already gone (net::Daemon in process, the simulated
// engine, loopback sockets). A forward whose entry gave up on it (its first-token deadline passed
// while a partition or SIGSTOP held its bytes) reaches the peer with the FIN right behind it: the
// server reports the close while Submit is queued on the core, so CancelRequest runs between the
// bounce and the delivery of its error. The node must drop that error (Node::Cancel), because the
// daemon frees the request's sink on cancel. Whether the close comes before or after the bounce
// is up to the threads: in this loop of 400, about a quarter are cancelled before the bounce's
// error is delivered, and a call on a freed sink crashes the test (or a sanitizer reports it).
// Every build checks that each request is counted out once.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "hearsay/net/blocking_client_test_util.h"
#include "hearsay/net/daemon.h"
#include "hearsay/net/daemon_test_util.h"
#include "hearsay/testutil/eventually.h"

namespace hearsay::net {
namespace {

using testing::Metric;
using testing::Start;
using testing::Words;
using testutil::Eventually;

// Sends `request` on a new connection to 127.0.0.1:`port` and closes it at once: the FIN follows
// the request's bytes. False if the connection failed.
bool SendAndLeave(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0;
  size_t sent = 0;
  while (ok && sent < request.size()) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    ok = n > 0;
    if (ok) sent += static_cast<size_t>(n);
  }
  ::close(fd);
  return ok;
}

TEST(BounceCancelDaemonTest, BouncedForwardsWhoseSenderLeftAreEachCountedOutOnce) {
  DaemonConfig c = testing::LoopbackConfig();
  c.insecure = true;
  auto d = Start(c);
  ASSERT_TRUE(d);
  const std::string address = d->http_address();
  const int port = std::stoi(address.substr(address.rfind(':') + 1));
  // 400 uncached tokens cost far more than 0.001 ms of prefill: every one is bounced.
  const std::string body = nlohmann::json{
      {"model", "hearsay-sim"},
      {"prompt", Words("w", 400)},
      {"max_tokens", 4},
      {"stream", true}}.dump();
  const std::string request =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "X-Hearsay-Hop: 1\r\nX-Hearsay-Origin: node-x\r\nX-Hearsay-Bounce-Above-Ms: 0.001\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  constexpr int kSenders = 4;
  constexpr int kEach = 100;
  std::vector<std::thread> senders;
  std::atomic<int> sent{0};
  for (int t = 0; t < kSenders; ++t) {
    senders.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) sent += SendAndLeave(port, request) ? 1 : 0;
    });
  }
  for (std::thread& t : senders) t.join();
  EXPECT_EQ(sent.load(), kSenders * kEach);

  testing::BlockingClient control;
  auto metrics = [&] { return control.Get(address, "/metrics").body; };
  // Every request ended, bounced or cancelled, and was counted out of in_flight exactly once.
  ASSERT_TRUE(Eventually([&] {
    return Metric(metrics(), "hearsay_peer_requests_bounced_total") == kSenders * kEach &&
           d->in_flight() == 0;
  })) << "in_flight "
      << d->in_flight() << "\n"
      << metrics();
  // The node still serves.
  EXPECT_EQ(control.Get(address, "/health").status, 200);
  testing::BlockingResponse r = control.Post(
      address, "/v1/completions",
      nlohmann::json{{"model", "hearsay-sim"}, {"prompt", "hello"}, {"max_tokens", 2}});
  EXPECT_EQ(r.status, 200) << r.body;
}

}  // namespace
}  // namespace hearsay::net
