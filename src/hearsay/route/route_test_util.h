// Builders shared by the route tests: candidates, key chains and requests. Test-only.
#pragma once

#include <cstdint>
#include <vector>

#include "hearsay/prefix/block_event.h"
#include "hearsay/route/policy.h"

namespace hearsay::route::testing {

// A chain of `blocks` keys: the first `shared` depend only on `family`, the rest also on
// `variant`, so chains of one family with different variants share exactly `shared` blocks.
inline std::vector<prefix::BlockKey> MakeChain(uint64_t family, uint64_t variant, size_t shared,
                                               size_t blocks) {
  std::vector<prefix::BlockKey> chain;
  prefix::BlockKey key = family * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < blocks; ++i) {
    const uint64_t content = i < shared ? i : (i << 32) ^ (variant + 1);
    key = (key ^ content) * 0xBF58476D1CE4E5B9ull;
    key ^= key >> 31;
    chain.push_back(key);
  }
  return chain;
}

inline Candidate SelfCandidate(Slot slot = 0, uint32_t cached = 0) {
  Candidate c;
  c.slot = slot;
  c.is_self = true;
  c.cached_tokens = cached;
  c.cache_exact = true;
  return c;
}

inline Candidate PeerCandidate(Slot slot, double one_way_ms, uint32_t cached = 0) {
  Candidate c;
  c.slot = slot;
  c.one_way_delay = FromMillis(one_way_ms);
  c.cached_tokens = cached;
  return c;
}

inline RouteRequest MakeRequest(const std::vector<prefix::BlockKey>& chain, uint64_t id = 1,
                                TimePoint now = TimePoint{}, uint32_t block_tokens = 16) {
  RouteRequest r;
  r.request_id = id;
  r.now = now;
  r.key_chain = chain;
  r.block_tokens = block_tokens;
  r.prompt_tokens = static_cast<uint32_t>(chain.size() * block_tokens);
  r.entry_slot = 0;
  return r;
}

inline TimePoint At(double ms) { return TimePoint{} + FromMillis(ms); }

}  // namespace hearsay::route::testing
