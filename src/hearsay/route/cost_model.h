// PrefillCostModel: how routing policies price prefill, queue wait and the decode batch.
//
// It mirrors the engine's iteration-time model (engine/cost_model.h)
//   T = t0 + a·Σnew + b·Σ new·(cached + new/2) + d1·decode_batch + d2·Σdecode_context
// but lives here, as plain numbers, because route/ sits below engine/ in the layering. The node
// layer fills it from the engine's cost model of its own preset; peers on other hardware are
// corrected per candidate by Candidate::cost_scale (from their gossiped prefill cost per token).
//
// Thread-safety: a plain value.
#pragma once

#include <cstdint>

#include "hearsay/common/status.h"

namespace hearsay::route {

struct PrefillCostModel {
  // Fixed cost of one engine iteration, in ms.
  double t0_ms = 6.0;
  // Linear prefill cost per new token, in ms.
  double a_ms_per_token = 0.03;
  // Attention cost per (new token × context token), in ms.
  double b_ms_per_token2 = 1.5e-6;
  // Cost per request in the decode batch, per iteration, in ms.
  double d1_ms_per_seq = 0.05;
  // Cost per context token of the decode batch, per iteration, in ms.
  double d2_ms_per_token = 4e-5;

  // OK if every coefficient is finite and >= 0; else INVALID_ARGUMENT naming the field.
  Status Validate() const;

  // Prefill time of one request with `new_tokens` to compute on top of `cached_tokens`, in ms,
  // excluding the decode batch it shares its iteration with: t0 + a·new + b·new·(cached + new/2).
  double PrefillMs(double new_tokens, double cached_tokens) const {
    return t0_ms + a_ms_per_token * new_tokens +
           b_ms_per_token2 * new_tokens * (cached_tokens + new_tokens / 2);
  }

  // What a decode batch of `running` sequences holding `context_tokens` adds to each iteration.
  double DecodeMs(double running, double context_tokens) const {
    return d1_ms_per_seq * running + d2_ms_per_token * context_tokens;
  }

  // Expected wait, in ms, behind `queued` requests that together have `queued_tokens` left to
  // prefill, while `running` sequences holding `context_tokens` decode. Assumes one prefill per
  // iteration and equal-sized queued prompts with no cache hits (a pessimistic but stable guess),
  // plus half an iteration for the one in progress when anything runs.
  double QueueWaitMs(double queued, double queued_tokens, double running,
                     double context_tokens) const;

  // The Candidate::cost_scale of a member whose engine measured `measured_ms_per_token` of
  // prefill per computed token: that over a_ms_per_token. `fallback` when the member has not
  // measured yet (0) or a figure is unusable (not finite, or a_ms_per_token is 0).
  double ScaleFromMeasured(double measured_ms_per_token, double fallback) const;
  // The Candidate::decode_cost_scale of a member whose engine measured `measured_ms_per_token`
  // between output tokens while `running` sequences holding `context_tokens` decoded: that over
  // the model's iteration, t0 + DecodeMs(max(running, 1), context_tokens). `fallback` when not
  // measured (0) or unusable.
  double DecodeScaleFromMeasured(double measured_ms_per_token, double running,
                                 double context_tokens, double fallback) const;
};

}  // namespace hearsay::route
