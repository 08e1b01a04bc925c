// HostedOpenAiEngine: see hosted_openai_engine.h.
#include "hearsay/upstream/hosted_openai_engine.h"

#include <chrono>
#include <utility>

namespace hearsay::upstream {

Result<std::unique_ptr<HostedOpenAiEngine>> MakeHostedOpenAiEngine(
    Scheduler& scheduler, boost::asio::io_context& io, HttpUpstreamTransport::PostToCore post,
    prefix::BlockKeyer keyer, std::string_view upstream_url, OpenAiEngineOptions options,
    bool io_one_thread) {
  if (!post) return InvalidArgumentError("openai engine: no post-to-core hook");
  Result<UpstreamUrl> url = ParseUpstreamUrl(upstream_url);
  if (!url.ok()) return url.status();
  if (Status s = ValidateOpenAiEngineOptions(options); !s.ok()) return s;
  // llama.cpp's server closes a keep-alive connection after 5 s idle. A pooled connection reused
  // near that moment races its close (the transport then replays the request once on a fresh
  // connection); idle connections expire well before that, so the race is rare to begin with.
  http::ClientOptions client_options;
  client_options.idle_expiry = std::chrono::seconds(2);
  client_options.one_thread = io_one_thread;
  auto client = std::make_unique<http::Client>(io, client_options);
  auto transport =
      std::make_unique<HttpUpstreamTransport>(std::move(post), *client, std::move(url).value());
  Result<std::unique_ptr<OpenAiEngine>> engine =
      OpenAiEngine::Create(scheduler, *transport, std::move(keyer), std::move(options));
  if (!engine.ok()) return engine.status();
  return std::make_unique<HostedOpenAiEngine>(std::move(client), std::move(transport),
                                              std::move(engine).value());
}

Status HostedOpenAiEngine::StartKvEvents(KvEventsSubscriberOptions options,
                                         KvEventsSubscriber::Post post, prefix::BlockKeyer keyer,
                                         KvEventViewOptions view_options) {
  if (kv_subscriber_) return FailedPreconditionError("kv events: already started");
  auto tracking = std::make_shared<KvEventsTracking>(*engine_, std::move(keyer), view_options);
  std::weak_ptr<KvEventsTracking> weak = tracking;
  KvEventsSubscriber::Handlers handlers{[weak](KvEventBatch batch) {
                                          if (auto t = weak.lock()) t->OnBatch(batch);
                                        },
                                        [weak](std::string reason) {
                                          if (auto t = weak.lock()) t->OnReset(reason);
                                        }};
  // The union starts from the estimate as it is now, so it must exist before any batch arrives.
  kv_tracking_ = std::move(tracking);
  Result<std::unique_ptr<KvEventsSubscriber>> sub =
      KvEventsSubscriber::Start(std::move(options), std::move(post), std::move(handlers));
  if (!sub.ok()) {
    kv_tracking_.reset();
    return sub.status();
  }
  kv_subscriber_ = std::move(sub).value();
  return OkStatus();
}

}  // namespace hearsay::upstream
