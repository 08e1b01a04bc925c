// The vocabulary shared by the prefix-cache core and the gossip layer: block keys and the events
// a cache index emits when it gains or loses a block.
#pragma once

#include <cstdint>

namespace hearsay::prefix {

// A 64-bit keyed, chained hash of one full block of a prompt (see block_keys.h). Equal keys mean
// equal prefixes: holding key k_i implies holding every block 0..i of that prompt.
using BlockKey = uint64_t;

// One change to a cache index. Emitted by the radix tree, applied by peer indexes.
struct BlockEvent {
  enum class Kind : uint8_t { kAdded = 0, kRemoved = 1 };

  Kind kind = Kind::kAdded;
  BlockKey key = 0;
  // 0-based position of the block in its prompt: the key covers blocks 0..block_index.
  uint32_t block_index = 0;

  friend bool operator==(const BlockEvent&, const BlockEvent&) = default;
};

}  // namespace hearsay::prefix
