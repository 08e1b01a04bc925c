// `sgl-cache-aware`: the SGLang Model Gateway's cache-aware policy, as a simulator baseline.
//
// A central gateway keeps an approximate radix tree of what each worker holds, fed only by its
// own routing decisions (never by the engines), and counts the requests it has in flight to each
// worker. For every request:
//   1. Load: loads are the gateway's in-flight counts. When max - min > balance_abs_threshold
//      AND max > balance_rel_threshold × min, it sends the request to the least loaded worker
//      (the first one, on ties) and still inserts the prompt into that worker's tree.
//   2. Otherwise it finds the longest prefix of the prompt in the tree. When matched / prompt
//      tokens > cache_threshold it sends the request to a worker that holds that prefix; else to
//      the worker with the smallest share of the tree ("most cache room"). Either way the prompt
//      is inserted into the chosen worker's tree.
//   3. Every eviction_interval (on the policy's own clock, the request times), each worker whose
//      share exceeds max_tree_tokens loses its least recently used leaves until it fits.
// Granularity: the gateway's tree holds characters; ours holds the block key chain, so matches
// are counted in whole blocks (PeerParams in policy_options.h; sources in docs/peers.md).
//
// Thread-safety: none (one router's thread).
#pragma once

#include <memory>

#include "hearsay/route/policy.h"
#include "hearsay/route/policy_options.h"

namespace hearsay::route {

std::unique_ptr<Policy> NewSglCacheAwarePolicy(const PeerParams& params);

}  // namespace hearsay::route
