// HostedOpenAiEngine: see hosted_openai_engine.h.
#include "hearsay/upstream/hosted_openai_engine.h"

#include <utility>

namespace hearsay::upstream {

Result<std::unique_ptr<HostedOpenAiEngine>> MakeHostedOpenAiEngine(
    Scheduler& scheduler, boost::asio::io_context& io, HttpUpstreamTransport::PostToCore post,
    prefix::BlockKeyer keyer, std::string_view upstream_url, OpenAiEngineOptions options) {
  if (!post) return InvalidArgumentError("openai engine: no post-to-core hook");
  Result<UpstreamUrl> url = ParseUpstreamUrl(upstream_url);
  if (!url.ok()) return url.status();
  if (Status s = ValidateOpenAiEngineOptions(options); !s.ok()) return s;
  auto client = std::make_unique<http::Client>(io);
  auto transport =
      std::make_unique<HttpUpstreamTransport>(std::move(post), *client, std::move(url).value());
  Result<std::unique_ptr<OpenAiEngine>> engine =
      OpenAiEngine::Create(scheduler, *transport, std::move(keyer), std::move(options));
  if (!engine.ok()) return engine.status();
  return std::make_unique<HostedOpenAiEngine>(std::move(client), std::move(transport),
                                              std::move(engine).value());
}

}  // namespace hearsay::upstream
