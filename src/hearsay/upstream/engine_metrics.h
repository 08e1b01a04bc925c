// The queue an inference server reports on its Prometheus `/metrics` page: how many requests it
// is running and how many wait for a slot. The node adds to its own count what other clients of
// the same engine put there (see OpenAiEngine::Load).
//
// Per engine (gauges, summed over label sets: one page may list several models or ranks):
//   - llama.cpp server (with --metrics): llamacpp:requests_processing, llamacpp:requests_deferred
//   - vLLM: vllm:num_requests_running, vllm:num_requests_waiting
//   - SGLang: sglang:num_running_reqs, sglang:num_queue_reqs
//
// The page is untrusted bytes from the network: it is read in one linear pass, at most
// kMaxMetricsBytes, and anything but a finite, non-negative value on a requested line is
// INVALID_ARGUMENT naming the line. Lines of other metrics are skipped unread.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/upstream/openai_engine_options.h"

namespace hearsay::upstream {

inline constexpr size_t kMaxMetricsBytes = 1 << 20;

// The sum of the samples of each metric in `names` (in that order), and how many samples each had.
struct GaugeSums {
  std::vector<double> sums;
  std::vector<size_t> samples;
};

// Reads the Prometheus text exposition format (version 0.0.4): `name{labels} value [timestamp]`
// lines, `#` comments. INVALID_ARGUMENT for text over kMaxMetricsBytes or a malformed requested line.
Result<GaugeSums> SumGauges(std::string_view text, std::span<const std::string_view> names);

// The flavor's running and waiting gauges; nullopt when the flavor publishes none (generic).
struct QueueGaugeNames {
  std::string_view running;
  std::string_view waiting;
};
std::optional<QueueGaugeNames> QueueGaugesOf(UpstreamFlavor flavor);

// The engine's queue right now, by its own count.
struct EngineQueue {
  uint32_t running = 0;
  uint32_t waiting = 0;
};

// The flavor's queue from its /metrics page. NOT_FOUND when either gauge is missing (llama-server
// without --metrics answers 501 instead; an old engine may lack one), INVALID_ARGUMENT as above.
// Counts are capped at kMaxReportedRequests.
inline constexpr uint32_t kMaxReportedRequests = 1 << 20;
Result<EngineQueue> ParseEngineQueue(UpstreamFlavor flavor, std::string_view text);

}  // namespace hearsay::upstream
