// RequestResult: what the load generator measured about one request, and how it failed if it did.
//
// Times are offsets from the start of the run on the load generator's monotonic clock (the wall
// clock: this is a host tool). A result is produced once per request, by StreamRecorder (success,
// HTTP and stream errors) or by the driver (transport errors, requests it had to skip).
//
// Thread-safety: a plain value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hearsay/env/time.h"

namespace hearsay::loadgen {

// Why a request failed. Each kind is reported separately, so "the cluster shed load" (HTTP 429)
// reads differently from "the node is down" (connect) or "the stream broke" (stream).
enum class ErrorKind {
  kNone,
  // Could not connect, or the connection failed before the response headers.
  kConnect,
  // No response headers, or no body bytes, within the timeout.
  kTimeout,
  // A non-2xx status; RequestResult::http_status has it.
  kHttpStatus,
  // The stream broke after the headers: an error event, a reset, or an end before [DONE].
  kStream,
  // The response could not be understood (bad SSE framing or chunk JSON).
  kProtocol,
  // The load generator did not send it: too many requests were already in flight (open loop).
  kSkipped,
  // The run was stopped (interrupt) while the request was in flight.
  kCancelled,
};

// A short stable name for reports: "connect", "timeout", "http_429", "stream", ...
std::string ErrorKindName(ErrorKind kind, int http_status);

struct RequestResult {
  // The workload request id and the index of the target URL it was sent to.
  uint64_t id = 0;
  uint32_t target = 0;

  ErrorKind error = ErrorKind::kNone;
  // The HTTP status received, 0 if none.
  int http_status = 0;
  // Human-readable detail of the error (empty on success).
  std::string error_message;

  // When the request was sent, from the start of the run.
  Duration sent{0};
  // Time to first token: from sending to the first event carrying content; nullopt if none came.
  std::optional<Duration> ttft;
  // Gaps between consecutive content events (inter-token latency samples), in arrival order.
  std::vector<Duration> itl;
  // From sending to the end of the response (success) or to the failure.
  Duration e2e{0};

  // Token counts from the response's usage chunk; has_usage is false if none arrived.
  bool has_usage = false;
  uint32_t prompt_tokens = 0;
  uint32_t cached_tokens = 0;
  uint32_t completion_tokens = 0;

  bool ok() const { return error == ErrorKind::kNone; }
};

}  // namespace hearsay::loadgen
