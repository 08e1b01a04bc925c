// OpenAiEngine: the engine's own queue, read from its /metrics page, and the decode speed learned
// from its streams. See openai_engine.h.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>

#include "hearsay/upstream/engine_metrics.h"
#include "hearsay/upstream/openai_engine.h"

namespace hearsay::upstream {

void OpenAiEngine::PollQueue() {
  if (metrics_call_ || metrics_decoding_ || !healthy_) return;
  Get(metrics_call_, "/metrics", options_.queue_poll_interval, kMaxMetricsBytes,
      [this](GetResult r) {
        // The sample is of the moment the page was read; the page is decoded off the core thread.
        const auto own_in_flight = static_cast<uint32_t>(live_.size());
        const TimePoint at = scheduler_.clock().Now();
        auto got = std::make_shared<GetResult>(std::move(r));
        auto queue = std::make_shared<Result<EngineQueue>>(InternalError("not decoded"));
        metrics_decoding_ = true;
        scheduler_.Offload(
            [got, queue, flavor = options_.flavor] {
              *queue = !got->transport.ok()      ? Result<EngineQueue>(got->transport)
                       : got->http_status != 200 ? Result<EngineQueue>(UnavailableError(
                                                       "HTTP " + std::to_string(got->http_status)))
                       : got->too_long ? Result<EngineQueue>(InvalidArgumentError("page too long"))
                                       : ParseEngineQueue(flavor, got->body);
            },
            [this, alive = alive_, queue, own_in_flight, at] {
              if (!*alive) return;
              metrics_decoding_ = false;
              ApplyQueue(*queue, own_in_flight, at);
            });
      });
}

void OpenAiEngine::ApplyQueue(const Result<EngineQueue>& queue, uint32_t own_in_flight,
                              TimePoint at) {
  if (!queue.ok()) {
    engine_queue_.reset();
    // Not a health signal: llama-server publishes /metrics only with --metrics.
    if (stats_.queue_poll_failures++ == 0) {
      spdlog::warn(
          "openai engine: GET /metrics gave no queue ({}); the node counts only its own "
          "requests to the engine until it does (llama-server needs --metrics)",
          queue.status().message());
    }
    return;
  }
  ++stats_.queue_polls;
  engine_queue_ = EngineQueueSample{.running = queue.value().running,
                                    .waiting = queue.value().waiting,
                                    .own_in_flight = own_in_flight,
                                    .at = at};
}

std::optional<EngineQueueSample> OpenAiEngine::engine_queue() const {
  // Without a queue period, /slots is read only to reconcile: its counts are not used.
  if (options_.queue_poll_interval <= Duration::zero()) return std::nullopt;
  const TimePoint now = scheduler_.clock().Now();
  auto fresh = [&](const std::optional<EngineQueueSample>& s) {
    return s && now - s->at <= 3 * options_.queue_poll_interval;
  };
  const bool metrics = fresh(engine_queue_);
  const bool slots = fresh(slots_queue_);
  if (!metrics) return slots ? slots_queue_ : std::nullopt;
  // /metrics counts the deferred requests too; /slots adds what it knows of the slots.
  EngineQueueSample q = *engine_queue_;
  if (slots) {
    q.slots = slots_queue_->slots;
    q.busy_slots = slots_queue_->busy_slots;
    q.soonest_free_tokens = slots_queue_->soonest_free_tokens;
  }
  return q;
}

Duration OpenAiEngine::SlotWait(const engine::EngineLoad& load) const {
  if (!options_.price_slot_wait) return Duration::zero();
  const std::optional<EngineQueueSample> q = engine_queue();
  if (!q || q->slots == 0 || !q->soonest_free_tokens) return Duration::zero();
  if (load.running_requests < q->slots) return Duration::zero();
  const Duration left =
      FromMillis(decode_speed_.value() * static_cast<double>(*q->soonest_free_tokens)) -
      (scheduler_.clock().Now() - slots_queue_->at);
  return std::max(left, Duration::zero());
}

void OpenAiEngine::AddForeignLoad(engine::EngineLoad& load, uint64_t& pending_prefill) const {
  const std::optional<EngineQueueSample> sample = engine_queue();
  if (!sample) return;
  const uint32_t foreign = sample->foreign();
  // Which of the engine's waiting requests are the node's own is unknown: count the foreign
  // ones as waiting first, the cautious reading.
  const uint32_t foreign_waiting = std::min(foreign, sample->waiting);
  load.waiting_requests += foreign_waiting;
  load.running_requests += foreign - foreign_waiting;
  pending_prefill +=
      static_cast<uint64_t>(foreign_waiting * std::max(1.0, uncached_per_request_.value()));
}

void OpenAiEngine::LearnDecodeSpeed(const Live& r) {
  if (!r.streamed || r.usage.completion_tokens < 2) return;
  const double ms = ToMillis(scheduler_.clock().Now() - r.first_token_at);
  decode_speed_.Add(ms / static_cast<double>(r.usage.completion_tokens - 1));
}

}  // namespace hearsay::upstream
