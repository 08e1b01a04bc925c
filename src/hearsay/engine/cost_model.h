// CostModel: how long one continuous-batching iteration of an LLM engine takes, and the estimates
// routing policies derive from it (prefill time, decode step time, queue wait).
//
// One iteration runs every scheduled prefill chunk and one decode step for every decoding
// sequence, as a single forward pass. Its time is
//
//   T = t0 + a * sum(new) + b * sum(new * (cached + new / 2)) + d1 * decode_batch + d2 * sum(ctx)
//
// where, per prefill chunk, `new` is the number of prompt tokens computed in this iteration and
// `cached` the number of tokens of that sequence already in KV before it (prefix-cache hits plus
// earlier chunks); `decode_batch` is the number of sequences taking one decode step and `ctx` the
// context length (prompt + tokens generated so far) of each of them. Units, all in milliseconds:
//   t0  ms per iteration (weights read, launch and scheduling overhead),
//   a   ms per new prefill token (the linear layers),
//   b   ms per new token per attended token ("ms/token^2": the quadratic attention term; the
//       new/2 is the mean causal span inside the chunk),
//   d1  ms per decoding sequence (per-sequence sampling and bookkeeping),
//   d2  ms per context token of a decoding sequence (reading its KV, bandwidth bound).
// Chunking does not change the attention work: prefilling n tokens after c cached ones costs
// a*n + b*n*(c + n/2) in total however the n tokens are split across iterations; only the number
// of iterations (and so the t0 terms) grows.
//
// Presets follow the BLIS / inference-sim vLLM fits, roofline estimates and llm-d-inference-sim
// (see kPresets in cost_model.cc for the derivation of `consumer`); `llama-tiny-cpu` is fitted to
// the llama.cpp demo's measured prefill times.
//
// Thread-safety: a CostModel is an immutable value; share it freely.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "hearsay/common/status.h"
#include "hearsay/env/time.h"

namespace hearsay::engine {

// The five coefficients of the iteration-time formula (units in the file comment).
struct CostParams {
  double t0_ms = 0;                // ms per iteration
  double a_ms_per_token = 0;       // ms per new prefill token
  double b_ms_per_token2 = 0;      // ms per (new token x attended token)
  double d1_ms_per_seq = 0;        // ms per decoding sequence
  double d2_ms_per_ctx_token = 0;  // ms per context token of a decoding sequence

  friend bool operator==(const CostParams&, const CostParams&) = default;
};

// The work of one iteration, accumulated as the scheduler builds the batch.
// Invariants: all fields only grow through Add*; prefill_attention is the exact sum of
// new * (cached + new / 2) over the prefill chunks added.
struct IterationShape {
  uint64_t prefill_tokens = 0;   // sum(new) over prefill chunks
  double prefill_attention = 0;  // sum(new * (cached + new / 2)), in token^2
  uint32_t decode_batch = 0;     // sequences taking one decode step
  uint64_t decode_context = 0;   // sum of their context lengths, in tokens

  // Adds a prefill chunk of `new_tokens` computed after `cached_tokens` already in KV.
  void AddPrefill(uint64_t new_tokens, uint64_t cached_tokens) {
    prefill_tokens += new_tokens;
    prefill_attention += static_cast<double>(new_tokens) *
                         (static_cast<double>(cached_tokens) + static_cast<double>(new_tokens) / 2);
  }
  // Adds one decode step of a sequence whose context is `context_tokens` long.
  void AddDecode(uint64_t context_tokens) {
    ++decode_batch;
    decode_context += context_tokens;
  }
  // True when the iteration has no work at all.
  bool empty() const { return prefill_tokens == 0 && decode_batch == 0; }
};

class CostModel {
 public:
  // A model with the given coefficients; Create() validates them, this constructor trusts them.
  explicit CostModel(const CostParams& params) : p_(params) {}

  // A model from coefficients that must all be finite and >= 0 (INVALID_ARGUMENT otherwise).
  static Result<CostModel> Create(const CostParams& params);
  // The preset called `name`, or explicit coefficients in the form Spec() prints
  // ("t0=6,a=0.03,b=1.5e-6,d1=0.05,d2=4e-5", what `hearsay calibrate` measures): every one of the
  // five keys exactly once, in any order. NOT_FOUND for an unknown name, with the valid names in
  // the message; INVALID_ARGUMENT for malformed coefficients.
  static Result<CostModel> FromPreset(std::string_view name);
  // The coefficients as FromPreset reads them back (shortest round-trip decimal form).
  std::string Spec() const;
  // The names FromPreset accepts, in a fixed order: "h100-llama3-8b", "a100-llama3-8b",
  // "consumer", "llama-tiny-cpu".
  static std::span<const std::string_view> PresetNames();

  const CostParams& params() const { return p_; }

  // The time of one iteration of the given shape, in ms: the formula in the file comment. An
  // empty shape costs t0 (callers do not run empty iterations).
  double IterationMs(const IterationShape& shape) const;
  // IterationMs as a Duration (rounded to nanoseconds).
  Duration IterationTime(const IterationShape& shape) const {
    return FromMillis(IterationMs(shape));
  }

  // The marginal prefill work of `new_tokens` after `cached_tokens`, without any t0:
  // a*n + b*n*(c + n/2), in ms. What a prefill adds to iterations that run anyway.
  double PrefillWorkMs(uint64_t new_tokens, uint64_t cached_tokens) const;
  // The time to prefill `new_tokens` after `cached_tokens` on an otherwise idle engine whose
  // per-iteration token budget is `token_budget` (0 means unlimited): one t0 per chunk plus
  // PrefillWorkMs. Zero new tokens still take one iteration (the first token needs a pass).
  double PrefillMs(uint64_t new_tokens, uint64_t cached_tokens, uint64_t token_budget) const;
  // The time of one decode-only iteration for `batch` sequences with `total_context` context
  // tokens between them: t0 + d1*batch + d2*total_context, in ms.
  double DecodeStepMs(uint32_t batch, uint64_t total_context) const;
  // The time to work off `pending_prefill_tokens` queued prefill tokens whose marginal work is
  // `pending_prefill_work_ms` (a sum of PrefillWorkMs), in iterations of at most `token_budget`
  // tokens (0 = unlimited) that also carry `decode_batch` decode steps over `decode_context`
  // tokens. This is the wait a request arriving now sees before its own prefill starts, not
  // counting the iteration already running.
  double QueueWaitMs(uint64_t pending_prefill_tokens, double pending_prefill_work_ms,
                     uint64_t token_budget, uint32_t decode_batch, uint64_t decode_context) const;

 private:
  CostParams p_;
};

}  // namespace hearsay::engine
