// OpenAiEngine: see openai_engine.h.
#include "hearsay/upstream/openai_engine.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "hearsay/upstream/engine_metrics.h"
#include "hearsay/upstream/upstream_response.h"

namespace hearsay::upstream {
namespace {

using engine::RequestId;

// What an unhealthy engine reports as its queue, so gossip's overload flag (high-water mark 64
// by default) is raised and cost-based policies price the node out.
constexpr uint32_t kUnhealthyQueueDepth = 1u << 16;
// Shared prefills' speed samples skipped in a row before they are taken: the speed estimate's
// window, so an engine that is never measured alone still follows its speed within two windows.
constexpr uint32_t kSharedSamplesBeforeTaken = 32;

bool SupportedPath(const std::string& path) {
  return path == "/v1/completions" || path == "/v1/chat/completions";
}

// Strips what llama.cpp's detokenizer adds in front of a prompt (BOS text, one space).
std::string_view NormalizeSlotText(std::string_view s) {
  if (s.starts_with("<s>")) s.remove_prefix(3);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

}  // namespace

Result<std::unique_ptr<OpenAiEngine>> OpenAiEngine::Create(Scheduler& scheduler,
                                                           UpstreamTransport& transport,
                                                           prefix::BlockKeyer keyer,
                                                           OpenAiEngineOptions options) {
  if (Status s = ValidateOpenAiEngineOptions(options); !s.ok()) return s;
  auto engine = std::unique_ptr<OpenAiEngine>(
      new OpenAiEngine(scheduler, transport, std::move(keyer), std::move(options)));
  engine->tick_timer_ = scheduler.RunAfter(Duration::zero(), [e = engine.get()] { e->Tick(); });
  return engine;
}

OpenAiEngine::OpenAiEngine(Scheduler& scheduler, UpstreamTransport& transport,
                           prefix::BlockKeyer keyer, OpenAiEngineOptions options)
    : scheduler_(scheduler),
      transport_(transport),
      options_(std::move(options)),
      tracker_(std::move(keyer),
               CacheTrackerOptions{options_.capacity_tokens, options_.prediction_lease,
                                   options_.flavor == UpstreamFlavor::kLlamaCpp
                                       ? PromptStorage::kWholePrompts
                                       : PromptStorage::kSharedBlocks}),
      drift_(options_.drift) {}

OpenAiEngine::~OpenAiEngine() {
  *alive_ = false;
  if (tick_timer_ != kNoTimer) scheduler_.Cancel(tick_timer_);
  for (auto& [id, r] : live_) {
    if (r->first_token_timer != kNoTimer) scheduler_.Cancel(r->first_token_timer);
    if (r->hold_timer != kNoTimer) scheduler_.Cancel(r->hold_timer);
    if (r->call) r->call->Cancel();
  }
  if (probe_call_) probe_call_->Cancel();
  if (slots_call_) slots_call_->Cancel();
  if (metrics_call_) metrics_call_->Cancel();
  if (models_call_) models_call_->Cancel();
}

Status OpenAiEngine::Submit(engine::EngineRequest request, engine::EngineObserver* observer) {
  if (observer == nullptr) return InvalidArgumentError("observer is null");
  if (request.prompt.empty()) return InvalidArgumentError("empty prompt");
  if (request.max_output_tokens == 0) return InvalidArgumentError("max_output_tokens must be >= 1");
  if (!SupportedPath(request.api_path)) {
    return InvalidArgumentError(
        "the openai engine serves /v1/completions and "
        "/v1/chat/completions, not '" +
        request.api_path + "'");
  }
  if (options_.max_context_tokens > 0 &&
      request.prompt.size() + request.max_output_tokens > options_.max_context_tokens) {
    return InvalidArgumentError("prompt plus max_tokens exceeds the context limit of " +
                                std::to_string(options_.max_context_tokens) + " tokens");
  }
  if (live_.contains(request.id)) return AlreadyExistsError("request id is live");
  if (!healthy_) {
    ++stats_.rejected_unhealthy;
    return UnavailableError("upstream engine unavailable: " + unhealthy_reason_);
  }
  if (live_.size() >= options_.max_in_flight) {
    ++stats_.rejected_busy;
    return ResourceExhaustedError("upstream engine at its limit of " +
                                  std::to_string(options_.max_in_flight) + " requests in flight");
  }
  const bool stream = request.stream;
  Result<std::string> body =
      RewriteRequestBody(request.api_body, options_.flavor == UpstreamFlavor::kLlamaCpp,
                         UpstreamModelFor(request), stream);
  if (!body.ok()) return body.status();
  // vLLM keeps salted prefixes apart: a tenant's (or a salted request's) cache stays its own in
  // the engine too, not only in the node's keys.
  if (request.cache_namespace != 0 && options_.flavor == UpstreamFlavor::kVllm) {
    body = WithCacheSalt(body.value(), request.cache_namespace);
    if (!body.ok()) return body.status();
  }

  const RequestId id = request.id;
  auto r = std::make_unique<Live>();
  r->observer = observer;
  r->prompt_len = static_cast<uint32_t>(request.prompt.size());
  r->submitted = scheduler_.clock().Now();
  r->streamed = stream;
  r->order = next_order_++;
  Live& live = *r;
  live_.emplace(id, std::move(r));
  ++stats_.requests;

  UpstreamHttpRequest& http = live.http;
  http.method = "POST";
  http.target = request.api_path;
  http.body = std::move(body).value();
  http.connect_timeout = options_.connect_timeout;
  // The timer below is the deadline (its error names it); the transport's own response timeout
  // is only a backstop, later, so the two never race to report one timeout.
  const Duration deadline = stream ? options_.first_token_timeout : options_.answer_timeout;
  http.response_timeout = deadline + std::chrono::seconds(1);
  http.idle_timeout = options_.idle_timeout;
  UpstreamCallbacks& cb = live.callbacks;
  cb.on_headers = [this, id](int status) { OnHeaders(id, status); };
  cb.on_body = [this, id](std::string_view chunk) { OnBody(id, chunk); };
  cb.on_done = [this, id](Status s) { OnDone(id, std::move(s)); };
  // The prompt text only serves /slots reconciliation (llama.cpp); other upstreams skip the parse.
  const bool llamacpp = options_.flavor == UpstreamFlavor::kLlamaCpp;
  if (llamacpp) live.prompt_text = PromptText(request.api_body);
  live.prompt = std::move(request.prompt);
  live.cache_namespace = request.cache_namespace;
  // The deadline runs from here: a held request's wait counts against it.
  live.first_token_timer = scheduler_.RunAfter(deadline, [this, id, stream, deadline] {
    auto it = live_.find(id);
    if (it == live_.end()) return;
    it->second->first_token_timer = kNoTimer;
    ++stats_.timeouts;
    Fail(id,
         DeadlineExceededError(std::string("upstream engine sent no ") +
                               (stream ? "output" : "answer") + " within " +
                               std::to_string(static_cast<int64_t>(ToMillis(deadline))) + " ms"),
         true);
  });
  if (!HoldIfShared(id, live)) Send(id);
  return OkStatus();
}

void OpenAiEngine::Send(RequestId id) {
  Live& live = *live_.at(id);
  live.held = false;
  MarkSharedPrefills(id, live);
  // Sent first: what follows is needed only once the upstream answers (the transport never calls
  // back inside Send), so it runs while the upstream works instead of before it starts.
  live.call = transport_.Send(std::move(live.http), std::move(live.callbacks));
  // With prefix holding the prompt is keyed already (HoldIfShared).
  live.estimate = Holding() ? tracker_.Predict(id, live.keys, std::move(live.prompt_text),
                                               scheduler_.clock().Now())
                            : tracker_.Predict(id, live.prompt, std::move(live.prompt_text),
                                               scheduler_.clock().Now(), live.cache_namespace);
  live.prompt = {};
  if (!live.inherits_base) live.base_tokens = live.estimate;
  uncached_per_request_.Add(
      static_cast<double>(live.prompt_len - std::min<size_t>(live.estimate, live.prompt_len)));
}

bool OpenAiEngine::Cancel(RequestId id) {
  auto it = live_.find(id);
  if (it == live_.end()) return false;
  tracker_.Abandon(id);
  Erase(id);
  return true;
}

void OpenAiEngine::Erase(RequestId id) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  std::unique_ptr<Live> r = std::move(it->second);
  live_.erase(it);
  if (r->first_token_timer != kNoTimer) scheduler_.Cancel(r->first_token_timer);
  if (r->hold_timer != kNoTimer) scheduler_.Cancel(r->hold_timer);
  if (r->held) std::erase(held_, id);
  if (r->call) {
    r->call->Cancel();
    // We may be inside one of this call's callbacks: destroy it once that has returned.
    scheduler_.Post([call = std::shared_ptr<UpstreamCall>(std::move(r->call))] {});
  }
  // It may have been what a held request waited for.
  if (!held_.empty()) ReleaseHeld();
}

void OpenAiEngine::OnHeaders(RequestId id, int status) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  it->second->http_status = status;
}

void OpenAiEngine::OnBody(RequestId id, std::string_view chunk) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  Live& r = *it->second;
  if (r.http_status != 200) {
    const size_t room = options_.max_error_body_bytes -
                        std::min(options_.max_error_body_bytes, r.error_body.size());
    r.error_body.append(chunk.substr(0, room));
    return;
  }
  if (!r.streamed) {
    if (chunk.size() > options_.max_answer_bytes - r.answer.size()) {
      ++stats_.malformed;
      Fail(id,
           DataLossError("upstream answer over " + std::to_string(options_.max_answer_bytes) +
                         " bytes"),
           true);
      return;
    }
    r.answer.append(chunk);
    return;
  }
  // Handling an event may end the request and destroy its Live: the parser is moved out for the
  // Feed (so it outlives that), and events after the end are dropped.
  api::SseParser parser = std::move(r.parser);
  bool live = true;
  parser.Feed(chunk, [&](std::string_view data) {
    if (live) live = OnEvent(id, data);
  });
  if (!live) return;
  it = live_.find(id);
  if (it == live_.end()) return;
  if (!parser.ok()) {
    ++stats_.malformed;
    Fail(id, DataLossError("upstream stream: " + parser.status().message()), true);
    return;
  }
  it->second->parser = std::move(parser);
}

bool OpenAiEngine::OnEvent(RequestId id, std::string_view data) {
  auto live = live_.find(id);
  if (live == live_.end()) return false;
  // Only a stream repeats its events; an answer in one piece is decoded once, with nothing kept.
  Live& r = *live->second;
  Result<UpstreamChunk> parsed = r.streamed ? r.decoder.Decode(data) : ParseUpstreamChunk(data);
  if (!parsed.ok()) {
    ++stats_.malformed;
    Fail(id, DataLossError("upstream sent a malformed event: " + parsed.status().message()), true);
    return false;
  }
  const UpstreamChunk& c = parsed.value();
  if (c.error) {
    ++stats_.error_events;
    Fail(id, UnavailableError("upstream engine error: " + *c.error), true);
    return false;
  }
  if (c.done) {
    r.done_seen = true;
    return true;
  }
  if (c.prompt_tokens) {
    r.usage.prompt_tokens = *c.prompt_tokens;
    r.have_usage_prompt = true;
  }
  if (c.completion_tokens) r.usage.completion_tokens = *c.completion_tokens;
  if (c.cached_tokens) r.usage.cached_tokens = *c.cached_tokens;
  if (c.prompt_ms && !r.first_sent) r.prompt_ms = *c.prompt_ms;
  if (c.prompt_ms && c.prompt_computed_tokens && *c.prompt_computed_tokens > 0 && !r.first_sent) {
    // In node tokens, which every price is in: the upstream's tokenizer may cut the same prompt
    // into twice as many tokens.
    const double upstream_prompt =
        c.prompt_tokens ? *c.prompt_tokens
                        : *c.prompt_computed_tokens + double(c.cached_tokens.value_or(0));
    const double computed =
        double(*c.prompt_computed_tokens) * double(r.prompt_len) / std::max(1.0, upstream_prompt);
    if (computed >= 1) {
      const double cached = std::max(0.0, double(r.prompt_len) - computed);
      AddPrefillSample(*c.prompt_ms / ModelledPrefillTokens(computed, cached), r.shared_prefill);
    }
  }
  if (c.cached_tokens && !r.evidence_applied) {
    ApplyEvidence(r, id, *c.cached_tokens, c.prompt_tokens.value_or(0));
  }
  if (!c.text.empty()) {
    if (!EnsureFirstToken(id)) return false;
    auto it = live_.find(id);
    if (it == live_.end()) return false;
    it->second->observer->OnText(id, c.text);
    if (!live_.contains(id)) return false;
  }
  return true;
}

bool OpenAiEngine::EnsureFirstToken(RequestId id) {
  Live& r = *live_.at(id);
  if (r.first_sent) return true;
  r.first_sent = true;
  r.first_token_at = scheduler_.clock().Now();
  if (r.first_token_timer != kNoTimer) {
    scheduler_.Cancel(r.first_token_timer);
    r.first_token_timer = kNoTimer;
  }
  RecordSuccess();
  if (!held_.empty()) BoundHolds();
  const uint32_t prompt = r.have_usage_prompt ? r.usage.prompt_tokens : r.prompt_len;
  const uint32_t cached =
      r.evidence_applied ? r.usage.cached_tokens : static_cast<uint32_t>(r.estimate);
  // The time to first token less the upstream's own prefill time, when it reports one.
  Duration queued = scheduler_.clock().Now() - r.submitted;
  if (r.prompt_ms >= 0) queued = std::max(Duration{0}, queued - FromMillis(r.prompt_ms));
  engine::Admission adm{prompt, cached, queued};
  engine::EngineObserver* obs = r.observer;
  obs->OnAdmitted(id, adm);
  if (!live_.contains(id)) return false;
  obs->OnFirstToken(id, engine::FirstToken{prompt, cached, std::nullopt});
  return live_.contains(id);
}

void OpenAiEngine::ApplyEvidence(Live& r, RequestId id, uint32_t upstream_cached,
                                 uint32_t upstream_prompt) {
  r.evidence_applied = true;
  // Convert to node tokens: exact when both sides tokenize alike, proportional otherwise.
  size_t reported = upstream_cached;
  if (upstream_prompt > 0 && upstream_prompt != r.prompt_len) {
    reported =
        static_cast<size_t>(static_cast<double>(upstream_cached) * r.prompt_len / upstream_prompt);
  }
  reported = std::min<size_t>(reported, r.prompt_len);
  if (upstream_prompt > 0 && r.prompt_len > 0) LearnTokenRatio(r.prompt_len, upstream_prompt);
  // Engines recompute the last prompt token; ratio conversion adds noise of a few percent.
  const size_t tolerance = 1 + r.prompt_len / 50;
  const EvidenceOutcome o = tracker_.ApplyEvidence(id, reported, tolerance);
  ++stats_.evidence;
  stats_.estimated_cached_tokens += r.estimate;
  stats_.reported_cached_tokens += reported;
  stats_.upstream_reported_cached_tokens += upstream_cached;
  stats_.upstream_prompt_tokens += upstream_prompt;
  if (o.overestimated) ++stats_.overestimates;
  if (o.underestimated) ++stats_.underestimates;
  stats_.stale_entries_cut += o.stale_entries_cut;
  NoteDrift(r.estimate, reported, r.prompt_len);
}

void OpenAiEngine::LearnTokenRatio(uint32_t node_tokens, uint32_t upstream_tokens) {
  // The capacity is configured in the engine's tokens; the tracker counts node tokens.
  constexpr double kWeight = 0.1;
  const double ratio = double(node_tokens) / double(upstream_tokens);
  node_per_upstream_ =
      node_per_upstream_ == 0 ? ratio : node_per_upstream_ + kWeight * (ratio - node_per_upstream_);
  tracker_.SetCapacityTokens(std::max<uint64_t>(
      1, static_cast<uint64_t>(double(options_.capacity_tokens) * node_per_upstream_)));
}

void OpenAiEngine::NoteDrift(size_t estimated, size_t reported, size_t prompt_tokens) {
  switch (drift_.Add(estimated, reported, prompt_tokens, scheduler_.clock().Now())) {
    case DriftDetector::Event::kNone:
      return;
    case DriftDetector::Event::kRaised:
      ++stats_.drift_alarms;
      tracker_.SetEvidenceOnly(true);
      [[fallthrough]];
    case DriftDetector::Event::kReminder:
      spdlog::warn(
          "event=cache_drift msg=\"cache estimates for the upstream engine are persistently "
          "wrong: {:.0f}% of prompt tokens over the last {} responses (estimated {} too many, {} "
          "too few). Likely cause: {}. Routing now trusts only what the engine reported cached "
          "(predictions ignored) until the estimates agree again.\" keying=\"{}\"",
          100 * drift_.ratio(), drift_.samples(), drift_.over_tokens(), drift_.under_tokens(),
          drift_.LikelyCause(), options_.keying);
      return;
    case DriftDetector::Event::kCleared:
      ++stats_.drift_cleared;
      tracker_.SetEvidenceOnly(false);
      spdlog::warn(
          "event=cache_drift_cleared msg=\"cache estimates agree with the engine's evidence "
          "again ({:.1f}% of prompt tokens off); predictions count again\"",
          100 * drift_.ratio());
      return;
  }
}

void OpenAiEngine::OnDone(RequestId id, Status status) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  Live& r = *it->second;
  if (r.http_status != 0 && r.http_status != 200) {
    const std::string msg = "upstream engine answered HTTP " + std::to_string(r.http_status) +
                            ": " + UpstreamErrorMessage(r.error_body);
    if (r.http_status >= 500) {
      ++stats_.http_5xx;
      Fail(id, UnavailableError(msg), true);
    } else if (r.http_status == 429) {
      Fail(id, ResourceExhaustedError(msg), false);
    } else {
      ++stats_.http_4xx;
      Fail(id, InvalidArgumentError(msg), false);
    }
    return;
  }
  if (!status.ok()) {
    if (status.code() == StatusCode::kDeadlineExceeded) {
      ++stats_.timeouts;
    } else if (r.http_status == 0) {
      ++stats_.connect_failures;
    }
    Fail(id, Status(status.code(), "upstream engine: " + status.message()), true);
    return;
  }
  if (!r.streamed) {
    if (!OnAnswer(id)) return;
    it = live_.find(id);
    if (it == live_.end()) return;
  }
  Live& done = *it->second;
  if (!done.done_seen && !done.first_sent && done.usage.completion_tokens == 0) {
    ++stats_.malformed;
    Fail(id, DataLossError("upstream stream ended without output or [DONE]"), true);
    return;
  }
  Finish(id);
}

bool OpenAiEngine::OnAnswer(RequestId id) {
  Live& r = *live_.at(id);
  std::string answer = std::move(r.answer);
  const size_t start = answer.find_first_not_of(" \t\r\n");
  if (start != std::string::npos && answer[start] == '{') {
    if (!OnEvent(id, std::string_view(answer).substr(start))) return false;
    live_.at(id)->done_seen = true;
    return true;
  }
  // Not a JSON object: a server that streams whatever it is asked (or garbage, which the stream
  // decoder refuses with its own message).
  r.streamed = true;
  OnBody(id, answer);
  return live_.contains(id);
}

void OpenAiEngine::Finish(RequestId id) {
  if (!EnsureFirstToken(id)) return;
  Live& r = *live_.at(id);
  if (!r.evidence_applied) {
    // No count reported (a generic server without cached_tokens): the prompt is cached now,
    // and there is nothing to correct the estimate with.
    tracker_.ApplyEvidence(id, r.estimate, 0);
  }
  LearnDecodeSpeed(r);
  engine::Usage usage = r.usage;
  if (!r.have_usage_prompt) usage.prompt_tokens = r.prompt_len;
  engine::EngineObserver* obs = r.observer;
  ++stats_.completed;
  Erase(id);
  obs->OnComplete(id, usage);
}

void OpenAiEngine::Fail(RequestId id, Status status, bool upstream_fault) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  engine::EngineObserver* obs = it->second->observer;
  tracker_.Abandon(id);
  Erase(id);
  ++stats_.failed;
  if (upstream_fault) RecordFailure(status.message());
  obs->OnError(id, status);
}

void OpenAiEngine::RecordFailure(const std::string& reason) {
  ++consecutive_failures_;
  if (healthy_ && consecutive_failures_ >= options_.failures_to_unhealthy) {
    SetHealthy(false, reason);
  } else if (!healthy_) {
    unhealthy_reason_ = reason;
  }
}

void OpenAiEngine::RecordSuccess() { consecutive_failures_ = 0; }

void OpenAiEngine::SetHealthy(bool healthy, const std::string& reason) {
  if (healthy == healthy_) return;
  healthy_ = healthy;
  if (healthy) {
    ++stats_.became_healthy;
    unhealthy_reason_.clear();
    consecutive_failures_ = 0;
    spdlog::warn("openai engine: upstream healthy again; accepting requests");
  } else {
    ++stats_.became_unhealthy;
    unhealthy_reason_ = reason;
    spdlog::error(
        "openai engine: upstream unhealthy ({}); refusing requests and advertising "
        "overload until a health probe succeeds",
        reason);
  }
}

std::string OpenAiEngine::UpstreamModelFor(const engine::EngineRequest& request) const {
  if (!options_.model.empty()) return options_.model;
  if (!request.adapter.empty()) return request.adapter;
  if (request.model.empty() || !served_models_) return {};
  for (const ServedModel& m : served_models_->models) {
    if (m.name == request.model) return m.name;
  }
  // The node's own model, which the engine lists under its first name.
  return served_models_->models.front().name;
}

void OpenAiEngine::Tick() {
  tick_timer_ = kNoTimer;
  const TimePoint now = scheduler_.clock().Now();
  tracker_.ExpireLeases(now);
  if (now >= next_probe_) {
    next_probe_ = now + options_.health_interval;
    Probe();
  }
  const bool llamacpp = options_.flavor == UpstreamFlavor::kLlamaCpp;
  if (llamacpp && options_.reconcile_interval > Duration::zero() && now >= next_reconcile_) {
    next_reconcile_ = now + options_.reconcile_interval;
    reconcile_due_ = true;
  }
  const bool poll_queue =
      QueueGaugesOf(options_.flavor) && options_.queue_poll_interval > Duration::zero();
  const bool queue_due = poll_queue && now >= next_queue_poll_;
  if (queue_due) {
    next_queue_poll_ = now + options_.queue_poll_interval;
    PollQueue();
  }
  // One /slots read serves both the queue and, when due, reconciliation.
  if (llamacpp && (reconcile_due_ || queue_due)) ReadSlots(reconcile_due_);
  // Without a period, only until the first good read.
  const bool poll_models = options_.models_poll_interval > Duration::zero();
  if (now >= next_models_poll_ && (poll_models || !served_models_)) {
    next_models_poll_ =
        now + (poll_models ? options_.models_poll_interval : options_.health_interval);
    PollModels();
  }
  Duration next = options_.health_interval;
  if (options_.models_poll_interval > Duration::zero()) {
    next = std::min(next, options_.models_poll_interval);
  }
  if (options_.reconcile_interval > Duration::zero()) {
    next = std::min(next, options_.reconcile_interval);
  }
  if (poll_queue) next = std::min(next, options_.queue_poll_interval);
  next = std::min(next, options_.prediction_lease / 2);
  tick_timer_ = scheduler_.RunAfter(next, [this] { Tick(); });
}

void OpenAiEngine::Get(std::unique_ptr<UpstreamCall>& call, std::string target, Duration timeout,
                       size_t max_body, std::function<void(GetResult)> done) {
  UpstreamHttpRequest req;
  req.method = "GET";
  req.target = std::move(target);
  req.connect_timeout = options_.connect_timeout;
  req.response_timeout = std::max(timeout, options_.connect_timeout);
  req.idle_timeout = req.response_timeout;
  auto result = std::make_shared<GetResult>();
  UpstreamCallbacks cb;
  cb.on_headers = [result](int s) { result->http_status = s; };
  cb.on_body = [result, max_body](std::string_view chunk) {
    const size_t room = max_body - std::min(max_body, result->body.size());
    if (chunk.size() > room) result->too_long = true;
    result->body.append(chunk.substr(0, room));
  };
  cb.on_done = [this, &call, result, done = std::move(done)](Status s) {
    // Released once this callback has returned (it runs inside the call).
    scheduler_.Post([c = std::shared_ptr<UpstreamCall>(std::move(call))] {});
    result->transport = std::move(s);
    done(std::move(*result));
  };
  call = transport_.Send(std::move(req), std::move(cb));
}

void OpenAiEngine::Probe() {
  if (probe_call_) return;  // the previous probe is still out
  ++stats_.health_probes;
  Get(probe_call_, options_.health_path, options_.health_interval, 512, [this](GetResult r) {
    if (r.transport.ok() && r.http_status == 200) {
      if (!healthy_)
        SetHealthy(true, "");
      else
        RecordSuccess();
      return;
    }
    ++stats_.health_probe_failures;
    RecordFailure(r.transport.ok() ? "health probe answered HTTP " + std::to_string(r.http_status) +
                                         ": " + UpstreamErrorMessage(r.body)
                                   : "health probe failed: " + r.transport.message());
  });
}

void OpenAiEngine::ReadSlots(bool reconcile) {
  if (slots_call_ || slots_decoding_ || !healthy_) return;
  constexpr size_t kMaxSlotsBody = 64 << 20;
  const Duration timeout = reconcile ? options_.reconcile_interval : options_.queue_poll_interval;
  Get(slots_call_, "/slots", timeout, kMaxSlotsBody, [this, reconcile](GetResult r) {
    // The sample is of the moment the page was read; the page (up to 64 MiB of slot texts) is
    // decoded off the core thread.
    const auto own_in_flight = static_cast<uint32_t>(live_.size());
    const TimePoint at = scheduler_.clock().Now();
    auto got = std::make_shared<GetResult>(std::move(r));
    auto read = std::make_shared<SlotsRead>();
    slots_decoding_ = true;
    scheduler_.Offload([got, read, reconcile] { *read = DecodeSlots(*got, reconcile); },
                       [this, alive = alive_, read, reconcile, own_in_flight, at] {
                         if (!*alive) return;
                         slots_decoding_ = false;
                         ApplySlots(*read, reconcile, own_in_flight, at);
                       });
  });
}

OpenAiEngine::SlotsRead OpenAiEngine::DecodeSlots(const GetResult& r, bool reconcile) {
  SlotsRead out;
  out.status = OkStatus();
  Result<std::vector<SlotState>> slots =
      !r.transport.ok()      ? Result<std::vector<SlotState>>(r.transport)
      : r.http_status != 200 ? Result<std::vector<SlotState>>(
                                   UnavailableError("HTTP " + std::to_string(r.http_status)))
      : r.too_long ? Result<std::vector<SlotState>>(InvalidArgumentError("answer over 64 MiB"))
                   : ParseSlots(r.body);
  if (!slots.ok()) {
    out.status = slots.status();
    return out;
  }
  out.summary = SummarizeSlots(slots.value());
  if (reconcile) {
    out.held.reserve(slots->size());
    for (const SlotState& slot : slots.value()) {
      out.held.push_back(std::string(NormalizeSlotText(slot.prompt)) + slot.generated);
    }
  }
  return out;
}

void OpenAiEngine::ApplySlots(const SlotsRead& read, bool reconcile, uint32_t own_in_flight,
                              TimePoint at) {
  if (!read.status.ok()) {
    slots_queue_.reset();
    // Not a health signal: /slots may be disabled (llama-server --no-slots).
    if (stats_.reconcile_failures++ == 0) {
      spdlog::warn(
          "openai engine: GET /slots failed ({}); cache reconciliation and the slot count are "
          "off until it works (start llama-server with --slots)",
          read.status.message());
    }
    return;
  }
  ++stats_.slots_polls;
  slots_queue_ = EngineQueueSample{.running = read.summary.busy,
                                   .own_in_flight = own_in_flight,
                                   .at = at,
                                   .slots = read.summary.slots,
                                   .busy_slots = read.summary.busy,
                                   .soonest_free_tokens = read.summary.soonest_free_tokens};
  tracker_.SetSlotPrompts(read.summary.slots);
  if (!reconcile) return;
  reconcile_due_ = false;
  Reconcile(read.held);
}

void OpenAiEngine::Reconcile(const std::vector<std::string>& held) {
  auto resident = [&held](const std::string& text) {
    const std::string_view t = NormalizeSlotText(text);
    return std::any_of(held.begin(), held.end(),
                       [t](const std::string& h) { return std::string_view(h).starts_with(t); });
  };
  const ReconcileOutcome o =
      tracker_.Reconcile(resident, options_.slots_authoritative, scheduler_.clock().Now());
  ++stats_.reconciles;
  stats_.reconcile_confirmed += o.confirmed;
  stats_.reconcile_removed += o.removed;
}

double OpenAiEngine::ModelledPrefillTokens(double computed, double cached) const {
  if (!options_.prefill_model) return computed;
  const engine::CostModel model(*options_.prefill_model);
  const double a = model.params().a_ms_per_token;
  const double ms = model.PrefillMs(static_cast<uint64_t>(std::llround(computed)),
                                    static_cast<uint64_t>(std::llround(cached)), 0);
  // A model with no cost per new token cannot say what the engine's speed is worth per token.
  return a > 0 && ms > 0 ? ms / a : computed;
}

void OpenAiEngine::MarkSharedPrefills(RequestId id, Live& live) {
  for (auto& [other, r] : live_) {
    // Still prefilling: sent, no first token and no prefill time reported yet.
    if (other == id || r->call == nullptr || r->first_sent || r->prompt_ms >= 0) continue;
    r->shared_prefill = true;
    live.shared_prefill = true;
  }
}

void OpenAiEngine::AddPrefillSample(double ms_per_token, bool shared) {
  if (shared && prefill_speed_.samples() > 0 &&
      shared_samples_skipped_ < kSharedSamplesBeforeTaken) {
    ++shared_samples_skipped_;
    return;
  }
  if (!shared) shared_samples_skipped_ = 0;
  prefill_speed_.Add(ms_per_token);
}

double OpenAiEngine::ExpectedPrefillMs(uint64_t computed, uint64_t cached) const {
  if (computed == 0) return 0;
  // Before the first answer, the speed the node prices this engine with: a fresh engine's first
  // prefills are work ahead of the next request too.
  const double ms_per_token = prefill_speed_.samples() > 0 ? prefill_speed_.value()
                              : options_.prefill_model     ? options_.prefill_model->a_ms_per_token
                                                           : 0;
  return ms_per_token * ModelledPrefillTokens(double(computed), double(cached));
}

engine::EngineLoad OpenAiEngine::Load() const {
  engine::EngineLoad l;
  l.kv_capacity_tokens = tracker_.capacity_tokens();
  l.kv_used_tokens = std::min(tracker_.used_tokens(), l.kv_capacity_tokens);
  uint64_t pending_prefill = 0;
  double pending_ms = 0;
  const TimePoint now = scheduler_.clock().Now();
  for (const auto& [id, r] : live_) {
    // Waiting: no first token yet. A request asked in one piece shows none until its end, so it
    // counts as waiting only while its prefill is expected to run.
    if (r->first_sent) continue;
    const uint64_t cached = std::min<size_t>(r->estimate, r->prompt_len);
    const uint64_t uncached = r->prompt_len - cached;
    const double prefill_ms = ExpectedPrefillMs(uncached, cached);
    if (!r->streamed && now - r->submitted >= FromMillis(prefill_ms)) continue;
    ++l.waiting_requests;
    pending_prefill += uncached;
    pending_ms += prefill_ms;
  }
  l.running_requests = static_cast<uint32_t>(live_.size()) - l.waiting_requests;
  const uint64_t own_pending = pending_prefill;
  AddForeignLoad(l, pending_prefill);
  pending_ms += ExpectedPrefillMs(pending_prefill - own_pending, 0);
  l.waiting_prefill_tokens = pending_prefill;
  l.prefill_ms_per_token = prefill_speed_.value();
  l.decode_ms_per_token = decode_speed_.value();
  l.estimated_queue_wait = FromMillis(pending_ms) + SlotWait(l);
  if (!healthy_) {
    l.waiting_requests = std::max(l.waiting_requests, kUnhealthyQueueDepth);
    l.kv_used_tokens = l.kv_capacity_tokens;
    l.estimated_queue_wait = std::chrono::hours(1);
  }
  return l;
}

size_t OpenAiEngine::CachedPrefixTokens(std::span<const engine::TokenId> prompt) const {
  return tracker_.CachedPrefixTokens(prompt);
}

size_t OpenAiEngine::CachedPrefixTokens(std::span<const engine::TokenId> prompt,
                                        uint64_t ns) const {
  return tracker_.CachedPrefixTokens(prompt, ns);
}

void OpenAiEngine::DrainCacheEvents(std::vector<prefix::BlockEvent>& out) {
  tracker_.DrainEvents(out);
}

void OpenAiEngine::AppendCacheSnapshot(std::vector<prefix::BlockEvent>& out) const {
  tracker_.AppendSnapshot(out);
}

}  // namespace hearsay::upstream
