// `llmd-precise`: llm-d's inference scheduler (its endpoint picker) with the scorers of its
// precise-prefix-cache-aware guide, as a simulator baseline.
//
// Every usable endpoint gets a weighted sum of three scores in [0, 1] and the highest sum wins
// (max-score picker, ties at random):
//   precise prefix (weight 3): the endpoint's longest run of the prompt's blocks in an index fed
//     by the engines' KV events (Candidate::cached_tokens, filled by the simulator's router);
//     min-max normalized over the endpoints that hold at least one block (all 1 when equal),
//     0 for the others;
//   KV-cache utilization (weight 2): 1 - used / capacity from the scraped metrics
//     (LoadView::kv_used_tokens / kv_capacity_tokens; capacity 0 counts as empty);
//   queue (weight 2): (max - q) / (max - min) of the scraped waiting-queue depths
//     (LoadView::queued), all 1 when equal.
// The policy keeps no state: the router's view (event index, metrics scraped every 50 ms) is in
// the candidates.
#pragma once

#include <memory>

#include "hearsay/route/policy.h"
#include "hearsay/route/policy_options.h"

namespace hearsay::route {

std::unique_ptr<Policy> NewLlmdPrecisePolicy(const PeerParams& params);

}  // namespace hearsay::route
