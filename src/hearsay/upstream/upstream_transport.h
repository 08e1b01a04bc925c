// UpstreamTransport: how the openai engine talks HTTP to its upstream, without doing I/O itself.
//
// The engine is sans-I/O: it hands a request to a transport and receives the response as
// callbacks on the core thread. The daemon's implementation (HttpUpstreamTransport) runs
// http::Client on the I/O threads and posts every callback into the core; tests use a scripted
// fake in virtual time, or the real one against a fake upstream on loopback.
//
// Contract: Send() never calls back from inside itself. A call's callbacks run on the core thread
// in order: at most one on_headers, then on_body pieces, then exactly one on_done, unless the
// call is cancelled first: after UpstreamCall::Cancel() returns, no callback of that call runs.
// Destroying the UpstreamCall handle cancels the call.
//
// Thread-safety: every method is called on the core thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "hearsay/common/status.h"
#include "hearsay/env/time.h"

namespace hearsay::upstream {

struct UpstreamHttpRequest {
  std::string method = "POST";
  // Path and query, for example "/v1/completions".
  std::string target;
  // JSON for POST; empty for GET.
  std::string body;
  Duration connect_timeout = std::chrono::seconds(2);
  // From the end of the write until the response header.
  Duration response_timeout = std::chrono::seconds(30);
  // Longest silence between two body reads.
  Duration idle_timeout = std::chrono::seconds(30);
};

struct UpstreamCallbacks {
  std::function<void(int status)> on_headers;
  std::function<void(std::string_view chunk)> on_body;
  // OK after the whole body; UNAVAILABLE (connect failure, reset, malformed HTTP),
  // DEADLINE_EXCEEDED (a timeout) otherwise.
  std::function<void(Status status)> on_done;
};

// One call in flight.
class UpstreamCall {
 public:
  virtual ~UpstreamCall() = default;
  // Stops the call; no callback runs after this returns. Idempotent.
  virtual void Cancel() = 0;
};

class UpstreamTransport {
 public:
  virtual ~UpstreamTransport() = default;
  // Starts `request`; see the contract above.
  virtual std::unique_ptr<UpstreamCall> Send(UpstreamHttpRequest request,
                                             UpstreamCallbacks callbacks) = 0;
};

}  // namespace hearsay::upstream
