// Completions sent straight to OpenAI-compatible engines and measured with the wall clock, for the
// short measuring runs of calibration.h and host_probe.h.
//
// Thread-safety: CallAll blocks the calling thread and runs its own io_context.
#pragma once

#include <string>
#include <vector>

#include "hearsay/env/time.h"
#include "hearsay/loadgen/request_result.h"

namespace hearsay::loadgen {

struct CompletionCall {
  std::string host_port;  // the engine, "host:port"
  std::string body;       // a /v1/completions body that asks for a stream
};

// Sends every call at once and returns each one's result, in the order of `calls`, once all have
// ended. Each is bounded by `timeout` (connect, first byte and between bytes); `api_key`, when
// set, goes as a bearer token. A result's `sent` is 0: its times run from its own sending.
std::vector<RequestResult> CallAll(const std::vector<CompletionCall>& calls,
                                   const std::string& api_key, Duration timeout);

}  // namespace hearsay::loadgen
