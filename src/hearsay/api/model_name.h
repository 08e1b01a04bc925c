// Model names: what a client may ask for, an engine may list and the pool may carry. A name is 1
// to kMaxModelNameBytes bytes of printable ASCII without spaces (0x21 to 0x7e), which covers
// every name the engines use ("meta-llama/Llama-3.1-8B-Instruct", "tiny.gguf", "sql-lora") and
// keeps control bytes and odd encodings out of logs, metrics labels and gossip.
//
// Thread-safety: pure functions.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace hearsay::api {

inline constexpr size_t kMaxModelNameBytes = 256;

// True for a byte a model name may hold.
inline bool IsModelNameByte(char c) { return c > 0x20 && c < 0x7f; }

// True for a valid model name (see the file comment).
inline bool IsValidModelName(std::string_view name) {
  return !name.empty() && name.size() <= kMaxModelNameBytes &&
         std::all_of(name.begin(), name.end(), IsModelNameByte);
}

}  // namespace hearsay::api
