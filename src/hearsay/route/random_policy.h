// `random`: sends each request to a uniformly random usable member, self included. A load
// balancer that knows nothing of caches or load.
#pragma once

#include <memory>

#include "hearsay/route/policy.h"

namespace hearsay::route {

// A new `random` policy. It keeps no state; randomness comes from the Rng passed to Choose().
std::unique_ptr<Policy> NewRandomPolicy();

}  // namespace hearsay::route
