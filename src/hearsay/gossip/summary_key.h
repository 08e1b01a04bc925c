// Summary keys: the cache summary names a block by the low kSummaryKeyBits bits of its 64-bit
// block key, to save wire bytes (docs/gossip.md, "Cache summary: landmarks").
//
// Contract: a peer's summary is a set of summary keys. Looking up a prompt's block means looking
// up SummaryKey(block key); a different block of that peer with the same low 48 bits is a false
// positive. Block keys are keyed hashes, so for a lookup against a peer advertising L landmarks
// the chance is L / 2^48 (L = 10^4: 3.6e-11 per lookup; 10^4 lookups per request at N = 1,024:
// 3.6e-7 per request). A false positive overstates one peer's cached prefix, which can only cost
// a cache miss on the node it sends the request to: that node computes its own prefix exactly.
//
// OriginStore applies SummaryKey to every key it is given (writes and lookups), so callers may
// pass full block keys; whoever matches against replicated keys elsewhere (the peer index) must
// apply it to its query keys. Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hearsay/prefix/block_event.h"

namespace hearsay::gossip {

inline constexpr unsigned kSummaryKeyBits = 48;
inline constexpr size_t kSummaryKeyBytes = kSummaryKeyBits / 8;
inline constexpr prefix::BlockKey kSummaryKeyMask = (prefix::BlockKey{1} << kSummaryKeyBits) - 1;

constexpr prefix::BlockKey SummaryKey(prefix::BlockKey key) { return key & kSummaryKeyMask; }

// The keys to match a prompt's block chain against peers' summaries: every `stride`-th block
// (the landmarks a peer advertises), as summary keys. Replaces *out.
inline void LandmarkQuery(std::span<const prefix::BlockKey> chain, uint32_t stride,
                          std::vector<prefix::BlockKey>* out) {
  out->clear();
  for (size_t i = 0; i < chain.size(); i += stride) out->push_back(SummaryKey(chain[i]));
}

}  // namespace hearsay::gossip
