// Fuzz target: an engine's /metrics page is untrusted. The reader must never crash, must refuse
// pages over its limit, and must report only finite, non-negative sums and capped counts.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hearsay/upstream/engine_metrics.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hearsay::upstream;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string_view names[] = {"a", "llamacpp:requests_deferred"};
  auto sums = SumGauges(text, names);
  if (sums.ok()) {
    if (text.size() > kMaxMetricsBytes) __builtin_trap();
    for (double s : sums.value().sums) {
      if (!(s >= 0)) __builtin_trap();
    }
  }
  for (UpstreamFlavor f : {UpstreamFlavor::kGeneric, UpstreamFlavor::kLlamaCpp,
                           UpstreamFlavor::kVllm, UpstreamFlavor::kSglang}) {
    auto q = ParseEngineQueue(f, text);
    if (q.ok() && (q.value().running > kMaxReportedRequests ||
                   q.value().waiting > kMaxReportedRequests)) {
      __builtin_trap();
    }
  }
  return 0;
}
