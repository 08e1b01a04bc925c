// `dynamo-kv` and `dynamo-kv-approx`: NVIDIA Dynamo's KV router, as simulator baselines.
//
// For every usable worker w the router prices the request with a logit (lower is better):
//   overlap      = blocks of the prompt w holds (exact mode: Candidate::cached_tokens, which the
//                  simulator's router fills from an index fed by the engines' KV events;
//                  approximate mode: the router's own prediction, below)
//   prefill      = (prompt tokens - overlap × block) + the prefill tokens of w's active requests
//   decode       = the prompt's blocks not already among w's active blocks + w's active blocks
//   logit        = overlap_score_weight × prefill / block + decode
// and picks the lowest logit (ties at random) at temperature 0, or samples
// p ∝ exp(-normalized logit / temperature) with logits normalized to [0, 1] above 0.
// Active requests are the router's own bookkeeping: a request counts from its dispatch, its
// prefill tokens until its first token (OnOutcome), its blocks until it finishes (OnFinished).
// Replica sync feeds other replicas' decisions in through OnPeerDecision.
// Approximate mode (no KV events): each decision predicts that the chosen worker holds the
// prompt's blocks for `dynamo_approx_ttl`; overlap is the longest unexpired predicted prefix.
//
// Thread-safety: none (one router's thread).
#pragma once

#include <memory>

#include "hearsay/route/policy.h"
#include "hearsay/route/policy_options.h"

namespace hearsay::route {

std::unique_ptr<Policy> NewDynamoKvPolicy(const PeerParams& params, bool approximate);

}  // namespace hearsay::route
