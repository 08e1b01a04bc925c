#include "hearsay/http/sync_call.h"

#include <boost/asio/io_context.hpp>
#include <utility>

namespace hearsay::http {

Result<SyncResponse> CallSync(ClientRequest request, std::shared_ptr<TlsContext> tls) {
  boost::asio::io_context io;
  SyncResponse response;
  Status result;
  bool done = false;
  {
    // Declared after `io`, so destroyed before it: any request still pending is cancelled first.
    Client client(io, ClientOptions{.max_idle_per_host = 0, .one_thread = true, .tls = tls});
    ResponseHandlers handlers;
    handlers.on_headers = [&](int status, const Headers& headers) {
      response.status = status;
      response.headers = headers;
    };
    handlers.on_body = [&](std::string_view chunk) { response.body.append(chunk); };
    handlers.on_done = [&](Status status) {
      result = std::move(status);
      done = true;
    };
    client.Send(std::move(request), std::move(handlers));
    while (!done && io.run_one() > 0) {
    }
  }
  if (!done) return InternalError("http request ended without an answer");
  if (!result.ok()) return result;
  return response;
}

namespace {

ClientRequest WithTimeout(ClientRequest request, Duration timeout) {
  request.connect_timeout = timeout;
  request.response_timeout = timeout;
  request.idle_timeout = timeout;
  return request;
}

}  // namespace

Result<SyncResponse> GetSync(const std::string& host_port, const std::string& target,
                             Duration timeout, std::shared_ptr<TlsContext> tls) {
  ClientRequest request;
  request.method = "GET";
  request.host_port = host_port;
  request.target = target;
  return CallSync(WithTimeout(std::move(request), timeout), std::move(tls));
}

Result<SyncResponse> PostJsonSync(const std::string& host_port, const std::string& target,
                                  std::string json, Duration timeout) {
  ClientRequest request;
  request.method = "POST";
  request.host_port = host_port;
  request.target = target;
  request.headers = {{"Content-Type", "application/json"}};
  request.body = std::move(json);
  return CallSync(WithTimeout(std::move(request), timeout));
}

}  // namespace hearsay::http
