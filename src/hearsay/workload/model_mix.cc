#include "hearsay/workload/model_mix.h"

#include <cmath>
#include <utility>
#include <vector>

namespace hearsay::workload {

namespace {
// The content stream of model tags (an arbitrary constant, apart from other streams' ids).
constexpr uint64_t kModelTagStream = 0x6d6f64656c746167ULL;
}  // namespace

Result<std::unique_ptr<ModelMixWorkload>> ModelMixWorkload::Create(
    const ModelMixOptions& options, std::unique_ptr<Workload> inner) {
  if (inner == nullptr) return InvalidArgumentError("model mix: no inner workload");
  if (options.models < 1 || options.models > 4096) {
    return InvalidArgumentError("model mix: models must be in [1, 4096]");
  }
  if (!std::isfinite(options.zipf_s) || options.zipf_s < 0 || options.zipf_s > 10) {
    return InvalidArgumentError("model mix: the Zipf exponent must be in [0, 10]");
  }
  return std::unique_ptr<ModelMixWorkload>(new ModelMixWorkload(options, std::move(inner)));
}

ModelMixWorkload::ModelMixWorkload(const ModelMixOptions& options, std::unique_ptr<Workload> inner)
    : options_(options), inner_(std::move(inner)), popularity_(options.models, options.zipf_s) {}

std::optional<Request> ModelMixWorkload::Next() {
  std::optional<Request> r = inner_->Next();
  if (!r || options_.models == 1) return r;
  // One draw per conversation (or per request), from a generator seeded by it: deterministic
  // whatever order the inner workload interleaves conversations in.
  const uint64_t unit = r->conversation >= 0 ? static_cast<uint64_t>(r->conversation) : r->id;
  Rng rng(MixIds(options_.seed, unit));
  r->model = static_cast<uint32_t>(popularity_.Sample(rng));
  std::vector<TokenId> prompt;
  prompt.reserve(kModelTagTokens + r->prompt.size());
  AppendContentTokens(MixIds(kModelTagStream, r->model), 0, kModelTagTokens, kDefaultVocab, prompt);
  prompt.insert(prompt.end(), r->prompt.begin(), r->prompt.end());
  r->prompt = std::move(prompt);
  r->shareable_prefix_tokens += kModelTagTokens;
  return r;
}

}  // namespace hearsay::workload
