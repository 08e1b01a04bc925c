// Fuzz target: the decoders of untrusted upstream output (stream chunks, error bodies, /slots,
// request rewriting) must never crash, whatever the bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hearsay/upstream/upstream_response.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto chunk = hearsay::upstream::ParseUpstreamChunk(text);
  if (chunk.ok() && chunk.value().cached_tokens && chunk.value().prompt_tokens) {
    // Counts are plain values: reading them must be safe.
    volatile uint32_t sum = *chunk.value().cached_tokens + *chunk.value().prompt_tokens;
    (void)sum;
  }
  (void)hearsay::upstream::UpstreamErrorMessage(text);
  (void)hearsay::upstream::ParseSlots(text);
  (void)hearsay::upstream::RewriteRequestBody(text, true, "m");
  (void)hearsay::upstream::PromptText(text);
  return 0;
}
