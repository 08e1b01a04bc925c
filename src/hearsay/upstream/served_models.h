// The models an inference server serves, as its GET /v1/models lists them (the OpenAI list shape,
// `{"object": "list", "data": [{"id": ...}, ...]}`), read the same way for each engine:
//   - llama.cpp server: one entry per loaded model; its training context in `meta.n_ctx_train`.
//   - vLLM: the base model with `max_model_len`, and each LoRA adapter as another entry whose
//     `parent` names the base model it applies to.
//   - SGLang: like vLLM (`max_model_len`; adapters, where listed, with a `parent`).
// An entry with a string `parent` is an adapter of that parent; every other entry is a model.
//
// The page is untrusted bytes from the network. It is refused whole (INVALID_ARGUMENT) when over
// kMaxModelsPageBytes, not JSON, not of the list shape, or longer than kMaxModelEntries entries.
// Single entries that break a bound are skipped and counted, never silently: a name that is empty,
// longer than kMaxModelNameBytes or holds a byte outside printable ASCII; an adapter whose parent
// is not listed; more than kMaxServedModels models; more than kMaxAdaptersPerModel adapters of one
// model. JSON nesting is cut at 64 levels (untrusted_json.h).
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/api/model_name.h"
#include "hearsay/common/status.h"

namespace hearsay::upstream {

inline constexpr size_t kMaxModelsPageBytes = 1 << 20;
inline constexpr size_t kMaxModelEntries = 8192;
inline constexpr size_t kMaxModelNameBytes = api::kMaxModelNameBytes;
inline constexpr size_t kMaxServedModels = 8;
inline constexpr size_t kMaxAdaptersPerModel = 256;

struct ServedModel {
  std::string name;
  // The longest context the engine reports for it, in its tokens; 0 when it reports none.
  uint32_t context_length = 0;
  // LoRA adapters the engine lists for it, in page order.
  std::vector<std::string> adapters;

  friend bool operator==(const ServedModel&, const ServedModel&) = default;
};

struct ServedModels {
  // In page order, without repeats.
  std::vector<ServedModel> models;
  // Entries skipped, by reason (see the file comment).
  size_t bad_names = 0;
  size_t orphan_adapters = 0;
  size_t models_over_bound = 0;
  size_t adapters_over_bound = 0;

  size_t skipped() const {
    return bad_names + orphan_adapters + models_over_bound + adapters_over_bound;
  }
  friend bool operator==(const ServedModels&, const ServedModels&) = default;
};

// True for a name the pool can carry (api/model_name.h).
using api::IsValidModelName;

// Reads a /v1/models page (see the file comment). A page that lists no valid model is NOT_FOUND.
Result<ServedModels> ParseServedModels(std::string_view page);

// One line for logs: "m1 (ctx 8192, 2 adapters), m2", with the skipped counts if any.
std::string DescribeServedModels(const ServedModels& models);

}  // namespace hearsay::upstream
