// Summarize: the figures of a load-generator run, from its per-request results.
//
// - Latency distributions (TTFT, inter-token latency, end-to-end) over successful requests, with
//   mean and p50/p90/p99/max. Percentiles (common/percentile.h) interpolate linearly between the
//   closest ranks (the convention of numpy and of vLLM's benchmark), so p50 of {1, 2} is 1.5.
// - Inter-token latency pools every gap of every request, as serving benchmarks do.
// - Throughput: completed requests and output tokens per second of the run's wall time.
// - Token-level cache hit rate = sum(cached_tokens) / sum(prompt_tokens) over the successful
//   requests that reported usage: the share of prompt work the cluster did not recompute.
// - Errors counted by kind name (request_result.h).
//
// Thread-safety: pure functions over plain values.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "hearsay/env/time.h"
#include "hearsay/loadgen/request_result.h"

namespace hearsay::loadgen {

// A latency distribution in milliseconds; all zero when count is 0.
struct Distribution {
  uint64_t count = 0;
  double mean_ms = 0;
  double p50_ms = 0;
  double p90_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
};

// The distribution of `samples_ms` (any order).
Distribution Distribute(std::vector<double> samples_ms);

struct BenchSummary {
  // Requests the run accounted for (sent, skipped or cancelled), and how they ended.
  uint64_t requests = 0;
  uint64_t completed = 0;
  uint64_t failed = 0;
  // Failures by ErrorKindName.
  std::map<std::string, uint64_t> errors;
  // Successful requests whose response carried no usage (they do not count in hit_rate).
  uint64_t missing_usage = 0;

  Distribution ttft;
  Distribution itl;
  Distribution e2e;

  // Wall seconds from the run's start to its last response.
  double duration_s = 0;
  double requests_per_s = 0;
  double output_tokens_per_s = 0;

  uint64_t prompt_tokens = 0;
  uint64_t cached_tokens = 0;
  uint64_t completion_tokens = 0;
  // cached_tokens / prompt_tokens (0 when no prompt tokens were reported).
  double hit_rate = 0;

  // Requests sent to each target, by target index.
  std::vector<uint64_t> per_target;
};

// Summarizes `results` of a run that lasted `duration` (run start to last response).
// `targets` sizes per_target (results naming a target beyond it are still counted elsewhere).
BenchSummary Summarize(std::span<const RequestResult> results, Duration duration, size_t targets);

// The summary as one JSON object (field names as in BenchSummary; distributions as objects with
// count, mean_ms, p50_ms, p90_ms, p99_ms, max_ms).
nlohmann::json ToJson(const BenchSummary& summary);

// A human-readable report: a latency table, throughput, token counts and hit rate, errors.
// `targets` names the targets of per_target, in order (their index when absent). A run without
// inter-token samples (non-streaming requests) says so instead of printing an all-zero itl row.
std::string RenderTable(const BenchSummary& summary, std::span<const std::string> targets = {});

}  // namespace hearsay::loadgen
