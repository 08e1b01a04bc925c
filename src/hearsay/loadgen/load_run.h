// LoadRun: drives one load-generator run against OpenAI-compatible servers and collects the
// per-request results.
//
// Two disciplines:
// - open loop: each request is sent at its workload arrival time (Poisson at the workload's rate,
//   or a trace's timestamps), whether or not earlier ones have answered, so queueing in the
//   servers shows up as latency, as it does for real clients. At most max_in_flight requests are
//   outstanding; a request due beyond that is recorded as skipped rather than delayed (delaying
//   it would quietly turn the run into a closed loop).
// - closed loop: `concurrency` clients, each sending its next request when its previous one ends.
// The run stops issuing after max_requests requests or `duration` (whichever comes first, or when
// the workload ends), then waits for the requests in flight (each bounded by its timeouts).
//
// Requests go over one http::Client (pooled keep-alive connections) on an io_context that Run()
// owns and runs on the calling thread. Times come from std::chrono::steady_clock: this is a host
// tool and measures the wall clock; nothing here is core code.
//
// Thread-safety: Run() once, from one thread. Cancel() may be called from any thread (not from a
// signal handler), before or during Run().
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/env/time.h"
#include "hearsay/http/client.h"
#include "hearsay/loadgen/request_result.h"
#include "hearsay/loadgen/request_source.h"

namespace hearsay::loadgen {

using namespace std::chrono_literals;

enum class LoadMode { kOpenLoop, kClosedLoop };

// How far a run has come, for progress displays.
struct Progress {
  uint64_t finished = 0;  // requests with a result (ok or failed)
  uint64_t failed = 0;
  uint64_t total = 0;  // max_requests, or 0 when the run is bounded by time only
  Duration elapsed{0};
  Duration duration{0};  // the time bound, or 0
};

struct LoadOptions {
  // "host:port" of each target (see target_url.h); the request's target index picks one.
  std::vector<std::string> targets;
  LoadMode mode = LoadMode::kOpenLoop;
  // Closed loop: requests kept in flight; >= 1.
  uint32_t concurrency = 8;
  // Stop issuing after this many requests (0: no count bound).
  uint64_t max_requests = 0;
  // Stop issuing after this long (0: no time bound). One of the two bounds, or a finite
  // workload, must end the run.
  Duration duration{0};
  // Open loop: most requests outstanding at once; >= 1.
  size_t max_in_flight = 1024;
  Duration connect_timeout = 5s;
  // To the response headers (servers that queue send them at the first token).
  Duration response_timeout = 120s;
  // Longest silence inside a streamed body.
  Duration idle_timeout = 60s;
  // Speak HTTPS to every target with this client context (http::TlsContext, kClient); null:
  // plain HTTP.
  std::shared_ptr<http::TlsContext> tls = nullptr;
  // Sent as `Authorization: Bearer <api_key>` with every request when not empty.
  std::string api_key;
  // Called on the run's thread after each request finishes, at most about 20 times a second (and
  // once at the end).
  std::function<void(const Progress&)> progress;
};

// OK, or INVALID_ARGUMENT naming the bad option.
Status ValidateLoadOptions(const LoadOptions& options);

struct RunOutput {
  // One result per request issued or skipped, in completion order.
  std::vector<RequestResult> results;
  // From the start of the run to its last result.
  Duration elapsed{0};
  // True if Cancel() stopped the run early.
  bool cancelled = false;
  http::ClientStats client;
};

class LoadRun {
 public:
  LoadRun(LoadOptions options, RequestSource source);
  ~LoadRun();
  LoadRun(const LoadRun&) = delete;
  LoadRun& operator=(const LoadRun&) = delete;

  // Runs the whole load on the calling thread and returns the results. INVALID_ARGUMENT for bad
  // options, FAILED_PRECONDITION if called twice. Request failures are results, not errors.
  Result<RunOutput> Run();

  // Stops issuing and aborts the requests in flight (they end as kCancelled); Run() then returns
  // promptly. Thread-safe and idempotent.
  void Cancel();

 private:
  struct State;
  LoadOptions options_;
  RequestSource source_;
  std::atomic<bool> cancel_requested_{false};
  std::mutex mu_;  // guards state_ against a concurrent Cancel()
  std::shared_ptr<State> state_;
  bool ran_ = false;
};

}  // namespace hearsay::loadgen
