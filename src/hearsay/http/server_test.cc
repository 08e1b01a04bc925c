// http::Server over real loopback sockets: framing, keep-alive, streaming, limits, timeouts.
#include "hearsay/http/server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>

#include "hearsay/http/test_util.h"
#include "hearsay/testutil/eventually.h"

namespace hearsay::http {
namespace {

using testing::IoThread;
using testing::RawClient;
using testing::Ready;
using testutil::Eventually;
using namespace std::chrono_literals;

ServerOptions LocalOptions() {
  ServerOptions o;
  o.listen = "127.0.0.1:0";
  return o;
}

// Answers every request with its method, path and body.
Handler EchoHandler() {
  return [](Request req, std::shared_ptr<Responder> r) {
    r->Respond(200, {{"Content-Type", "text/plain"}}, req.method + " " + req.path + " " + req.body);
  };
}

class ServerTest : public ::testing::Test {
 protected:
  void StartServer(ServerOptions options, Handler handler) {
    auto s = Server::Start(io_.io(), std::move(options), std::move(handler));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s).value();
  }
  void TearDown() override {
    if (server_) server_->Close();
    io_.Stop();
  }

  IoThread io_;
  std::unique_ptr<Server> server_;
};

TEST_F(ServerTest, AnswersOneRequestAndHandsOverItsFields) {
  std::promise<Request> seen;
  StartServer(LocalOptions(), [&](Request req, std::shared_ptr<Responder> r) {
    seen.set_value(req);
    r->Respond(201, {{"X-Test", "yes"}}, "hello");
  });
  ASSERT_NE(server_->port(), 0);
  RawClient c(server_->port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(
      c.Send("POST /v1/things?x=1 HTTP/1.1\r\nHost: a\r\nX-Mixed-Case: Val\r\n"
             "Content-Length: 3\r\n\r\nabc"));
  std::string response = c.ReadResponse();
  EXPECT_EQ(response.rfind("HTTP/1.1 201 Created\r\n", 0), 0u) << response;
  EXPECT_NE(response.find("X-Test: yes\r\n"), std::string::npos);
  EXPECT_NE(response.find("Content-Length: 5\r\n"), std::string::npos);
  EXPECT_TRUE(response.ends_with("\r\n\r\nhello"));
  auto f = seen.get_future();
  ASSERT_TRUE(Ready(f));
  Request req = f.get();
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.target, "/v1/things?x=1");
  EXPECT_EQ(req.path, "/v1/things");
  EXPECT_EQ(req.body, "abc");
  EXPECT_EQ(req.Header("x-mixed-case"), "Val");
  EXPECT_EQ(req.Header("host"), "a");
  EXPECT_FALSE(req.Header("X-Mixed-Case").has_value()) << "lookups take lowercase names";
  EXPECT_TRUE(req.remote.starts_with("127.0.0.1:"));
}

TEST_F(ServerTest, KeepAliveServesManyRequestsOnOneConnection) {
  StartServer(LocalOptions(), EchoHandler());
  RawClient c(server_->port());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.Send("GET /r" + std::to_string(i) + " HTTP/1.1\r\nHost: a\r\n\r\n"));
    std::string response = c.ReadResponse();
    EXPECT_TRUE(response.ends_with("GET /r" + std::to_string(i) + " ")) << response;
    EXPECT_EQ(response.find("Connection: close"), std::string::npos);
  }
  EXPECT_EQ(server_->stats().connections_accepted, 1u);
  EXPECT_EQ(server_->stats().requests, 3u);
}

TEST_F(ServerTest, PipelinedRequestsAreAnsweredInOrder) {
  StartServer(LocalOptions(), EchoHandler());
  RawClient c(server_->port());
  ASSERT_TRUE(
      c.Send("POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\n1"
             "POST /b HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\n2"
             "GET /c HTTP/1.1\r\nHost: t\r\n\r\n"));
  EXPECT_TRUE(c.ReadResponse().ends_with("POST /a 1"));
  EXPECT_TRUE(c.ReadResponse().ends_with("POST /b 2"));
  EXPECT_TRUE(c.ReadResponse().ends_with("GET /c "));
  EXPECT_EQ(server_->stats().requests, 3u);
}

TEST_F(ServerTest, ConnectionCloseIsHonoured) {
  StartServer(LocalOptions(), EchoHandler());
  RawClient c(server_->port());
  ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
  ASSERT_TRUE(c.ReadUntilClosed());
  EXPECT_NE(c.data().find("Connection: close\r\n"), std::string::npos);
  EXPECT_TRUE(c.data().ends_with("GET / "));
}

TEST_F(ServerTest, Http10ClosesUnlessKeepAliveAsked) {
  StartServer(LocalOptions(), EchoHandler());
  RawClient c(server_->port());
  ASSERT_TRUE(c.Send("GET / HTTP/1.0\r\n\r\n"));
  EXPECT_TRUE(c.ReadUntilClosed());
  EXPECT_TRUE(c.data().ends_with("GET / "));
}

TEST_F(ServerTest, StreamedChunksArriveBeforeTheNextIsWritten) {
  std::promise<std::shared_ptr<Responder>> got;
  StartServer(LocalOptions(), [&](Request, std::shared_ptr<Responder> r) {
    r->StartStream(200, {{"Content-Type", "text/event-stream"}});
    r->Write("data: one\n\n");
    got.set_value(r);
  });
  RawClient c(server_->port());
  ASSERT_TRUE(c.Send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto f = got.get_future();
  ASSERT_TRUE(Ready(f));
  auto responder = f.get();
  // Chunk one is on the wire while chunk two does not exist yet.
  ASSERT_TRUE(c.ReadUntil("data: one\n\n\r\n"));
  EXPECT_NE(c.data().find("Transfer-Encoding: chunked\r\n"), std::string::npos);
  EXPECT_NE(c.data().find("\r\nb\r\ndata: one\n\n\r\n"), std::string::npos);
  EXPECT_EQ(c.data().find("two"), std::string::npos);
  responder->Write("data: two\n\n");
  responder->Write("");  // skipped: an empty chunk would end the stream
  responder->End();
  ASSERT_TRUE(c.ReadUntil("0\r\n\r\n"));
  EXPECT_TRUE(c.data().ends_with("b\r\ndata: two\n\n\r\n0\r\n\r\n"));
  // The connection is still usable.
  responder->Write("late");  // ignored after End
  EXPECT_FALSE(responder->closed());
}

// Writes made while the connection's strand is busy (here: inside the handler, which runs on it)
// go out together, as one chunk, in order; a later write is its own chunk.
TEST_F(ServerTest, WritesInOneBurstGoOutAsOneChunk) {
  std::promise<std::shared_ptr<Responder>> got;
  StartServer(LocalOptions(), [&](Request, std::shared_ptr<Responder> r) {
    r->StartStream(200, {});
    r->Write("ab");
    r->Write("cd");
    r->Write("");
    r->Write("ef");
    got.set_value(r);
  });
  RawClient c(server_->port());
  ASSERT_TRUE(c.Send("GET /burst HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto f = got.get_future();
  ASSERT_TRUE(Ready(f));
  auto responder = f.get();
  ASSERT_TRUE(c.ReadUntil("abcdef\r\n"));
  EXPECT_NE(c.data().find("\r\n6\r\nabcdef\r\n"), std::string::npos) << c.data();
  responder->Write("gh");
  responder->End();
  ASSERT_TRUE(c.ReadUntil("0\r\n\r\n"));
  EXPECT_TRUE(c.data().ends_with("6\r\nabcdef\r\n2\r\ngh\r\n0\r\n\r\n")) << c.data();
}

TEST_F(ServerTest, BodyOverLimitGets413BeforeTheBodyIsRead) {
  ServerOptions o = LocalOptions();
  o.max_body_bytes = 1000;
  std::atomic<int> handled{0};
  StartServer(o, [&](Request, std::shared_ptr<Responder> r) {
    handled++;
    r->Respond(200, {}, "");
  });
  RawClient c(server_->port());
  // The body is never sent: the answer must come from the Content-Length alone.
  ASSERT_TRUE(c.Send("POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n"));
  ASSERT_TRUE(c.ReadUntilClosed());
  EXPECT_EQ(c.data().rfind("HTTP/1.1 413 ", 0), 0u) << c.data();
  EXPECT_NE(c.data().find("\"error\""), std::string::npos);
  EXPECT_NE(c.data().find("1000 bytes"), std::string::npos);
  EXPECT_EQ(handled.load(), 0);
  EXPECT_EQ(server_->stats().body_too_large, 1u);
}

TEST_F(ServerTest, ChunkedBodyOverLimitGets413) {
  ServerOptions o = LocalOptions();
  o.max_body_bytes = 100;
  StartServer(o, EchoHandler());
  RawClient c(server_->port());
  std::string chunk(80, 'x');
  ASSERT_TRUE(c.Send("POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n50\r\n" +
                     chunk + "\r\n50\r\n" + chunk + "\r\n0\r\n\r\n"));
  ASSERT_TRUE(c.ReadUntilClosed());
  EXPECT_EQ(c.data().rfind("HTTP/1.1 413 ", 0), 0u) << c.data();
}

TEST_F(ServerTest, ChunkedBodyWithinLimitIsAssembled) {
  StartServer(LocalOptions(), EchoHandler());
  RawClient c(server_->port());
  ASSERT_TRUE(c.Send(
      "POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n"
      "0\r\n\r\n"));
  EXPECT_TRUE(c.ReadResponse().ends_with("POST /x abcde"));
}

TEST_F(ServerTest, HeaderOverLimitGets431) {
  ServerOptions o = LocalOptions();
  o.max_header_bytes = 1024;
  StartServer(o, EchoHandler());
  RawClient c(server_->port());
  ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(2000, 'a') + "\r\n\r\n"));
  ASSERT_TRUE(c.ReadUntilClosed());
  EXPECT_EQ(c.data().rfind("HTTP/1.1 431 ", 0), 0u) << c.data();
  EXPECT_NE(c.data().find("request_header_too_large"), std::string::npos);
  EXPECT_EQ(server_->stats().header_too_large, 1u);
}

TEST_F(ServerTest, MalformedRequestsGet400AndTheServerStaysUp) {
  StartServer(LocalOptions(), EchoHandler());
  for (std::string bad :
       {"GARBAGE\r\n\r\n", "GET / HTTP/1.1\r\nHost: t\r\nNo colon here\r\n\r\n",
        "GET / HTTP/9.9\r\n\r\n", "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 12x\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        // Conflicting framing (the request-smuggling shape).
        "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: "
        "chunked\r\n\r\n0\r\n\r\n"}) {
    RawClient c(server_->port());
    ASSERT_TRUE(c.Send(bad));
    ASSERT_TRUE(c.ReadUntilClosed()) << bad;
    EXPECT_EQ(c.data().rfind("HTTP/1.1 400 ", 0), 0u) << bad << " -> " << c.data();
    EXPECT_NE(c.data().find("\"invalid_request_error\""), std::string::npos);
  }
  RawClient ok(server_->port());
  ASSERT_TRUE(ok.Send("GET /fine HTTP/1.1\r\nHost: t\r\n\r\n"));
  EXPECT_TRUE(ok.ReadResponse().ends_with("GET /fine "));
  EXPECT_EQ(server_->stats().bad_requests, 6u);
}

TEST_F(ServerTest, SlowlorisHeaderIsCutAtTheHeaderTimeout) {
  ServerOptions o = LocalOptions();
  o.header_timeout = 300ms;
  StartServer(o, EchoHandler());
  RawClient c(server_->port());
  ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nHost: t\r\n"));
  // One byte every 50 ms: progress never stops, but the deadline holds.
  bool cut = false;
  for (int i = 0; i < 60 && !cut; ++i) {
    std::this_thread::sleep_for(50ms);
    cut = !c.Send("X");
  }
  c.SetTimeout(2000ms);
  c.ReadUntilClosed();
  EXPECT_TRUE(cut) << "the connection outlived 3 s of trickled header bytes";
  EXPECT_EQ(c.data().rfind("HTTP/1.1 408 ", 0), 0u) << c.data();
  EXPECT_EQ(server_->stats().read_timeouts, 1u);
}

TEST_F(ServerTest, SlowBodyGets408) {
  ServerOptions o = LocalOptions();
  o.body_timeout = 200ms;
  StartServer(o, EchoHandler());
  RawClient c(server_->port());
  ASSERT_TRUE(c.Send("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc"));
  ASSERT_TRUE(c.ReadUntilClosed());
  EXPECT_EQ(c.data().rfind("HTTP/1.1 408 ", 0), 0u) << c.data();
}

TEST_F(ServerTest, IdleKeepAliveConnectionIsClosed) {
  ServerOptions o = LocalOptions();
  o.idle_timeout = 200ms;
  StartServer(o, EchoHandler());
  RawClient c(server_->port());
  ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
  EXPECT_FALSE(c.ReadResponse().empty());
  EXPECT_TRUE(c.ReadUntilClosed());
  EXPECT_TRUE(c.data().empty()) << "an idle close sends nothing";
  EXPECT_EQ(server_->stats().idle_closed, 1u);
  EXPECT_TRUE(Eventually([&] { return server_->open_connections() == 0; }));
}

TEST_F(ServerTest, ConnectionsOverTheLimitGet503WhenNoneIsIdle) {
  ServerOptions o = LocalOptions();
  o.max_connections = 2;
  StartServer(o, EchoHandler());
  RawClient a(server_->port()), b(server_->port());
  // Both are accepted and busy (each in the middle of a request header).
  ASSERT_TRUE(a.Send("GET / HTTP/1.1\r\n"));
  ASSERT_TRUE(b.Send("GET / HTTP/1.1\r\n"));
  ASSERT_TRUE(Eventually([&] { return server_->stats().connections_accepted >= 2; }));
  RawClient c(server_->port());
  ASSERT_TRUE(c.ReadUntilClosed());
  EXPECT_EQ(c.data().rfind("HTTP/1.1 503 ", 0), 0u) << c.data();
  EXPECT_NE(c.data().find("Retry-After: 1"), std::string::npos);
  EXPECT_EQ(server_->stats().connections_refused, 1u);
  // A freed slot is usable again.
  a.Close();
  ASSERT_TRUE(Eventually([&] { return server_->open_connections() <= 1; }));
  RawClient d(server_->port());
  ASSERT_TRUE(d.Send("GET /d HTTP/1.1\r\nHost: t\r\n\r\n"));
  EXPECT_TRUE(d.ReadResponse().ends_with("GET /d "));
}

// The attack: keep-alive connections that each sent one request and then idle, up to the cap.
// New clients still get in: the oldest idle connection is closed for each.
TEST_F(ServerTest, IdleKeepAliveConnectionsAtTheCapMakeRoomForNewClients) {
  ServerOptions o = LocalOptions();
  o.max_connections = 20;
  StartServer(o, EchoHandler());
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 20; ++i) {
    idle.push_back(std::make_unique<RawClient>(server_->port()));
    ASSERT_TRUE(idle.back()->Send("GET /idle HTTP/1.1\r\nHost: t\r\n\r\n"));
    ASSERT_FALSE(idle.back()->ReadResponse().empty());
  }
  std::vector<std::unique_ptr<RawClient>> fresh;  // kept open: each new one needs room
  for (int i = 0; i < 10; ++i) {
    fresh.push_back(std::make_unique<RawClient>(server_->port()));
    ASSERT_TRUE(fresh.back()->Send("GET /new HTTP/1.1\r\nHost: t\r\n\r\n"));
    EXPECT_TRUE(fresh.back()->ReadResponse().ends_with("GET /new ")) << i;
  }
  EXPECT_EQ(server_->stats().connections_refused, 0u);
  EXPECT_GE(server_->stats().idle_evicted, 10u);
  // The oldest idle connection was the first closed.
  EXPECT_TRUE(idle.front()->ReadUntilClosed());
}

TEST_F(ServerTest, ConnectionsPerClientAddressAreCapped) {
  ServerOptions o = LocalOptions();
  o.max_connections_per_client = 2;
  StartServer(o, EchoHandler());
  RawClient a(server_->port()), b(server_->port());
  ASSERT_TRUE(a.Send("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_FALSE(a.ReadResponse().empty());
  ASSERT_TRUE(b.Send("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_FALSE(b.ReadResponse().empty());
  RawClient c(server_->port());
  ASSERT_TRUE(c.ReadUntilClosed());
  EXPECT_EQ(c.data().rfind("HTTP/1.1 503 ", 0), 0u) << c.data();
  EXPECT_EQ(server_->stats().idle_evicted, 0u);
}

TEST_F(ServerTest, IdleTimeoutIsShorterUnderPressure) {
  ServerOptions o = LocalOptions();
  o.max_connections = 4;
  o.idle_timeout = 1h;
  o.idle_timeout_under_pressure = 50ms;
  StartServer(o, EchoHandler());
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(std::make_unique<RawClient>(server_->port()));
    ASSERT_TRUE(clients.back()->Send("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
    ASSERT_FALSE(clients.back()->ReadResponse().empty());
  }
  // 3 of 4 open: each went idle under pressure, so the short timeout closes them all.
  EXPECT_TRUE(clients.back()->ReadUntilClosed());
  EXPECT_GE(server_->stats().idle_closed, 1u);
}

TEST_F(ServerTest, HeaderFoldingAndMissingHostAre400) {
  StartServer(LocalOptions(), EchoHandler());
  for (const char* bad :
       {"GET / HTTP/1.1\r\nHost: t\r\nX-A: b\r\n c\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: t\r\nX-A: b\r\n\tc\r\n\r\n", "GET / HTTP/1.1\r\nX-A: b\r\n\r\n"}) {
    RawClient c(server_->port());
    ASSERT_TRUE(c.Send(bad));
    ASSERT_TRUE(c.ReadUntilClosed());
    EXPECT_EQ(c.data().rfind("HTTP/1.1 400 ", 0), 0u) << bad << " -> " << c.data();
  }
  // HTTP/1.0 needs no Host.
  RawClient ok(server_->port());
  ASSERT_TRUE(ok.Send("GET /old HTTP/1.0\r\n\r\n"));
  ASSERT_TRUE(ok.ReadUntilClosed());
  EXPECT_NE(ok.data().find(" 200 "), std::string::npos) << ok.data();
}

TEST_F(ServerTest, OnCloseFiresWhenTheClientLeavesMidStream) {
  std::promise<std::shared_ptr<Responder>> got;
  std::promise<void> closed;
  StartServer(LocalOptions(), [&](Request, std::shared_ptr<Responder> r) {
    r->OnClose([&] { closed.set_value(); });
    r->StartStream(200, {});
    r->Write("first");
    got.set_value(r);
  });
  RawClient c(server_->port());
  ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(c.ReadUntil("first"));
  c.Close();
  auto f = closed.get_future();
  ASSERT_TRUE(Ready(f));
  auto responder = got.get_future().get();
  EXPECT_TRUE(responder->closed());
  responder->Write("after close");  // ignored, no crash
  responder->End();
  EXPECT_EQ(server_->stats().client_aborts, 1u);
  // A callback registered after the close runs too.
  std::promise<void> late;
  responder->OnClose([&] { late.set_value(); });
  auto lf = late.get_future();
  EXPECT_TRUE(Ready(lf));
}

TEST_F(ServerTest, OnCloseDoesNotFireForACompletedResponse) {
  std::atomic<int> fired{0};
  StartServer(LocalOptions(), [&](Request, std::shared_ptr<Responder> r) {
    r->OnClose([&] { fired++; });
    r->Respond(200, {}, "ok");
  });
  {
    RawClient c(server_->port());
    ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
    ASSERT_FALSE(c.ReadResponse().empty());
  }
  EXPECT_TRUE(Eventually([&] { return server_->open_connections() == 0; }));
  ASSERT_TRUE(io_.Drain());
  EXPECT_EQ(fired.load(), 0);
}

TEST_F(ServerTest, ClientThatStopsReadingIsDropped) {
  ServerOptions o = LocalOptions();
  o.max_write_queue_bytes = 256 * 1024;
  o.write_timeout = 10s;
  std::promise<std::shared_ptr<Responder>> got;
  std::promise<void> closed;
  StartServer(o, [&](Request, std::shared_ptr<Responder> r) {
    r->OnClose([&] { closed.set_value(); });
    r->StartStream(200, {});
    got.set_value(r);
  });
  RawClient c(server_->port(), /*rcvbuf=*/4096);
  ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto f = got.get_future();
  ASSERT_TRUE(Ready(f));
  auto responder = f.get();
  std::string chunk(64 * 1024, 'z');
  // The client reads nothing: kernel buffers fill, then the queue passes its cap.
  for (int i = 0; i < 4000 && !responder->closed(); ++i) {
    responder->Write(chunk);
    // Let the connection's strand take what was written (and close) before writing more.
    if (i % 16 == 15) {
      ASSERT_TRUE(io_.Drain());
    }
  }
  auto cf = closed.get_future();
  ASSERT_TRUE(Ready(cf));
  EXPECT_EQ(server_->stats().slow_readers_dropped, 1u);
}

TEST_F(ServerTest, WriteThatMakesNoProgressTimesOut) {
  ServerOptions o = LocalOptions();
  o.write_timeout = 300ms;
  std::promise<void> closed;
  StartServer(o, [&](Request, std::shared_ptr<Responder> r) {
    r->OnClose([&] { closed.set_value(); });
    // Far more than the socket buffers hold, queued at once (under the queue cap).
    r->Respond(200, {}, std::string(6 << 20, 'q'));
  });
  RawClient c(server_->port(), /*rcvbuf=*/4096);
  ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto cf = closed.get_future();
  ASSERT_TRUE(Ready(cf));
  EXPECT_EQ(server_->stats().slow_readers_dropped, 1u);
}

TEST_F(ServerTest, CloseCutsOpenStreams) {
  std::promise<void> closed, started;
  testing::ResponderKeeper keeper;
  StartServer(LocalOptions(), [&](Request, std::shared_ptr<Responder> r) {
    r->OnClose([&] { closed.set_value(); });
    r->StartStream(200, {});
    keeper.Keep(std::move(r));
    started.set_value();
  });
  RawClient c(server_->port());
  ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto sf = started.get_future();
  ASSERT_TRUE(Ready(sf));
  server_->Close();
  auto cf = closed.get_future();
  ASSERT_TRUE(Ready(cf));
  EXPECT_TRUE(c.ReadUntilClosed());
}

TEST_F(ServerTest, HandlerThatDropsTheResponderUnansweredGets500) {
  StartServer(LocalOptions(), [](Request req, std::shared_ptr<Responder> r) {
    if (req.path == "/stream") {
      r->StartStream(200, {});
      r->Write("begun");
    }
    // r is dropped here without an answer (or with an unfinished stream).
  });
  RawClient a(server_->port());
  ASSERT_TRUE(a.Send("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(a.ReadUntilClosed());
  EXPECT_EQ(a.data().rfind("HTTP/1.1 500 ", 0), 0u) << a.data();
  RawClient b(server_->port());
  ASSERT_TRUE(b.Send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(b.ReadUntilClosed());
  EXPECT_NE(b.data().find("begun"), std::string::npos);
  EXPECT_EQ(b.data().find("0\r\n\r\n"), std::string::npos) << "the stream is cut, not ended";
}

TEST_F(ServerTest, StopAcceptingDrainsKeepAliveConnections) {
  std::promise<std::shared_ptr<Responder>> got;
  StartServer(LocalOptions(), [&](Request req, std::shared_ptr<Responder> r) {
    if (req.path == "/slow") return got.set_value(std::move(r));
    r->Respond(200, {}, "ok");
  });
  RawClient idle(server_->port()), busy(server_->port());
  ASSERT_TRUE(idle.Send("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_FALSE(idle.ReadResponse().empty());
  ASSERT_TRUE(busy.Send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto f = got.get_future();
  ASSERT_TRUE(Ready(f));
  auto responder = f.get();
  server_->StopAccepting();
  // The idle keep-alive connection is closed at once.
  EXPECT_TRUE(idle.ReadUntilClosed());
  EXPECT_TRUE(idle.data().empty());
  // The in-flight request is answered, told the connection ends, and then it does.
  responder->Respond(200, {}, "late");
  EXPECT_TRUE(busy.ReadUntilClosed());
  EXPECT_NE(busy.data().find("Connection: close\r\n"), std::string::npos);
  EXPECT_TRUE(busy.data().ends_with("late"));
  // No new connection is served.
  RawClient fresh(server_->port());
  EXPECT_TRUE(!fresh.connected() || !fresh.Send("GET / HTTP/1.1\r\nHost: t\r\n\r\n") ||
              fresh.ReadUntilClosed());
  EXPECT_EQ(server_->stats().requests, 2u);
}

TEST_F(ServerTest, ExpectContinueGetsTheGoAhead) {
  StartServer(LocalOptions(), EchoHandler());
  RawClient c(server_->port());
  ASSERT_TRUE(
      c.Send("POST /e HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"));
  ASSERT_TRUE(c.ReadUntil("HTTP/1.1 100 Continue\r\n\r\n"));
  ASSERT_TRUE(c.Send("hi"));
  ASSERT_TRUE(c.ReadUntil("POST /e hi"));
}

TEST(ServerStartTest, RejectsBadListenAddresses) {
  IoThread io;
  for (std::string bad : {"nope", "127.0.0.1:99999", "127.0.0.1:", ":80", "::1:80"}) {
    ServerOptions o;
    o.listen = bad;
    auto s = Server::Start(io.io(), o, EchoHandler());
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(ServerStartTest, PortInUseIsUnavailable) {
  IoThread io;
  auto a = Server::Start(io.io(), LocalOptions(), EchoHandler());
  ASSERT_TRUE(a.ok());
  ServerOptions o;
  o.listen = "127.0.0.1:" + std::to_string((*a)->port());
  auto b = Server::Start(io.io(), o, EchoHandler());
  EXPECT_EQ(b.status().code(), StatusCode::kUnavailable);
  (*a)->Close();
}

}  // namespace
}  // namespace hearsay::http
