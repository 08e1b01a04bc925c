// Options of the openai engine: see openai_engine_options.h.
#include "hearsay/upstream/openai_engine_options.h"

#include <string>

namespace hearsay::upstream {

std::string_view UpstreamFlavorName(UpstreamFlavor flavor) {
  switch (flavor) {
    case UpstreamFlavor::kGeneric:
      return "generic";
    case UpstreamFlavor::kLlamaCpp:
      return "llamacpp";
    case UpstreamFlavor::kVllm:
      return "vllm";
    case UpstreamFlavor::kSglang:
      return "sglang";
  }
  return "generic";
}

Result<UpstreamFlavor> ParseUpstreamFlavor(std::string_view name) {
  for (UpstreamFlavor f : {UpstreamFlavor::kGeneric, UpstreamFlavor::kLlamaCpp,
                           UpstreamFlavor::kVllm, UpstreamFlavor::kSglang}) {
    if (UpstreamFlavorName(f) == name) return f;
  }
  return InvalidArgumentError("unknown upstream flavor '" + std::string(name) +
                              "' (expected generic, llamacpp, vllm or sglang)");
}

Status ValidateOpenAiEngineOptions(const OpenAiEngineOptions& o) {
  using std::chrono::milliseconds;
  if (o.capacity_tokens == 0) return InvalidArgumentError("capacity_tokens must be >= 1");
  if (o.max_in_flight == 0) return InvalidArgumentError("max_in_flight must be >= 1");
  if (o.prediction_lease <= Duration::zero()) {
    return InvalidArgumentError("prediction_lease must be positive");
  }
  if (o.connect_timeout <= Duration::zero() || o.first_token_timeout <= Duration::zero() ||
      o.idle_timeout <= Duration::zero() || o.answer_timeout <= Duration::zero()) {
    return InvalidArgumentError("timeouts must be positive");
  }
  if (o.max_answer_bytes == 0) return InvalidArgumentError("max_answer_bytes must be >= 1");
  if (o.failures_to_unhealthy == 0) {
    return InvalidArgumentError("failures_to_unhealthy must be >= 1");
  }
  if (o.health_interval < milliseconds(10)) {
    return InvalidArgumentError("health_interval must be >= 10 ms");
  }
  if (o.health_path.empty() || o.health_path[0] != '/') {
    return InvalidArgumentError("health_path must start with '/'");
  }
  if (o.reconcile_interval < Duration::zero() ||
      (o.reconcile_interval > Duration::zero() && o.reconcile_interval < milliseconds(10))) {
    return InvalidArgumentError("reconcile_interval must be 0 (off) or >= 10 ms");
  }
  if (o.prefix_hold_max < Duration::zero()) {
    return InvalidArgumentError("prefix_hold_max must be >= 0");
  }
  if (Status s = ValidateDriftOptions(o.drift); !s.ok()) return s;
  if (o.max_error_body_bytes == 0) {
    return InvalidArgumentError("max_error_body_bytes must be >= 1");
  }
  return OkStatus();
}

}  // namespace hearsay::upstream
