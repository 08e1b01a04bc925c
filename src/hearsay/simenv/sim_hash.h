// Hashing for simulation traces: a cheap order-sensitive fold of 64-bit values and a byte hash.
//
// These define trace hashes that tests compare across runs of the same binary, so they must be
// deterministic (no pointers, no per-process seeds) but need not be stable across versions.
// Thread-safety: pure functions.
#pragma once

#include <xxhash.h>

#include <cstdint>
#include <span>
#include <string_view>

namespace hearsay::simenv {

// The trace hash of an empty run.
inline constexpr uint64_t kTraceSeed = 0x243f6a8885a308d3ULL;

// Folds `value` into `acc`. Order-sensitive: folding a then b differs from b then a.
inline uint64_t FoldHash(uint64_t acc, uint64_t value) {
  // A 64-bit finalizer (xor-shift-multiply) over acc and value; every input bit reaches every
  // output bit, so single-event differences do not cancel out.
  uint64_t x = (acc ^ value) + 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31) ^ (acc << 1);
}

// A 64-bit hash of `bytes` (length included).
inline uint64_t HashBytes(std::span<const uint8_t> bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}
inline uint64_t HashBytes(std::string_view s) { return XXH3_64bits(s.data(), s.size()); }

}  // namespace hearsay::simenv
