// Fuzz target: the decoders of an engine's /tokenize and /apply-template answers, and the builders
// fed with untrusted client messages, must never crash whatever the bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hearsay/upstream/tokenize_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hearsay::upstream;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto tokens = ParseTokenizeResponse(text, 1 << 16);
  if (tokens.ok() && tokens.value().size() > (1 << 16)) __builtin_trap();
  auto prompt = ParseApplyTemplateResponse(text, 1 << 16);
  if (prompt.ok() && prompt.value().size() > (1 << 16)) __builtin_trap();
  (void)MessagesJson(text);
  for (UpstreamFlavor f : {UpstreamFlavor::kGeneric, UpstreamFlavor::kLlamaCpp,
                           UpstreamFlavor::kVllm, UpstreamFlavor::kSglang}) {
    (void)TokenizePromptCall(f, "m", text);
    (void)TokenizeMessagesCall(f, "m", text);
  }
  return 0;
}
