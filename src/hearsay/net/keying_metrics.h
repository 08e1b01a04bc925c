// KeyingMetrics: the /metrics view of how well the node's keying follows its engine: engine
// tokenizer calls and their fallbacks, and, for an upstream engine, the cached tokens the node
// estimated next to those the engine reported, with the drift flag, and the engine's own queue
// and decode speed (docs/engines.md).
//
// Registered into the daemon's registry at setup (before any thread renders it). Refresh() copies
// the engine's counters (core thread: the engine lives there); the tokenizer's are atomics.
//
// Thread-safety: Refresh on the core thread only.
#pragma once

#include <cstdint>

#include "hearsay/api/metrics.h"
#include "hearsay/net/prompt_tokenizer.h"
#include "hearsay/upstream/openai_engine.h"

namespace hearsay::net {

class KeyingMetrics {
 public:
  explicit KeyingMetrics(api::MetricsRegistry& registry);

  // `engine` may be null (the simulated engine reports exact counts; nothing to compare).
  void Refresh(const PromptTokenizerStats& tokenizer, const upstream::OpenAiEngine* engine);

 private:
  struct Mirror {
    api::Counter* counter = nullptr;
    uint64_t last = 0;
    void Sync(uint64_t value) {
      if (value > last) counter->Increment(static_cast<double>(value - last));
      last = value;
    }
  };

  Mirror tokenize_engine_, fallback_error_, fallback_timeout_, fallback_invalid_;
  Mirror evidence_, estimated_, reported_, upstream_reported_, upstream_prompt_;
  Mirror overestimates_, underestimates_, stale_cut_, drift_alarms_;
  Mirror queue_polls_ok_, queue_polls_failed_;
  Mirror models_polls_ok_, models_polls_failed_, models_changes_;
  Mirror prefix_holds_released_, prefix_holds_at_bound_;
  api::Gauge* drift_ratio_ = nullptr;
  api::Gauge* unreliable_ = nullptr;
  api::Gauge* window_estimated_over_ = nullptr;
  api::Gauge* window_estimated_under_ = nullptr;
  api::Gauge* engine_running_ = nullptr;
  api::Gauge* engine_waiting_ = nullptr;
  api::Gauge* foreign_ = nullptr;
  api::Gauge* slots_total_ = nullptr;
  api::Gauge* slots_busy_ = nullptr;
  api::Gauge* decode_ms_ = nullptr;
};

}  // namespace hearsay::net
