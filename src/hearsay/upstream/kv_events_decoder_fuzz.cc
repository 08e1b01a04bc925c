// Fuzz target: vLLM KV-event batches arrive from the network (a ZMQ PUB socket anyone on the path
// can write to). Decoding any bytes must end in a batch or a clear error, never a crash, a hang
// or an allocation out of proportion to the input. Input: 8 bytes of sequence frame, then the
// msgpack payload.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

#include "hearsay/upstream/kv_events_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::string_view seq = in.substr(0, 8);
  const std::string_view payload = in.size() > 8 ? in.substr(8) : std::string_view();
  auto batch = hearsay::upstream::DecodeKvEventBatch(seq, payload);
  if (batch.ok()) {
    // A decoded batch keeps its promises: stored tokens fill the blocks they name.
    for (const auto& e : batch.value().events) {
      if (const auto* s = std::get_if<hearsay::upstream::KvBlockStored>(&e)) {
        if (s->block_size == 0 || s->token_ids.size() != s->block_hashes.size() * s->block_size) {
          __builtin_trap();
        }
      }
    }
  }
  return 0;
}
