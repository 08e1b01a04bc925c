// RequestSource: the workloads (workload/mmlu_workload.h, chat_workload.h,
// trace_workload.h) as a stream of ready-to-send OpenAI requests for the load generator.
//
// Each workload::Request becomes one LoadRequest: its prompt tokens are rendered as text
// (workload::RenderAsText: one word per token, so the daemon's tokenizer sees the same token count
// and equal token prefixes stay equal text prefixes), its output length becomes max_tokens, and its
// entry node picks the target URL (uniform per request, or sticky per client). Arrival times are
// the workload's: Poisson at the given rate, or a trace's own timestamps. The same spec and seed
// give the identical request stream, so policies can be compared on exactly the same traffic.
//
// Thread-safety: none; a RequestSource belongs to one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "hearsay/common/status.h"
#include "hearsay/env/time.h"
#include "hearsay/loadgen/openai_body.h"
#include "hearsay/workload/workload.h"

namespace hearsay::loadgen {

struct WorkloadSpec {
  // "mmlu", "chat" or "trace".
  std::string workload = "mmlu";
  // Mooncake-format JSONL trace, for "trace".
  std::string trace_path;
  // Requests to generate at most (for "trace": at most the trace's length); must be >= 1.
  uint64_t requests = 1000;
  // Mean arrival rate, requests/s (Poisson); > 0. Ignored when trace_timestamps is set.
  double rate_per_s = 10;
  // "trace" only: use the trace's own timestamps, multiplied by time_scale (> 0).
  bool trace_timestamps = false;
  double time_scale = 1.0;
  // Zipf exponent of prefix popularity (MMLU subjects, chat system prompts), in [0, 10].
  double zipf = 1.0;
  // MMLU: prefix variants per subject (>= 1), and chain-of-thought outputs.
  uint32_t variants = 1;
  bool cot = false;
  // Number of target URLs (>= 1) and how requests pick one.
  uint32_t targets = 1;
  workload::EntryMode entry = workload::EntryMode::kUniform;
  // Distinct clients (sticky entry maps each to one target); >= 1.
  uint32_t clients = 64;
  // Which API to call; chat workloads default to chat, the others to completions.
  std::optional<ApiKind> api;
  // The "model" field of every body.
  std::string model = "hearsay-sim";
  uint64_t seed = 1;
};

// OK, or INVALID_ARGUMENT naming the first bad field.
Status ValidateWorkloadSpec(const WorkloadSpec& spec);

struct LoadRequest {
  // The workload's request id (0, 1, 2, ...).
  uint64_t id = 0;
  // When to send it, from the start of the run (open loop; closed loop ignores it).
  Duration arrival{0};
  // Index of the target URL, in [0, targets).
  uint32_t target = 0;
  std::string path;
  std::string body;
  // The workload's prompt length in tokens (the server's count may differ slightly for chat,
  // whose template adds tokens).
  uint32_t prompt_tokens = 0;
};

class RequestSource {
 public:
  // Validates `spec` and builds its workload (loading the trace for "trace": NOT_FOUND if it
  // cannot be read, INVALID_ARGUMENT if it does not parse).
  static Result<RequestSource> Create(const WorkloadSpec& spec);

  RequestSource(RequestSource&&) noexcept;
  RequestSource& operator=(RequestSource&&) noexcept;
  ~RequestSource();

  // The next request in arrival order, or nullopt once the workload is exhausted.
  std::optional<LoadRequest> Next();

  ApiKind api() const { return api_; }

 private:
  RequestSource(const WorkloadSpec& spec, ApiKind api, std::unique_ptr<workload::Workload> workload,
                uint32_t max_turns);

  std::string model_;
  ApiKind api_;
  std::unique_ptr<workload::Workload> workload_;
  ChatTranscript transcript_;
};

}  // namespace hearsay::loadgen
