// HostedOpenAiEngine: the `openai` engine as the daemon runs it: an OpenAiEngine together with the
// http::Client and HttpUpstreamTransport it talks through, owned as one engine::Engine.
//
// The daemon's engine factory calls MakeHostedOpenAiEngine with its core scheduler, its I/O
// io_context and its post-to-core hook; everything else is configuration.
//
// Ownership: owns the client, the transport and the engine (destroyed engine first, so no call
// outlives its transport). The scheduler, io_context and post hook are borrowed and must outlive
// it. Thread-safety: as OpenAiEngine (core thread only).
#pragma once

#include <memory>
#include <string_view>

#include "hearsay/common/status.h"
#include "hearsay/engine/engine.h"
#include "hearsay/env/scheduler.h"
#include "hearsay/http/client.h"
#include "hearsay/prefix/block_keys.h"
#include "hearsay/upstream/http_upstream_transport.h"
#include "hearsay/upstream/kv_events_subscriber.h"
#include "hearsay/upstream/kv_events_tracking.h"
#include "hearsay/upstream/openai_engine.h"

namespace hearsay::upstream {

class HostedOpenAiEngine final : public engine::Engine {
 public:
  HostedOpenAiEngine(std::unique_ptr<http::Client> client,
                     std::unique_ptr<HttpUpstreamTransport> transport,
                     std::unique_ptr<OpenAiEngine> engine)
      : client_(std::move(client)), transport_(std::move(transport)), engine_(std::move(engine)) {}
  ~HostedOpenAiEngine() override {
    kv_subscriber_.reset();  // stops its thread; tasks it posted find kv_tracking_ gone
    kv_tracking_.reset();
    engine_.reset();
  }

  Status Submit(engine::EngineRequest request, engine::EngineObserver* observer) override {
    return engine_->Submit(std::move(request), observer);
  }
  bool Cancel(engine::RequestId id) override { return engine_->Cancel(id); }
  engine::EngineLoad Load() const override { return engine_->Load(); }
  // With vLLM KV events, the cache methods answer from the union of the events and the estimate.
  size_t CachedPrefixTokens(std::span<const engine::TokenId> prompt) const override {
    if (kv_tracking_) return kv_tracking_->CachedPrefixTokens(prompt);
    return engine_->CachedPrefixTokens(prompt);
  }
  // KV-event tracking keys the engine's own blocks, which know no namespace.
  size_t CachedPrefixTokens(std::span<const engine::TokenId> prompt, uint64_t ns) const override {
    if (kv_tracking_) return kv_tracking_->CachedPrefixTokens(prompt);
    return engine_->CachedPrefixTokens(prompt, ns);
  }
  void DrainCacheEvents(std::vector<prefix::BlockEvent>& out) override {
    if (kv_tracking_) return kv_tracking_->DrainCacheEvents(out);
    engine_->DrainCacheEvents(out);
  }
  void AppendCacheSnapshot(std::vector<prefix::BlockEvent>& out) const override {
    if (kv_tracking_) return kv_tracking_->AppendCacheSnapshot(out);
    engine_->AppendCacheSnapshot(out);
  }

  // Starts consuming vLLM's KV-cache events (kv_events_subscriber.h): batches reach the engine's
  // cache view through `post` (the core thread). Call once, on the core thread or before it runs.
  Status StartKvEvents(KvEventsSubscriberOptions options, KvEventsSubscriber::Post post,
                       prefix::BlockKeyer keyer, KvEventViewOptions view_options = {});
  // nullptr unless StartKvEvents succeeded. The tracking: core thread only.
  const KvEventsTracking* kv_events() const { return kv_tracking_.get(); }
  const KvEventsSubscriber* kv_events_subscriber() const { return kv_subscriber_.get(); }

  // The engine itself: health, estimate-vs-evidence counters for /metrics.
  const OpenAiEngine& openai() const { return *engine_; }
  OpenAiEngine& mutable_openai() { return *engine_; }

 private:
  std::unique_ptr<http::Client> client_;
  std::unique_ptr<HttpUpstreamTransport> transport_;
  std::unique_ptr<OpenAiEngine> engine_;
  std::shared_ptr<KvEventsTracking> kv_tracking_;  // shared only for posted tasks' weak_ptrs
  std::unique_ptr<KvEventsSubscriber> kv_subscriber_;
};

// Builds the hosted engine for `upstream_url` ("http://host:port"). INVALID_ARGUMENT for a bad
// URL or bad options. `io_one_thread`: exactly one thread runs `io` (see
// http::ClientOptions::one_thread).
Result<std::unique_ptr<HostedOpenAiEngine>> MakeHostedOpenAiEngine(
    Scheduler& scheduler, boost::asio::io_context& io, HttpUpstreamTransport::PostToCore post,
    prefix::BlockKeyer keyer, std::string_view upstream_url, OpenAiEngineOptions options,
    bool io_one_thread = false);

}  // namespace hearsay::upstream
