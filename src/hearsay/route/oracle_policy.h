// `oracle`: a central router with exact, instant knowledge of every cache and queue.
//
// It prices every member with the same expected-TTFT model as `hearsay` (ttft_estimate.h), but
// trusts Candidate::cached_tokens and the load fully: no confidence, no staleness, no busy
// discount, no lease, and it picks the exact minimum (exact ties at random). Requests it sent
// that have not reached their member yet are counted as queued there (SentLedger with the
// report age the simulator gives, normally 0).
//
// It is the upper bound no decentralized policy can beat, and it only exists in the simulator,
// which fills every candidate with exact inputs; the registry refuses to build it for the daemon.
#pragma once

#include <memory>

#include "hearsay/route/policy.h"
#include "hearsay/route/policy_options.h"

namespace hearsay::route {

// A new `oracle` policy; uses options.cost, options.sent_horizon,
// options.hearsay.forward_overhead_ms and options.hearsay.reported_wait_drain (so that it prices
// a member exactly like `hearsay`).
std::unique_ptr<Policy> NewOraclePolicy(const PolicyOptions& options);

}  // namespace hearsay::route
