// `p2c`: power of two choices. Draws two distinct usable members at random and sends to the one
// with fewer outstanding requests (as in least-loaded; the first drawn on a tie). A load balancer
// that knows nothing of caches, and herds less than least-loaded on a stale view.
#pragma once

#include <memory>

#include "hearsay/route/policy.h"
#include "hearsay/route/policy_options.h"

namespace hearsay::route {

// A new `p2c` policy; uses options.sent_horizon.
std::unique_ptr<Policy> NewP2cPolicy(const PolicyOptions& options);

}  // namespace hearsay::route
