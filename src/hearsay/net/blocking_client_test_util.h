// BlockingClient: blocking HTTP calls through http::Client on its own I/O thread, for tests of
// the daemon over real loopback sockets. Each call waits (bounded) for the whole answer.
//
// Thread-safety: one test thread at a time.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "hearsay/http/client.h"
#include "hearsay/http/test_util.h"

namespace hearsay::net::testing {

struct BlockingResponse {
  int status = 0;
  http::Headers headers;
  std::string body;
  // How the call ended (OK after the whole body).
  Status done;
  // From the send to the end of the answer.
  std::chrono::steady_clock::duration elapsed{};

  std::optional<std::string> Header(std::string_view name) const {
    auto v = http::FindHeader(headers, name);
    return v ? std::optional<std::string>(*v) : std::nullopt;
  }
};

class BlockingClient {
 public:
  BlockingClient() : client_(io_.io()) {}

  BlockingResponse Call(const std::string& method, const std::string& host_port,
                        const std::string& target, std::string body = {},
                        http::Headers headers = {}) {
    auto r = std::make_shared<BlockingResponse>();
    auto finished = std::make_shared<std::promise<void>>();
    std::future<void> f = finished->get_future();
    http::ClientRequest req;
    req.method = method;
    req.host_port = host_port;
    req.target = target;
    req.body = std::move(body);
    req.headers = std::move(headers);
    if (!req.body.empty()) req.headers.emplace_back("content-type", "application/json");
    req.response_timeout = std::chrono::seconds(10);
    http::ResponseHandlers h;
    const auto start = std::chrono::steady_clock::now();
    h.on_headers = [r](int status, const http::Headers& hs) {
      r->status = status;
      r->headers = hs;
    };
    h.on_body = [r](std::string_view chunk) { r->body.append(chunk); };
    h.on_done = [r, finished, start](Status s) {
      r->done = std::move(s);
      r->elapsed = std::chrono::steady_clock::now() - start;
      finished->set_value();
    };
    client_.Send(std::move(req), std::move(h));
    EXPECT_EQ(f.wait_for(std::chrono::seconds(15)), std::future_status::ready)
        << method << " " << target;
    return *r;
  }
  BlockingResponse Post(const std::string& host_port, const std::string& target,
                        const nlohmann::json& body, http::Headers headers = {}) {
    return Call("POST", host_port, target, body.dump(), std::move(headers));
  }
  BlockingResponse Get(const std::string& host_port, const std::string& target) {
    return Call("GET", host_port, target);
  }

 private:
  http::testing::IoThread io_;
  http::Client client_;
};

}  // namespace hearsay::net::testing
