// CallSync: one HTTP request made synchronously with http::Client, for command-line tools and the
// local-cluster launcher (`hearsay keys`, `hearsay demo`'s readiness probes), which wait for one
// answer and have no event loop of their own.
//
// Each call runs a private io_context and Client on the calling thread until the request ends;
// the request's own timeouts (connect, response header, body idle) bound it. The whole body is
// buffered, so this is not for streams.
//
// Thread-safety: safe to call from many threads at once (each call owns its io_context).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "hearsay/common/status.h"
#include "hearsay/http/client.h"
#include "hearsay/http/headers.h"

namespace hearsay::http {

struct SyncResponse {
  int status = 0;
  Headers headers;  // names lower case
  std::string body;

  std::optional<std::string_view> Header(std::string_view name) const {
    return FindHeader(headers, name);
  }
};

// Sends `request` and reads the whole response. Errors are the Client's (UNAVAILABLE,
// DEADLINE_EXCEEDED, ...); any HTTP status is a successful call.
// With `tls` (a client context, TlsContext::Load with kClient) the call is made over TLS.
Result<SyncResponse> CallSync(ClientRequest request, std::shared_ptr<TlsContext> tls = nullptr);

// GET `target` on `host_port`, with `timeout` as every one of the request's timeouts.
Result<SyncResponse> GetSync(const std::string& host_port, const std::string& target,
                             Duration timeout, std::shared_ptr<TlsContext> tls = nullptr);
// POST `json` (Content-Type application/json) to `target` on `host_port`.
Result<SyncResponse> PostJsonSync(const std::string& host_port, const std::string& target,
                                  std::string json, Duration timeout);

}  // namespace hearsay::http
