// ModelMixWorkload: traffic for a pool serving several models, from any single-model workload.
//
// Each request of the inner workload is given a model, drawn Zipf(s) over `models` ranks (model 0
// the most popular), and its prompt starts with that model's tag (kModelTagTokens tokens of a
// content stream of its own), so every model has its own prefixes: the same MMLU subject or chat
// system prompt under two models shares no block. A chat conversation keeps one model for all of
// its turns (the draw is a function of the conversation), so its turns still extend each other.
// Arrival times and entry nodes are the inner workload's. With one model the requests pass
// through unchanged.
//
// Thread-safety: none, like every Workload.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "hearsay/env/rng.h"
#include "hearsay/workload/workload.h"

namespace hearsay::workload {

// Tokens of the tag in front of every prompt of a model (when there are two models or more).
inline constexpr uint32_t kModelTagTokens = 4;

struct ModelMixOptions {
  // Models, >= 1.
  uint32_t models = 1;
  // Zipf exponent of model popularity, >= 0 (0 = uniform).
  double zipf_s = 1.0;
  // Seeds the model draws.
  uint64_t seed = 1;
};

class ModelMixWorkload final : public Workload {
 public:
  // `inner` must not be null. INVALID_ARGUMENT for models == 0 or a bad zipf_s.
  static Result<std::unique_ptr<ModelMixWorkload>> Create(const ModelMixOptions& options,
                                                          std::unique_ptr<Workload> inner);
  std::optional<Request> Next() override;

 private:
  ModelMixWorkload(const ModelMixOptions& options, std::unique_ptr<Workload> inner);

  ModelMixOptions options_;
  std::unique_ptr<Workload> inner_;
  ZipfSampler popularity_;
};

}  // namespace hearsay::workload
