// KeyingMetrics: see keying_metrics.h.
#include "hearsay/net/keying_metrics.h"

namespace hearsay::net {

KeyingMetrics::KeyingMetrics(api::MetricsRegistry& r) {
  const char* tok =
      "Prompts tokenized for keying by the engine's /tokenize, or keyed with bytes "
      "after it failed";
  tokenize_engine_.counter = &r.AddCounter("hearsay_tokenize_total", tok, {{"result", "engine"}});
  fallback_error_.counter =
      &r.AddCounter("hearsay_tokenize_total", tok, {{"result", "fallback"}, {"reason", "error"}});
  fallback_timeout_.counter =
      &r.AddCounter("hearsay_tokenize_total", tok, {{"result", "fallback"}, {"reason", "timeout"}});
  fallback_invalid_.counter =
      &r.AddCounter("hearsay_tokenize_total", tok, {{"result", "fallback"}, {"reason", "invalid"}});
  evidence_.counter = &r.AddCounter("hearsay_upstream_evidence_total",
                                    "Upstream responses that reported cached tokens");
  const char* cached =
      "Cached prompt tokens of upstream responses with evidence, in node tokens: "
      "what the node estimated at send time next to what the engine reported";
  estimated_.counter =
      &r.AddCounter("hearsay_upstream_cached_tokens_total", cached, {{"kind", "estimated"}});
  reported_.counter =
      &r.AddCounter("hearsay_upstream_cached_tokens_total", cached, {{"kind", "reported"}});
  upstream_reported_.counter =
      &r.AddCounter("hearsay_upstream_engine_cached_tokens_total",
                    "Cached prompt tokens the engine reported, in its own tokens");
  upstream_prompt_.counter = &r.AddCounter("hearsay_upstream_engine_prompt_tokens_total",
                                           "Prompt tokens the engine reported, in its own tokens");
  const char* mis = "Upstream responses whose cached tokens disagreed with the estimate";
  overestimates_.counter =
      &r.AddCounter("hearsay_upstream_cache_mismatches_total", mis, {{"direction", "over"}});
  underestimates_.counter =
      &r.AddCounter("hearsay_upstream_cache_mismatches_total", mis, {{"direction", "under"}});
  stale_cut_.counter = &r.AddCounter("hearsay_upstream_stale_entries_cut_total",
                                     "Tracked prompts cut because evidence proved them stale");
  drift_alarms_.counter = &r.AddCounter("hearsay_upstream_cache_drift_alarms_total",
                                        "Times the cache estimates were declared unreliable");
  drift_ratio_ = &r.AddGauge("hearsay_upstream_cache_drift_ratio",
                             "Windowed sum |estimated - reported| / prompt tokens");
  unreliable_ = &r.AddGauge(
      "hearsay_upstream_cache_estimates_unreliable",
      "1 while drift is flagged: routing then trusts only what the engine reported cached");
  const char* win = "Cached tokens over the drift window the estimate got wrong, by direction";
  window_estimated_over_ =
      &r.AddGauge("hearsay_upstream_cache_drift_tokens", win, {{"direction", "over"}});
  window_estimated_under_ =
      &r.AddGauge("hearsay_upstream_cache_drift_tokens", win, {{"direction", "under"}});
  const char* polls = "Reads of the engine's /metrics page for its queue gauges";
  queue_polls_ok_.counter =
      &r.AddCounter("hearsay_upstream_queue_polls_total", polls, {{"result", "ok"}});
  queue_polls_failed_.counter =
      &r.AddCounter("hearsay_upstream_queue_polls_total", polls, {{"result", "failed"}});
  const char* models = "Reads of the engine's GET /v1/models, which says what it serves";
  models_polls_ok_.counter =
      &r.AddCounter("hearsay_upstream_models_polls_total", models, {{"result", "ok"}});
  models_polls_failed_.counter =
      &r.AddCounter("hearsay_upstream_models_polls_total", models, {{"result", "failed"}});
  models_changes_.counter =
      &r.AddCounter("hearsay_upstream_models_changes_total",
                    "Reads of /v1/models that changed what the engine serves (the first included)");
  const char* holds =
      "Requests held until one in flight with their prefix ended (llama.cpp), by how they left";
  prefix_holds_released_.counter =
      &r.AddCounter("hearsay_upstream_prefix_holds_total", holds, {{"sent", "after_prefix"}});
  prefix_holds_at_bound_.counter =
      &r.AddCounter("hearsay_upstream_prefix_holds_total", holds, {{"sent", "at_bound"}});
  const char* queue =
      "Requests the engine reports on its /metrics page, else its busy /slots (0 without a fresh "
      "sample)";
  engine_running_ = &r.AddGauge("hearsay_upstream_engine_requests", queue, {{"state", "running"}});
  engine_waiting_ = &r.AddGauge("hearsay_upstream_engine_requests", queue, {{"state", "waiting"}});
  foreign_ = &r.AddGauge("hearsay_upstream_foreign_requests",
                         "Requests the engine reports beyond the node's own: other clients'");
  const char* slots = "llama.cpp's slots as its /slots page lists them (0 without a fresh read)";
  slots_total_ = &r.AddGauge("hearsay_upstream_engine_slots", slots, {{"state", "total"}});
  slots_busy_ = &r.AddGauge("hearsay_upstream_engine_slots", slots, {{"state", "busy"}});
  decode_ms_ = &r.AddGauge("hearsay_upstream_decode_ms_per_token",
                           "Decode time per output token, median of recent streamed answers");
}

void KeyingMetrics::Refresh(const PromptTokenizerStats& t, const upstream::OpenAiEngine* engine) {
  tokenize_engine_.Sync(t.engine.load(std::memory_order_relaxed));
  fallback_error_.Sync(t.fallback_error.load(std::memory_order_relaxed));
  fallback_timeout_.Sync(t.fallback_timeout.load(std::memory_order_relaxed));
  fallback_invalid_.Sync(t.fallback_invalid.load(std::memory_order_relaxed));
  if (engine == nullptr) return;
  const upstream::OpenAiEngineStats& s = engine->stats();
  evidence_.Sync(s.evidence);
  estimated_.Sync(s.estimated_cached_tokens);
  reported_.Sync(s.reported_cached_tokens);
  upstream_reported_.Sync(s.upstream_reported_cached_tokens);
  upstream_prompt_.Sync(s.upstream_prompt_tokens);
  overestimates_.Sync(s.overestimates);
  underestimates_.Sync(s.underestimates);
  stale_cut_.Sync(s.stale_entries_cut);
  drift_alarms_.Sync(s.drift_alarms);
  drift_ratio_->Set(engine->drift().ratio());
  unreliable_->Set(engine->estimates_unreliable() ? 1 : 0);
  window_estimated_over_->Set(static_cast<double>(engine->drift().over_tokens()));
  window_estimated_under_->Set(static_cast<double>(engine->drift().under_tokens()));
  queue_polls_ok_.Sync(s.queue_polls);
  queue_polls_failed_.Sync(s.queue_poll_failures);
  models_polls_ok_.Sync(s.models_polls);
  models_polls_failed_.Sync(s.models_poll_failures);
  models_changes_.Sync(s.models_changes);
  // Holds still out count in neither until they leave.
  prefix_holds_at_bound_.Sync(s.prefix_holds_at_bound);
  prefix_holds_released_.Sync(s.prefix_holds_released);
  const std::optional<upstream::EngineQueueSample> q = engine->engine_queue();
  engine_running_->Set(q ? q->running : 0);
  engine_waiting_->Set(q ? q->waiting : 0);
  foreign_->Set(q ? q->foreign() : 0);
  slots_total_->Set(q ? q->slots : 0);
  slots_busy_->Set(q ? q->busy_slots : 0);
  decode_ms_->Set(engine->decode_ms_per_token());
}

}  // namespace hearsay::net
