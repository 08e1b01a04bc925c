#include "hearsay/testkit/blocking_http.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <thread>

namespace hearsay::testkit {
namespace {

using namespace std::chrono_literals;

void WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

// `data` framed as one HTTP chunk.
std::string Chunk(std::string_view data) {
  char size[20];
  std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  return size + std::string(data) + "\r\n";
}

// A loopback server for one connection: reads the request head, then runs `script` on the socket
// and closes it. Bounded: gives up if nobody connects within 10 s.
class OneShotServer {
 public:
  explicit OneShotServer(std::function<void(int fd, const std::string& head)> script) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(listen_fd_, 4), 0);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    address_ = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
    thread_ = std::thread([this, script = std::move(script)] {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 10000) != 1) return;
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      std::string head;
      char c;
      while (head.find("\r\n\r\n") == std::string::npos && ::recv(fd, &c, 1, 0) == 1) head += c;
      script(fd, head);
      ::close(fd);
    });
  }
  ~OneShotServer() {
    thread_.join();
    ::close(listen_fd_);
  }
  const std::string& address() const { return address_; }

 private:
  int listen_fd_ = -1;
  std::string address_;
  std::thread thread_;
};

// A loopback port nothing listens on: bound by the kernel's choice, then released.
uint16_t ClosedLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

TEST(BlockingHttpTest, GetReadsAContentLengthResponse) {
  std::string seen_head;
  OneShotServer server([&](int fd, const std::string& head) {
    seen_head = head;
    WriteAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Node: n1\r\n\r\nhello");
  });
  Result<HttpResponse> r = HttpGet(server.address(), "/health", 5s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello");
  EXPECT_EQ(r->Header("x-node").value_or(""), "n1");
  EXPECT_EQ(seen_head.rfind("GET /health HTTP/1.1\r\n", 0), 0u) << seen_head;
  EXPECT_NE(seen_head.find("Connection: close"), std::string::npos);
}

TEST(BlockingHttpTest, PostSendsTheBodyAndExtraHeaders) {
  std::string seen;
  OneShotServer server([&](int fd, const std::string& head) {
    seen = head;
    char buf[64];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n > 0) seen.append(buf, static_cast<size_t>(n));
    WriteAll(fd, "HTTP/1.1 400 Bad Request\r\nContent-Length: 2\r\n\r\n{}");
  });
  Result<HttpResponse> r =
      HttpPostJson(server.address(), "/v1/completions", "{\"x\":1}", 5s, {{"X-Test", "yes"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(seen.find("Content-Length: 7\r\n"), std::string::npos) << seen;
  EXPECT_NE(seen.find("X-Test: yes\r\n"), std::string::npos) << seen;
  EXPECT_NE(seen.find("Content-Type: application/json\r\n"), std::string::npos) << seen;
  EXPECT_NE(seen.find("{\"x\":1}"), std::string::npos) << seen;
}

TEST(BlockingHttpTest, StreamDeliversTimedEventsUntilDone) {
  OneShotServer server([](int fd, const std::string&) {
    WriteAll(fd,
             "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
             "Transfer-Encoding: chunked\r\n\r\n");
    WriteAll(fd, Chunk("data: {\"n\":1}\n\n"));
    std::this_thread::sleep_for(50ms);
    WriteAll(fd, Chunk("data: [DONE]\n\n") + "0\r\n\r\n");
  });
  Result<StreamOutcome> r = HttpPostStream(server.address(), "/v1/completions", "{}", 5s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(r->transport.ok()) << r->transport.ToString();
  ASSERT_EQ(r->events.size(), 2u);
  EXPECT_EQ(r->events[0].event.data, "{\"n\":1}");
  EXPECT_TRUE(r->saw_done());
  EXPECT_FALSE(r->saw_error_event());
  ASSERT_TRUE(r->first_event_at.has_value());
  EXPECT_LE(r->started, *r->first_event_at);
  EXPECT_LE(r->events[0].at, r->events[1].at);
}

TEST(BlockingHttpTest, StreamCutShortIsReportedNotHung) {
  OneShotServer server([](int fd, const std::string&) {
    WriteAll(fd,
             "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
             "Transfer-Encoding: chunked\r\n\r\n");
    WriteAll(fd, Chunk("data: {\"error\":{\"message\":\"peer died\"}}\n\n"));
  });
  Result<StreamOutcome> r = HttpPostStream(server.address(), "/v1/completions", "{}", 5s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Cut short: a truncated body (DATA_LOSS) or a reset (UNAVAILABLE, the server closed with the
  // request body unread), but never a wait for the deadline.
  EXPECT_TRUE(r->transport.code() == StatusCode::kDataLoss ||
              r->transport.code() == StatusCode::kUnavailable)
      << r->transport.ToString();
  EXPECT_LT(r->finished - r->started, std::chrono::seconds(4));
  EXPECT_TRUE(r->saw_error_event());
  EXPECT_FALSE(r->saw_done());
}

TEST(BlockingHttpTest, NonStreamAnswerGoesToBody) {
  OneShotServer server([](int fd, const std::string&) {
    WriteAll(fd, "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 2\r\n\r\n{}");
  });
  Result<StreamOutcome> r = HttpPostStream(server.address(), "/v1/completions", "{}", 5s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(r->body, "{}");
  EXPECT_TRUE(r->events.empty());
  EXPECT_EQ(http::FindHeader(r->headers, "retry-after").value_or(""), "1");
}

TEST(BlockingHttpTest, SilentServerHitsTheDeadline) {
  OneShotServer server([](int fd, const std::string&) {
    char c;
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, 3000);  // until the client gives up and closes
    (void)::recv(fd, &c, 1, 0);
  });
  const auto start = SteadyClock::now();
  Result<HttpResponse> r = HttpGet(server.address(), "/", 300ms);
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().ToString();
  EXPECT_LT(SteadyClock::now() - start, 2s);
}

TEST(BlockingHttpTest, RefusedConnectionIsUnavailable) {
  Result<HttpResponse> r = HttpGet("127.0.0.1:" + std::to_string(ClosedLoopbackPort()), "/", 2s);
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
  EXPECT_EQ(HttpGet("no-port", "/", 1s).status().code(), StatusCode::kInvalidArgument);
}

TEST(BlockingHttpTest, RawConnectionReadsUntilClose) {
  OneShotServer server(
      [](int fd, const std::string& head) { WriteAll(fd, "got " + std::to_string(head.size())); });
  auto conn = RawConnection::Connect(server.address(), 2s);
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  ASSERT_TRUE((*conn)->Write("GET / HTTP/1.1\r\n\r\n", 2s).ok());
  Result<std::string> all = (*conn)->ReadUntilClose(5s);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(*all, "got 18");
}

TEST(SplitHostPortTest, AcceptsHostPortAndV6) {
  auto a = SplitHostPort("127.0.0.1:8080");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first, "127.0.0.1");
  EXPECT_EQ(a->second, 8080);
  auto b = SplitHostPort("[::1]:7946");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->first, "::1");
  for (const char* bad : {"", "host", "host:", ":80", "h:0", "h:65536", "h:8x", "[::1]80"}) {
    EXPECT_FALSE(SplitHostPort(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace hearsay::testkit
