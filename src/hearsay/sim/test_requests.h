// Requests for the node tests that run on a SimCluster: prompts built from a shared part (the
// prefix a cache can hold) and a part of their own, each a seeded, repeatable token sequence.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "hearsay/env/peer_client.h"

namespace hearsay::sim::test_requests {

// `shared_len` tokens drawn from `shared_seed` (alike in every prompt with that seed), then
// `own_len` tokens drawn from `own_seed`.
inline std::vector<uint32_t> Prompt(uint32_t shared_seed, uint32_t shared_len, uint32_t own_seed,
                                    uint32_t own_len) {
  std::vector<uint32_t> p;
  for (uint32_t i = 0; i < shared_len; ++i) {
    p.push_back(2000 + (shared_seed * 7919 + i * 31) % 20000);
  }
  for (uint32_t i = 0; i < own_len; ++i) p.push_back(2000 + (own_seed * 104729 + i * 17) % 20000);
  return p;
}

// A request for one output token; `forwarded` makes the node serve it itself.
inline PeerRequest Req(uint64_t id, std::vector<uint32_t> prompt, bool forwarded = false) {
  PeerRequest r;
  r.id = id;
  r.prompt = std::move(prompt);
  r.max_output_tokens = 1;
  r.forwarded = forwarded;
  return r;
}

}  // namespace hearsay::sim::test_requests
