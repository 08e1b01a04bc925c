#include "hearsay/loadgen/completion_calls.h"

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <optional>

#include "hearsay/http/client.h"
#include "hearsay/loadgen/openai_body.h"
#include "hearsay/loadgen/stream_recorder.h"

namespace hearsay::loadgen {

std::vector<RequestResult> CallAll(const std::vector<CompletionCall>& calls,
                                   const std::string& api_key, Duration timeout) {
  boost::asio::io_context io;
  http::Client client(io);
  const auto start = std::chrono::steady_clock::now();
  auto now = [start] { return Duration(std::chrono::steady_clock::now() - start); };
  std::vector<std::optional<RequestResult>> results(calls.size());
  size_t done = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    http::ClientRequest request;
    request.method = "POST";
    request.host_port = calls[i].host_port;
    request.target = std::string(ApiPath(ApiKind::kCompletions));
    request.headers = {{"Content-Type", "application/json"}, {"Accept", "text/event-stream"}};
    if (!api_key.empty()) request.headers.emplace_back("Authorization", "Bearer " + api_key);
    request.body = calls[i].body;
    request.connect_timeout = request.response_timeout = request.idle_timeout = timeout;
    const Duration sent = now();
    auto recorder = std::make_shared<StreamRecorder>(i, 0, Duration(0));
    http::ResponseHandlers handlers;
    handlers.on_headers = [recorder](int status, const http::Headers& headers) {
      const std::optional<std::string_view> type = http::FindHeader(headers, "content-type");
      recorder->OnHeaders(status, type && type->starts_with("application/json"));
    };
    handlers.on_body = [recorder, now, sent](std::string_view c) {
      recorder->OnBody(c, now() - sent);
    };
    handlers.on_done = [recorder, now, sent, &results, &done, i](Status s) {
      results[i] = recorder->Finish(s, now() - sent);
      ++done;
    };
    client.Send(std::move(request), std::move(handlers));
  }
  while (done < calls.size() && io.run_one() > 0) {
  }
  std::vector<RequestResult> out(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    if (results[i]) {
      out[i] = std::move(*results[i]);
    } else {
      out[i].error = ErrorKind::kConnect;
      out[i].error_message = "the request never ended";
    }
  }
  return out;
}

}  // namespace hearsay::loadgen
