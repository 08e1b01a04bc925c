// `round-robin`: sends requests to the usable members in turn, by slot order. A load balancer
// that knows nothing of caches or load.
//
// It remembers the last slot it chose and picks the usable member with the next higher slot
// (wrapping around), so members joining, leaving or failing do not reset the rotation.
#pragma once

#include <memory>

#include "hearsay/route/policy.h"

namespace hearsay::route {

// A new `round-robin` policy.
std::unique_ptr<Policy> NewRoundRobinPolicy();

}  // namespace hearsay::route
