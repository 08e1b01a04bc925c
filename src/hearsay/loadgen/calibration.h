// Calibration: measures a real OpenAI-compatible engine's speed with a short, bounded run, for
// `hearsay calibrate` (the node's cost model preset, docs/engines.md#calibrate).
//
// The run sends one request at a time (no batching, so each figure is the engine's alone):
//   - a warm-up request (not counted: a first request pays one-off costs such as graph capture);
//   - prefill: unique prompts of a few lengths (each starts with a fresh random word, so no prefix
//     cache can serve any of it), max_tokens 1, streamed; the time to the first token (TTFT) is
//     sampled, lengths interleaved so that a drift in the engine's speed touches all of them;
//   - decode: prompts asking for decode_tokens output tokens (ignore_eos), streamed; the gaps
//     between consecutive tokens are sampled. The first decode request runs right after the
//     warm-up, so a run cut short by its budget still has one.
// The run stops issuing at `budget`; each request is bounded by request_timeout.
//
// The fit (FitCalibration, a pure function) is robust: the Theil-Sen line of TTFT against the
// uncached prompt tokens gives the prefill cost per token (its slope) and the fixed cost of a
// request (its intercept: one engine iteration plus HTTP and tokenization); the median gap gives
// the decode time per token. Prefill is fitted both per upstream token (the engine's own count,
// from usage) and per node token (the node's built-in `bytes` tokenizer, the unit of the node's
// cost model).
//
// Times come from std::chrono::steady_clock: a host tool measuring the wall clock.
// Thread-safety: RunCalibration blocks the calling thread and owns its I/O; pure functions
// otherwise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/env/time.h"

namespace hearsay::loadgen {

struct CalibrationOptions {
  std::string host_port;  // the engine, "host:port"
  std::string model;      // the "model" of every request
  std::string api_key;    // sent as a bearer token when set
  // Prompt lengths, in words; at least two distinct values, each 1 to 65536.
  std::vector<uint32_t> prompt_words = {64, 128, 256, 512};
  uint32_t repeats = 3;          // prefill requests per length, 1 to 100
  uint32_t decode_requests = 3;  // 1 to 100
  uint32_t decode_tokens = 64;   // output tokens asked of each, 2 to 4096
  uint32_t decode_prompt_words = 32;
  Duration budget = std::chrono::seconds(40);  // no request starts after it
  Duration request_timeout = std::chrono::seconds(15);
  uint64_t seed = 1;  // of the prompts' words
};

// OK, or INVALID_ARGUMENT naming the bad option.
Status ValidateCalibrationOptions(const CalibrationOptions& options);

// One prefill request's measure.
struct PrefillSample {
  uint32_t words = 0;
  uint32_t node_tokens = 0;    // the prompt's tokens by the node's `bytes` tokenizer
  uint32_t prompt_tokens = 0;  // the engine's count (usage), or `words` without usage
  uint32_t cached_tokens = 0;  // the engine's count (usage), 0 without
  double ttft_ms = 0;
};

// One decode request's measure.
struct DecodeSample {
  uint32_t completion_tokens = 0;  // the engine's count (usage), or the token events seen
  std::vector<double> gaps_ms;     // between consecutive token events
  double span_ms = 0;              // first token event to last
};

struct CalibrationRun {
  std::vector<PrefillSample> prefill;
  std::vector<DecodeSample> decode;
  uint32_t requests = 0;  // sent, warm-up included
  uint32_t failed = 0;
  std::string first_error;  // of the first failed request
  bool budget_hit = false;  // requests were left unsent
  Duration elapsed{0};
};

// Runs the calibration (see the file comment). INVALID_ARGUMENT for bad options, UNAVAILABLE when
// the warm-up request fails (nothing else is tried then). Other failed requests are counted.
Result<CalibrationRun> RunCalibration(const CalibrationOptions& options);

struct CalibrationFit {
  // TTFT = intercept + slope x uncached tokens.
  double ttft_intercept_ms = 0;
  double prefill_ms_per_token = 0;       // per uncached upstream token
  double prefill_ms_per_node_token = 0;  // per uncached node token
  // Decode: the median gap between tokens, and its spread.
  double decode_ms_per_token = 0;
  double decode_gap_p10_ms = 0;
  double decode_gap_p90_ms = 0;
  size_t prefill_samples = 0;
  size_t decode_gaps = 0;
};

// The robust fit of a run. FAILED_PRECONDITION when it has fewer than two prompt lengths measured
// or no decode gap.
Result<CalibrationFit> FitCalibration(const CalibrationRun& run);

// The prompt of `words` words: a fresh random word first (never cached), then random short
// lowercase words drawn from `state` (advanced).
std::string CalibrationPrompt(uint32_t words, uint64_t& state);

}  // namespace hearsay::loadgen
