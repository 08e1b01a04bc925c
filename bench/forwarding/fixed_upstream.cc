// hearsay_fixed_upstream: an OpenAI-compatible server that answers every completion at once with
// the same canned body (fixed_response.h). It is the upstream of the forwarding benchmark
// (scripts/bench-forwarding.sh): wrk drives it directly, through nginx and through a hearsay
// node, and the differences are the proxies' costs.
//
//   POST /v1/completions, POST /v1/chat/completions   the canned JSON, or SSE with "stream": true
//   GET /health                                        200 (hearsay's openai engine probes it)
//
// Prints "listening http=HOST:PORT" on stdout once bound (--listen with port 0 picks a free
// port), then serves until SIGTERM or SIGINT. Exit status 2: bad flags; 1: could not bind.
// Threads: --threads run the one io_context (http::Server is safe with any number).
#include <signal.h>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fixed_response.h"
#include "hearsay/http/error_body.h"
#include "hearsay/http/server.h"

namespace {

using hearsay::bench::FixedRequest;
using hearsay::bench::FixedResponses;
namespace http = hearsay::http;

void Answer(const FixedResponses& responses, http::Request req,
            const std::shared_ptr<http::Responder>& res) {
  const http::Headers json_type = {{"Content-Type", "application/json"}};
  const bool completions = req.path == "/v1/completions";
  const bool chat = req.path == "/v1/chat/completions";
  if (req.method == "GET" && req.path == "/health") {
    res->Respond(200, json_type, R"({"status":"ok"})");
    return;
  }
  if (!completions && !chat) {
    res->Respond(404, json_type,
                 http::ErrorBody(404, "no route for " + req.method + " " + req.path));
    return;
  }
  if (req.method != "POST") {
    res->Respond(405, json_type, http::ErrorBody(405, req.path + " takes POST"));
    return;
  }
  hearsay::Result<FixedRequest> parsed = hearsay::bench::ParseFixedRequest(req.body, chat);
  if (!parsed.ok()) {
    res->Respond(400, json_type, http::ErrorBody(400, parsed.status().message()));
    return;
  }
  if (!parsed->stream) {
    res->Respond(200, json_type, responses.Body(chat));
    return;
  }
  res->StartStream(200, {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}});
  // One write per event, as an engine emits one token at a time.
  for (std::string_view event : responses.Stream(chat, parsed->include_usage)) {
    res->Write(std::string(event));
  }
  res->End();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Fixed-response OpenAI upstream for the forwarding benchmark"};
  std::string listen = "127.0.0.1:0";
  unsigned threads = 1;
  hearsay::bench::FixedResponseOptions options;
  app.add_option("--listen", listen, "host:port to listen on (port 0: a free port)");
  app.add_option("--threads", threads, "threads running the server")->check(CLI::Range(1, 64));
  app.add_option("--completion-tokens", options.completion_tokens,
                 "output pieces per answer (SSE events when streaming)")
      ->check(CLI::Range(1, 100000));
  app.add_option("--prompt-tokens", options.prompt_tokens, "usage.prompt_tokens reported");
  app.add_option("--cached-tokens", options.cached_tokens,
                 "usage.prompt_tokens_details.cached_tokens reported");
  CLI11_PARSE(app, argc, argv);

  hearsay::Result<FixedResponses> responses = FixedResponses::Create(options);
  if (!responses.ok()) {
    std::fprintf(stderr, "hearsay_fixed_upstream: %s\n", responses.status().message().c_str());
    return 2;
  }
  auto shared = std::make_shared<const FixedResponses>(std::move(responses).value());

  boost::asio::io_context io;
  http::ServerOptions server_options;
  server_options.listen = listen;
  server_options.max_connections = 4096;
  auto server = http::Server::Start(
      io, server_options, [shared](http::Request req, std::shared_ptr<http::Responder> res) {
        Answer(*shared, std::move(req), res);
      });
  if (!server.ok()) {
    std::fprintf(stderr, "hearsay_fixed_upstream: %s\n", server.status().ToString().c_str());
    return 1;
  }
  const std::string host = listen.substr(0, listen.rfind(':'));
  std::printf("listening http=%s:%u\n", host.c_str(), (*server)->port());
  std::fflush(stdout);

  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code&, int) {
    (*server)->Close();
    io.stop();
  });
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i) pool.emplace_back([&io] { io.run(); });
  io.run();
  for (std::thread& t : pool) t.join();
  server->reset();
  return 0;
}
