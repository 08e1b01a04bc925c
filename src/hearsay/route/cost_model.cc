#include "hearsay/route/cost_model.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace hearsay::route {
namespace {

bool Bad(double v) { return !std::isfinite(v) || v < 0; }

}  // namespace

Status PrefillCostModel::Validate() const {
  const struct {
    const char* name;
    double value;
  } fields[] = {{"t0_ms", t0_ms},
                {"a_ms_per_token", a_ms_per_token},
                {"b_ms_per_token2", b_ms_per_token2},
                {"d1_ms_per_seq", d1_ms_per_seq},
                {"d2_ms_per_token", d2_ms_per_token}};
  for (const auto& f : fields) {
    if (Bad(f.value)) {
      return InvalidArgumentError(std::string("cost model: ") + f.name +
                                  " must be a finite number >= 0, got " + std::to_string(f.value));
    }
  }
  return OkStatus();
}

double PrefillCostModel::QueueWaitMs(double queued, double queued_tokens, double running,
                                     double context_tokens) const {
  const double decode = DecodeMs(running, context_tokens);
  double wait = 0;
  if (running > 0 || queued > 0) wait += 0.5 * (t0_ms + decode);
  if (queued > 0) {
    // Σ over equal prompts of b·n·n/2 is b·T²/(2q).
    wait += queued * (t0_ms + decode) + a_ms_per_token * queued_tokens +
            b_ms_per_token2 * queued_tokens * queued_tokens / (2 * queued);
  } else if (queued_tokens > 0) {
    // Tokens reported without a request count: price them as one request.
    wait += t0_ms + decode + a_ms_per_token * queued_tokens +
            b_ms_per_token2 * queued_tokens * queued_tokens / 2;
  }
  return wait;
}

double PrefillCostModel::ScaleFromMeasured(double measured_ms_per_token, double fallback) const {
  if (!std::isfinite(measured_ms_per_token) || measured_ms_per_token <= 0 ||
      !std::isfinite(a_ms_per_token) || a_ms_per_token <= 0) {
    return fallback;
  }
  return measured_ms_per_token / a_ms_per_token;
}

double PrefillCostModel::DecodeScaleFromMeasured(double measured_ms_per_token, double running,
                                                 double context_tokens, double fallback) const {
  const double model = t0_ms + DecodeMs(std::max(running, 1.0), std::max(context_tokens, 0.0));
  if (!std::isfinite(measured_ms_per_token) || measured_ms_per_token <= 0 ||
      !std::isfinite(model) || model <= 0) {
    return fallback;
  }
  return measured_ms_per_token / model;
}

}  // namespace hearsay::route
