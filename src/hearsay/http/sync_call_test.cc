// CallSync against a real http::Server on loopback.
#include "hearsay/http/sync_call.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "hearsay/http/server.h"
#include "hearsay/http/test_util.h"

namespace hearsay::http {
namespace {

using testing::IoThread;
using namespace std::chrono_literals;

// Answers every request with its method, target and body, and an "x-seen" header.
std::unique_ptr<Server> StartEcho(IoThread& io) {
  auto server = Server::Start(
      io.io(), ServerOptions{.listen = "127.0.0.1:0"},
      [](Request request, std::shared_ptr<Responder> responder) {
        const std::string type(request.Header("content-type").value_or("-"));
        responder->Respond(201, {{"x-seen", type}},
                           request.method + " " + request.target + " " + request.body);
      });
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(server).value() : nullptr;
}

TEST(SyncCallTest, GetAndPostReturnStatusHeadersAndBody) {
  IoThread io;
  std::unique_ptr<Server> server = StartEcho(io);
  ASSERT_NE(server, nullptr);
  const std::string address = "127.0.0.1:" + std::to_string(server->port());

  Result<SyncResponse> get = GetSync(address, "/health?x=1", 5s);
  ASSERT_TRUE(get.ok()) << get.status().ToString();
  EXPECT_EQ(get->status, 201);
  EXPECT_EQ(get->body, "GET /health?x=1 ");

  Result<SyncResponse> post = PostJsonSync(address, "/admin", "{\"a\":1}", 5s);
  ASSERT_TRUE(post.ok()) << post.status().ToString();
  EXPECT_EQ(post->body, "POST /admin {\"a\":1}");
  EXPECT_EQ(post->Header("X-Seen").value_or(""), "application/json");
  server.reset();
  io.Stop();
}

TEST(SyncCallTest, NoServerIsAnError) {
  // Port 1 on loopback: nothing listens there for an unprivileged test.
  Result<SyncResponse> r = GetSync("127.0.0.1:1", "/", 5s);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
  EXPECT_FALSE(GetSync("no-port", "/", 5s).ok());
}

}  // namespace
}  // namespace hearsay::http
