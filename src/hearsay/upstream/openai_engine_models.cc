// OpenAiEngine: what the engine serves, read from its GET /v1/models. See openai_engine.h.
#include <spdlog/spdlog.h>

#include "hearsay/upstream/openai_engine.h"
#include "hearsay/upstream/served_models.h"

namespace hearsay::upstream {

void OpenAiEngine::PollModels() {
  if (models_call_) return;
  Get(models_call_, "/v1/models", std::chrono::seconds(5), kMaxModelsPageBytes,
      [this](GetResult r) {
        Result<ServedModels> models =
            !r.transport.ok() ? Result<ServedModels>(r.transport)
            : r.http_status != 200
                ? Result<ServedModels>(UnavailableError("HTTP " + std::to_string(r.http_status)))
            : r.too_long ? Result<ServedModels>(InvalidArgumentError("page too long"))
                         : ParseServedModels(r.body);
        if (!models.ok()) {
          // Kept: an engine restarting is not an engine serving something else.
          if (stats_.models_poll_failures++ == 0) {
            spdlog::warn("openai engine: GET /v1/models failed ({}); {}", models.status().message(),
                         served_models_ ? "keeping the last list" : "no model read yet");
          }
          return;
        }
        ++stats_.models_polls;
        if (served_models_ && *served_models_ == *models) return;
        ++stats_.models_changes;
        const std::string what = DescribeServedModels(*models);
        if (models->skipped() > 0) {
          spdlog::warn("openai engine: the upstream serves {}", what);
        } else {
          spdlog::info("openai engine: the upstream serves {}", what);
        }
        served_models_ = std::move(models).value();
        if (on_served_models_) on_served_models_(*served_models_);
      });
}

}  // namespace hearsay::upstream
