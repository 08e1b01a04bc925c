// Fuzz target: an engine's /v1/models page is untrusted. The reader must never crash, must refuse
// pages over its limit, and every model it returns must keep within the bounds of served_models.h.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hearsay/upstream/served_models.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hearsay::upstream;
  const std::string_view page(reinterpret_cast<const char*>(data), size);
  auto models = ParseServedModels(page);
  if (!models.ok()) return 0;
  if (page.size() > kMaxModelsPageBytes) __builtin_trap();
  if (models->models.empty() || models->models.size() > kMaxServedModels) __builtin_trap();
  for (const ServedModel& m : models->models) {
    if (!IsValidModelName(m.name) || m.adapters.size() > kMaxAdaptersPerModel) __builtin_trap();
    for (const auto& a : m.adapters) {
      if (!IsValidModelName(a)) __builtin_trap();
    }
  }
  (void)DescribeServedModels(*models);
  return 0;
}
