// http::Client against a real http::Server (and a hand-rolled one for broken servers): pooling,
// incremental bodies, timeouts, retries and cancellation.
#include "hearsay/http/client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>
#include <future>
#include <mutex>
#include <thread>

#include "hearsay/http/server.h"
#include "hearsay/http/test_util.h"
#include "hearsay/testutil/eventually.h"

namespace hearsay::http {
namespace {

using testing::IoThread;
using testing::Ready;
using testutil::Eventually;
using namespace std::chrono_literals;

// What one request produced, filled on the I/O thread and read once `done` is ready.
struct Outcome {
  std::mutex mu;
  int status = 0;
  Headers headers;
  std::string body;
  std::vector<std::string> pieces;
  std::promise<Status> done;
  std::future<Status> done_future = done.get_future();
  std::atomic<int> done_calls{0};

  ResponseHandlers Handlers() {
    ResponseHandlers h;
    h.on_headers = [this](int s, const Headers& hs) {
      std::lock_guard lock(mu);
      status = s;
      headers = hs;
    };
    h.on_body = [this](std::string_view chunk) {
      std::lock_guard lock(mu);
      body.append(chunk);
      pieces.emplace_back(chunk);
    };
    h.on_done = [this](Status s) {
      if (done_calls.fetch_add(1) == 0) done.set_value(std::move(s));
    };
    return h;
  }
  // The final status (DEADLINE_EXCEEDED from the test itself if it never came).
  Status Wait(std::chrono::milliseconds timeout = 5s) {
    if (done_future.wait_for(timeout) != std::future_status::ready) {
      return DeadlineExceededError("test: on_done never ran");
    }
    return done_future.get();
  }
};

ClientRequest Get(uint16_t port, std::string target) {
  ClientRequest r;
  r.method = "GET";
  r.host_port = "127.0.0.1:" + std::to_string(port);
  r.target = std::move(target);
  r.connect_timeout = 2s;
  r.response_timeout = 3s;
  r.idle_timeout = 3s;
  return r;
}

class ClientTest : public ::testing::Test {
 protected:
  void StartServer(Handler handler, ServerOptions options = {}) {
    options.listen = "127.0.0.1:0";
    auto s = Server::Start(io_.io(), std::move(options), std::move(handler));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s).value();
  }
  void TearDown() override {
    client_.reset();
    if (server_) server_->Close();
    io_.Stop();
  }

  IoThread io_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<Client> client_ = std::make_unique<Client>(io_.io());
};

Handler Echo() {
  return [](Request req, std::shared_ptr<Responder> r) {
    r->Respond(200, {{"X-Path", req.path}}, req.method + ":" + req.body);
  };
}

TEST_F(ClientTest, GetsAResponse) {
  StartServer(Echo());
  Outcome out;
  auto req = Get(server_->port(), "/hello?q=1");
  req.method = "POST";
  req.body = "payload";
  req.headers = {{"X-Custom", "1"}};
  client_->Send(req, out.Handlers());
  Status st = out.Wait();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(out.status, 200);
  EXPECT_EQ(FindHeader(out.headers, "x-path"), "/hello");
  EXPECT_EQ(out.body, "POST:payload");
  EXPECT_EQ(out.done_calls.load(), 1);
}

TEST_F(ClientTest, PooledConnectionIsReused) {
  StartServer(Echo());
  for (int i = 0; i < 3; ++i) {
    Outcome out;
    client_->Send(Get(server_->port(), "/" + std::to_string(i)), out.Handlers());
    ASSERT_TRUE(out.Wait().ok());
    EXPECT_EQ(out.body, "GET:");
  }
  EXPECT_EQ(server_->stats().connections_accepted, 1u);
  EXPECT_EQ(client_->stats().connections_opened, 1u);
  EXPECT_EQ(client_->stats().connections_reused, 2u);
  EXPECT_EQ(client_->stats().idle_connections, 1u);
}

TEST_F(ClientTest, ConcurrentRequestsOpenSeveralConnectionsAndPoolThem) {
  std::mutex mu;
  std::vector<std::shared_ptr<Responder>> held;
  StartServer([&](Request, std::shared_ptr<Responder> r) {
    std::lock_guard lock(mu);
    held.push_back(std::move(r));
  });
  std::vector<std::unique_ptr<Outcome>> outs;
  for (int i = 0; i < 3; ++i) {
    outs.push_back(std::make_unique<Outcome>());
    client_->Send(Get(server_->port(), "/"), outs.back()->Handlers());
  }
  EXPECT_TRUE(Eventually([&] {
    std::lock_guard lock(mu);
    return held.size() == 3;
  }));
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(held.size(), 3u);
    for (auto& r : held) r->Respond(200, {}, "x");
  }
  for (auto& o : outs) ASSERT_TRUE(o->Wait().ok());
  EXPECT_EQ(client_->stats().connections_opened, 3u);
  EXPECT_EQ(client_->stats().idle_connections, 3u);
}

TEST_F(ClientTest, PoolKeepsAtMostMaxIdlePerHost) {
  client_ = std::make_unique<Client>(io_.io(), ClientOptions{.max_idle_per_host = 1});
  std::atomic<int> held{0};
  std::mutex mu;
  std::vector<std::shared_ptr<Responder>> responders;
  StartServer([&](Request, std::shared_ptr<Responder> r) {
    std::lock_guard lock(mu);
    responders.push_back(std::move(r));
    held++;
  });
  std::vector<std::unique_ptr<Outcome>> outs;
  for (int i = 0; i < 3; ++i) {
    outs.push_back(std::make_unique<Outcome>());
    client_->Send(Get(server_->port(), "/"), outs.back()->Handlers());
  }
  EXPECT_TRUE(Eventually([&] { return held.load() >= 3; }));
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(responders.size(), 3u);
    for (auto& r : responders) r->Respond(200, {}, "x");
  }
  for (auto& o : outs) ASSERT_TRUE(o->Wait().ok());
  EXPECT_EQ(client_->stats().idle_connections, 1u);
  EXPECT_TRUE(Eventually([&] { return server_->open_connections() <= 1; }));
  EXPECT_EQ(server_->open_connections(), 1u) << "connections beyond the cap are closed";
}

TEST_F(ClientTest, ExpiredIdleConnectionsAreClosed) {
  client_ = std::make_unique<Client>(io_.io(), ClientOptions{.idle_expiry = 100ms});
  StartServer(Echo());
  Outcome a;
  client_->Send(Get(server_->port(), "/"), a.Handlers());
  ASSERT_TRUE(a.Wait().ok());
  EXPECT_EQ(client_->stats().idle_connections, 1u);
  EXPECT_TRUE(Eventually([&] { return server_->open_connections() == 0; }))
      << "the pool's sweep closed it";
  EXPECT_EQ(client_->stats().idle_connections, 0u);
  Outcome b;
  client_->Send(Get(server_->port(), "/"), b.Handlers());
  ASSERT_TRUE(b.Wait().ok());
  EXPECT_EQ(client_->stats().connections_opened, 2u);
}

TEST_F(ClientTest, StreamedBodyIsDeliveredAsItArrives) {
  std::promise<std::shared_ptr<Responder>> got;
  StartServer([&](Request, std::shared_ptr<Responder> r) {
    r->StartStream(200, {{"Content-Type", "text/event-stream"}});
    r->Write("part one;");
    got.set_value(r);
  });
  Outcome out;
  std::promise<void> first_piece;
  auto handlers = out.Handlers();
  auto on_body = handlers.on_body;
  std::atomic<bool> signalled{false};
  handlers.on_body = [&, on_body](std::string_view chunk) {
    on_body(chunk);
    if (!signalled.exchange(true)) first_piece.set_value();
  };
  client_->Send(Get(server_->port(), "/s"), std::move(handlers));
  auto ff = first_piece.get_future();
  ASSERT_TRUE(Ready(ff)) << "the first chunk must arrive before the second is written";
  {
    std::lock_guard lock(out.mu);
    EXPECT_EQ(out.body, "part one;");
  }
  auto responder = got.get_future().get();
  responder->Write("part two");
  responder->End();
  ASSERT_TRUE(out.Wait().ok());
  EXPECT_EQ(out.body, "part one;part two");
  EXPECT_EQ(client_->stats().idle_connections, 1u) << "a complete chunked response is reusable";
}

TEST_F(ClientTest, ConnectRefusedIsUnavailable) {
  uint16_t port;
  {
    // A port that was free a moment ago and has no listener now.
    auto s = Server::Start(io_.io(), ServerOptions{.listen = "127.0.0.1:0"}, Echo());
    ASSERT_TRUE(s.ok());
    port = (*s)->port();
    (*s)->Close();
  }
  ASSERT_TRUE(io_.Drain());  // the listener is closed
  Outcome out;
  client_->Send(Get(port, "/"), out.Handlers());
  Status st = out.Wait();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_EQ(out.status, 0) << "no headers";
}

TEST_F(ClientTest, SilentServerIsADeadlineExceeded) {
  std::shared_ptr<Responder> held;
  std::mutex mu;
  StartServer([&](Request, std::shared_ptr<Responder> r) {
    std::lock_guard lock(mu);
    held = std::move(r);
  });
  Outcome out;
  auto req = Get(server_->port(), "/");
  req.response_timeout = 200ms;
  client_->Send(req, out.Handlers());
  Status st = out.Wait();
  EXPECT_EQ(st.code(), StatusCode::kDeadlineExceeded) << st.ToString();
  EXPECT_EQ(out.status, 0);
}

TEST_F(ClientTest, StalledBodyIsADeadlineExceededAfterHeaders) {
  testing::ResponderKeeper keeper;
  StartServer([&](Request, std::shared_ptr<Responder> r) {
    r->StartStream(200, {});
    r->Write("some");
    keeper.Keep(std::move(r));  // ... and nothing more.
  });
  Outcome out;
  auto req = Get(server_->port(), "/");
  req.idle_timeout = 200ms;
  client_->Send(req, out.Handlers());
  Status st = out.Wait();
  EXPECT_EQ(st.code(), StatusCode::kDeadlineExceeded) << st.ToString();
  EXPECT_EQ(out.status, 200);
  EXPECT_EQ(out.body, "some");
}

TEST_F(ClientTest, ConnectTimeoutIsADeadlineExceeded) {
  // A listener that never accepts, with the smallest backlog: once its queue is full, further
  // SYNs go unanswered and connects hang. (Requests that did connect time out waiting for the
  // response instead.)
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 0), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  uint16_t port = ntohs(addr.sin_port);
  std::vector<std::unique_ptr<Outcome>> outs;
  for (int i = 0; i < 4; ++i) {
    outs.push_back(std::make_unique<Outcome>());
    auto req = Get(port, "/");
    req.connect_timeout = 300ms;
    req.response_timeout = 300ms;
    client_->Send(req, outs.back()->Handlers());
  }
  int connect_timeouts = 0;
  for (auto& o : outs) {
    Status st = o->Wait();
    EXPECT_EQ(st.code(), StatusCode::kDeadlineExceeded) << st.ToString();
    if (st.message().find("connect") != std::string::npos) connect_timeouts++;
  }
  EXPECT_GE(connect_timeouts, 1);
  ::close(fd);
}

TEST_F(ClientTest, IdleConnectionClosedByTheServerIsNotUsed) {
  ServerOptions o;
  o.idle_timeout = 100ms;
  StartServer(Echo(), o);
  Outcome a;
  client_->Send(Get(server_->port(), "/a"), a.Handlers());
  ASSERT_TRUE(a.Wait().ok());
  // Wait until the server has closed the pooled connection.
  ASSERT_TRUE(Eventually([&] { return server_->open_connections() == 0; }));
  Outcome b;
  auto req = Get(server_->port(), "/b");
  req.method = "POST";  // not idempotent: must not be sent on a dead connection at all
  client_->Send(req, b.Handlers());
  ASSERT_TRUE(b.Wait().ok()) << "stale connection must be detected before use";
  EXPECT_EQ(b.body, "POST:");
  EXPECT_EQ(client_->stats().stale_discarded, 1u);
  EXPECT_EQ(client_->stats().connections_opened, 2u);
}

TEST_F(ClientTest, CancelAbortsAndTheServerSeesTheClientLeave) {
  std::promise<void> server_saw_close;
  testing::ResponderKeeper keeper;
  StartServer([&](Request, std::shared_ptr<Responder> r) {
    r->OnClose([&] { server_saw_close.set_value(); });
    r->StartStream(200, {});
    r->Write("x");
    keeper.Keep(std::move(r));
  });
  Outcome out;
  auto handlers = out.Handlers();
  std::shared_ptr<RequestHandle> handle;
  std::promise<void> got_body;
  auto on_body = handlers.on_body;
  handlers.on_body = [&, on_body](std::string_view c) {
    on_body(c);
    got_body.set_value();
  };
  handle = client_->Send(Get(server_->port(), "/"), std::move(handlers));
  auto gb = got_body.get_future();
  ASSERT_TRUE(Ready(gb));
  handle->Cancel();
  EXPECT_EQ(out.Wait().code(), StatusCode::kAborted);
  auto sc = server_saw_close.get_future();
  EXPECT_TRUE(Ready(sc));
  handle->Cancel();  // no-op after the end
  ASSERT_TRUE(io_.Drain());
  EXPECT_EQ(out.done_calls.load(), 1);
}

TEST_F(ClientTest, BadRequestFieldsAreRejected) {
  for (auto mutate : std::vector<std::function<void(ClientRequest&)>>{
           [](ClientRequest& r) { r.host_port = "nohost"; },
           [](ClientRequest& r) { r.target = "no-slash"; },
           [](ClientRequest& r) { r.method = "GE T"; },
           [](ClientRequest& r) {
             r.headers = {{"X-Evil", "a\r\nInjected: 1"}};
           }}) {
    Outcome out;
    auto req = Get(1, "/");
    mutate(req);
    client_->Send(req, out.Handlers());
    EXPECT_EQ(out.Wait().code(), StatusCode::kInvalidArgument);
  }
}

// A server that answers the first request and, on the second, closes every connection (and its
// listener) without answering: a POST that reached the server and got no byte back.
class FlakyKeepAliveServer {
 public:
  explicit FlakyKeepAliveServer(boost::asio::io_context& io) {
    auto s = Server::Start(io, ServerOptions{.listen = "127.0.0.1:0"},
                           [this](Request, std::shared_ptr<Responder> r) {
                             int n = count_++;
                             if (n == 1) {
                               // Drop the connection with the request unanswered.
                               server_->Close();
                               return;
                             }
                             r->Respond(200, {}, "ok" + std::to_string(n));
                           });
    server_ = std::move(s).value();
  }
  uint16_t port() const { return server_->port(); }

 private:
  std::atomic<int> count_{0};
  std::unique_ptr<Server> server_;
};

// A raw listener gives precise control: connection 1 serves one response, then swallows the
// next request and closes (a server closing an idle keep-alive connection as it is reused);
// connection 2 serves normally.
class DropsSecondRequestPeer {
 public:
  explicit DropsSecondRequestPeer(boost::asio::io_context& io)
      : acceptor_(io, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this] {
      auto s1 = acceptor_.accept();
      Serve(s1, 1);
      s1.close();
      auto s2 = acceptor_.accept();
      Serve(s2, 100);
    });
  }
  ~DropsSecondRequestPeer() { thread_.join(); }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  // Answers `requests_to_answer` requests (heads only; bodies are empty), then returns on the next.
  static void Serve(boost::asio::ip::tcp::socket& s, int requests_to_answer) {
    std::string data;
    char buf[4096];
    for (int answered = 0;;) {
      boost::system::error_code ec;
      size_t n = s.read_some(boost::asio::buffer(buf), ec);
      if (ec) return;
      data.append(buf, n);
      size_t end;
      while ((end = data.find("\r\n\r\n")) != std::string::npos) {
        data.erase(0, end + 4);
        if (answered == requests_to_answer) return;  // swallow it and close
        answered++;
        std::string resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        boost::asio::write(s, boost::asio::buffer(resp), ec);
      }
    }
  }

  boost::asio::ip::tcp::acceptor acceptor_;
  std::thread thread_;
};

// A raw listener that answers one request with `response`, written in one piece, then closes.
class OneResponsePeer {
 public:
  OneResponsePeer(boost::asio::io_context& io, std::string response)
      : acceptor_(io, {boost::asio::ip::make_address("127.0.0.1"), 0}),
        response_(std::move(response)) {
    thread_ = std::thread([this] {
      auto s = acceptor_.accept();
      std::string data;
      char buf[4096];
      boost::system::error_code ec;
      while (data.find("\r\n\r\n") == std::string::npos) {
        const size_t n = s.read_some(boost::asio::buffer(buf), ec);
        if (ec) return;
        data.append(buf, n);
      }
      boost::asio::write(s, boost::asio::buffer(response_), ec);
      s.shutdown(boost::asio::ip::tcp::socket::shutdown_send, ec);
      // Wait for the client to close, so the response is not cut by a reset.
      while (!ec) s.read_some(boost::asio::buffer(buf), ec);
    });
  }
  ~OneResponsePeer() { thread_.join(); }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  boost::asio::ip::tcp::acceptor acceptor_;
  std::string response_;
  std::thread thread_;
};

TEST_F(ClientTest, ChunksOfOneReadAreDeliveredTogether) {
  std::string response = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  std::string expected;
  for (int i = 0; i < 20; ++i) {
    const std::string piece = "data: event " + std::to_string(i) + "\n\n";
    char size[16];
    std::snprintf(size, sizeof(size), "%zx\r\n", piece.size());
    response += size + piece + "\r\n";
    expected += piece;
  }
  response += "0\r\n\r\n";
  OneResponsePeer peer(io_.io(), response);
  Outcome out;
  client_->Send(Get(peer.port(), "/s"), out.Handlers());
  ASSERT_TRUE(out.Wait().ok());
  EXPECT_EQ(out.body, expected);
  // One write of ~400 bytes arrives in one read or a few: far fewer calls than chunks.
  EXPECT_LT(out.pieces.size(), 5u);
  client_.reset();
}

TEST_F(ClientTest, BodyBeforeAMalformedChunkIsDeliveredBeforeTheError) {
  OneResponsePeer peer(io_.io(),
                       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                       "5\r\nhello\r\nZZ\r\nnot a chunk\r\n");
  Outcome out;
  client_->Send(Get(peer.port(), "/s"), out.Handlers());
  const Status st = out.Wait();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("malformed response"), std::string::npos) << st.ToString();
  std::lock_guard lock(out.mu);
  EXPECT_EQ(out.body, "hello");
  client_.reset();
}

TEST_F(ClientTest, IdempotentRequestIsRetriedWhenAReusedConnectionDies) {
  DropsSecondRequestPeer peer(io_.io());
  Outcome a;
  client_->Send(Get(peer.port(), "/a"), a.Handlers());
  ASSERT_TRUE(a.Wait().ok());
  Outcome b;
  client_->Send(Get(peer.port(), "/b"), b.Handlers());
  Status st = b.Wait();
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(b.body, "ok");
  EXPECT_EQ(client_->stats().retries, 1u);
  EXPECT_EQ(client_->stats().connections_opened, 2u);
  client_.reset();
}

TEST_F(ClientTest, ReplayablePostIsRetriedWhenAReusedConnectionDies) {
  DropsSecondRequestPeer peer(io_.io());
  auto req = Get(peer.port(), "/v1/completions");
  req.method = "POST";
  req.replayable = true;
  Outcome a;
  client_->Send(req, a.Handlers());
  ASSERT_TRUE(a.Wait().ok());
  Outcome b;
  client_->Send(req, b.Handlers());
  Status st = b.Wait();
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(b.body, "ok");
  EXPECT_EQ(client_->stats().connections_reused, 1u);
  EXPECT_EQ(client_->stats().retries, 1u);
  EXPECT_EQ(client_->stats().connections_opened, 2u);
  client_.reset();
}

TEST_F(ClientTest, PostIsNotReplayedAfterItWasWritten) {
  FlakyKeepAliveServer flaky(io_.io());
  Outcome a;
  auto req = Get(flaky.port(), "/a");
  req.method = "POST";
  client_->Send(req, a.Handlers());
  ASSERT_TRUE(a.Wait().ok());
  EXPECT_EQ(a.body, "ok0");
  Outcome b;
  client_->Send(req, b.Handlers());
  Status st = b.Wait();
  // The server took the request (it may have acted on it): the caller decides, not the client.
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(client_->stats().retries, 0u);
}

}  // namespace
}  // namespace hearsay::http
