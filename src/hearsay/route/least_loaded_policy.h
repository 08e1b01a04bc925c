// `least-loaded`: sends each request to the usable member with the fewest outstanding requests
// (queued + running by its last report, plus what this node sent it since), ties at random.
// A load balancer that knows nothing of caches.
#pragma once

#include <memory>

#include "hearsay/route/policy.h"
#include "hearsay/route/policy_options.h"

namespace hearsay::route {

// A new `least-loaded` policy; uses options.sent_horizon.
std::unique_ptr<Policy> NewLeastLoadedPolicy(const PolicyOptions& options);

}  // namespace hearsay::route
