// http::Client at teardown: what happens to a request still in flight when its client is destroyed
// or its io_context stops. Regression tests for a leak LeakSanitizer found in CI: a caller that
// kept the request's handle in the state its handlers captured made a cycle through the exchange,
// and an io_context stopped before the request finished could never free it.
#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <future>
#include <memory>
#include <thread>

#include "hearsay/http/client.h"
#include "hearsay/http/server.h"
#include "hearsay/http/test_util.h"

namespace hearsay::http {
namespace {

using namespace std::chrono_literals;
using testing::Ready;

ClientRequest StreamRequest(uint16_t port) {
  ClientRequest r;
  r.host_port = "127.0.0.1:" + std::to_string(port);
  r.target = "/stream";
  r.connect_timeout = 2s;
  r.response_timeout = 5s;
  r.idle_timeout = 5s;
  return r;
}

// A server whose streams start and then stay open until the test lets go of the responder.
Handler HoldingStream(std::promise<std::shared_ptr<Responder>>* started) {
  return [started](Request, std::shared_ptr<Responder> r) {
    r->StartStream(200, {{"Content-Type", "text/event-stream"}});
    r->Write("data: 1\n\n");
    started->set_value(std::move(r));
  };
}

// The caller's side of a request, as the peer client and the upstream transport keep it: the
// handle lives in state that the request's own handlers capture.
struct CallerState {
  std::shared_ptr<RequestHandle> handle;
  std::promise<void> headers;
};

TEST(ClientTeardownTest, RequestCutOffByAStoppedLoopIsFreedWithTheLoop) {
  auto io = std::make_unique<boost::asio::io_context>();
  auto work = boost::asio::make_work_guard(*io);
  std::thread thread([&] { io->run(); });

  std::promise<std::shared_ptr<Responder>> started;
  auto server = Server::Start(*io, ServerOptions{.listen = "127.0.0.1:0"}, HoldingStream(&started));
  ASSERT_TRUE(server.ok());
  auto client = std::make_unique<Client>(*io);

  auto state = std::make_shared<CallerState>();
  std::weak_ptr<CallerState> watch = state;
  auto headers_seen = state->headers.get_future();
  ResponseHandlers h;
  h.on_headers = [state](int, const Headers&) { state->headers.set_value(); };
  h.on_body = [state](std::string_view) {};
  h.on_done = [state](Status) {};
  state->handle = client->Send(StreamRequest((*server)->port()), std::move(h));
  state.reset();
  ASSERT_TRUE(Ready(headers_seen));
  auto responder_future = started.get_future();
  ASSERT_TRUE(Ready(responder_future));
  std::shared_ptr<Responder> responder = responder_future.get();

  // The loop stops abruptly, as at a process's shutdown: the cancellation the client's destructor
  // posts, and the read pending on the stream, never run. The server's responder goes only after
  // the stop: dropped before, it ends the stream, and the client could read that end (and free
  // the request) before the loop stops.
  work.reset();
  io->stop();
  thread.join();
  responder.reset();  // only the loop's pending I/O refers to the stream now
  client.reset();
  server->reset();
  EXPECT_FALSE(watch.expired()) << "the pending read still holds the request";
  io.reset();
  EXPECT_TRUE(watch.expired()) << "destroying the io_context must free the unfinished request "
                                  "and everything its handlers hold";
}

TEST(ClientTeardownTest, DestroyedClientEndsItsRequestsWithAborted) {
  testing::IoThread io;
  std::promise<std::shared_ptr<Responder>> started;
  auto server =
      Server::Start(io.io(), ServerOptions{.listen = "127.0.0.1:0"}, HoldingStream(&started));
  ASSERT_TRUE(server.ok());
  auto client = std::make_unique<Client>(io.io());
  auto done = std::make_shared<std::promise<Status>>();
  auto done_future = done->get_future();
  std::promise<void> closed;
  ResponseHandlers h;
  h.on_done = [done](Status s) { done->set_value(std::move(s)); };
  client->Send(StreamRequest((*server)->port()), std::move(h));
  auto responder_future = started.get_future();
  ASSERT_TRUE(Ready(responder_future));
  std::shared_ptr<Responder> responder = responder_future.get();
  responder->OnClose([&closed] { closed.set_value(); });

  client.reset();
  ASSERT_TRUE(Ready(done_future));
  EXPECT_EQ(done_future.get().code(), StatusCode::kAborted);
  auto closed_future = closed.get_future();
  EXPECT_TRUE(Ready(closed_future)) << "the server must see the client's connection close";
  responder.reset();
  server->reset();
}

// IoThread::Stop runs what stopping left queued: a client destroyed just before the loop stopped
// still ends its requests, so no handler is dropped unrun at teardown.
TEST(ClientTeardownTest, IoThreadStopDrainsTheCancellationsOfADestroyedClient) {
  testing::IoThread io;
  std::promise<std::shared_ptr<Responder>> started;
  auto server =
      Server::Start(io.io(), ServerOptions{.listen = "127.0.0.1:0"}, HoldingStream(&started));
  ASSERT_TRUE(server.ok());
  auto client = std::make_unique<Client>(io.io());
  auto done = std::make_shared<std::promise<Status>>();
  auto done_future = done->get_future();
  ResponseHandlers h;
  h.on_done = [done](Status s) { done->set_value(std::move(s)); };
  client->Send(StreamRequest((*server)->port()), std::move(h));
  auto responder_future = started.get_future();
  ASSERT_TRUE(Ready(responder_future));
  std::shared_ptr<Responder> responder = responder_future.get();

  // Hold the loop's thread, queue the client's cancellation behind it, then stop the loop from
  // inside: the cancellation is left queued, deterministically.
  std::promise<void> entered, gate;
  auto gate_future = gate.get_future().share();
  boost::asio::post(io.io(), [&io, &entered, gate_future] {
    entered.set_value();
    gate_future.wait();
    io.io().stop();
  });
  entered.get_future().wait();
  client.reset();
  gate.set_value();
  io.Stop();
  ASSERT_EQ(done_future.wait_for(0s), std::future_status::ready)
      << "Stop() must run the cancellation that was queued when the loop stopped";
  EXPECT_EQ(done_future.get().code(), StatusCode::kAborted);
  responder.reset();
  server->reset();
}

}  // namespace
}  // namespace hearsay::http
