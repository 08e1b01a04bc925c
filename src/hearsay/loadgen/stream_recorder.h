// StreamRecorder: measures one streamed OpenAI response as its bytes arrive, and turns it into a
// RequestResult.
//
// The driver feeds it the transport's events with their arrival times (offsets from the run's
// start); the recorder itself reads no clock, so tests drive it with chosen times.
// - TTFT is the time to the first event that carries content (a non-empty delta), the moment a
//   user would see the first character; role-only chat deltas do not count. A response that
//   ends without any content falls back to its first event.
// - Inter-token latency samples are the gaps between consecutive content events.
// - Usage comes from the chunk that carries it (stream_options.include_usage).
// - A success needs a 2xx status, well-formed events, no error event, and `data: [DONE]`.
// - A non-2xx response keeps the first bytes of its body as the error message.
// - A 2xx application/json body (a server that ignored "stream": true) is accepted too: usage from
//   the object, TTFT = end to end.
//
// Thread-safety: none; one recorder per request, driven from one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "hearsay/api/sse_parser.h"
#include "hearsay/common/status.h"
#include "hearsay/env/time.h"
#include "hearsay/loadgen/request_result.h"

namespace hearsay::loadgen {

class StreamRecorder {
 public:
  // Bytes of a non-2xx body (or of a JSON body) kept; the rest is discarded.
  static constexpr size_t kMaxKeptBodyBytes = 1 << 20;

  // `id` and `target` label the result; `sent` is when the request was written.
  StreamRecorder(uint64_t id, uint32_t target, Duration sent);

  // The response status and whether the body is a JSON object rather than an event stream.
  void OnHeaders(int status, bool json_body);
  // A piece of the body that arrived at `at`.
  void OnBody(std::string_view chunk, Duration at);
  // The end of the exchange at `at`: `transport` is OK after the whole body, else the client's
  // error (UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED). Call once; the recorder is spent after.
  RequestResult Finish(const Status& transport, Duration at);

 private:
  void OnEvent(std::string_view data, Duration at);
  void Fail(ErrorKind kind, std::string message);
  void ParseJsonBody();

  RequestResult result_;
  bool headers_ = false;
  bool json_body_ = false;
  bool done_ = false;
  std::optional<Duration> first_event_;
  std::optional<Duration> last_content_;
  std::string kept_body_;
  api::SseParser parser_;
};

}  // namespace hearsay::loadgen
