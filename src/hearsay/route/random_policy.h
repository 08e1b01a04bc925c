// `random`: sends each request to a uniformly random usable member, self included. A load
// balancer that knows nothing of caches or load.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "hearsay/route/policy.h"

namespace hearsay::route {

// A new `random` policy. Without `own_seed` it keeps no state and draws from the Rng passed to
// Choose(); with it, it draws from its own Rng seeded with `own_seed` and ignores the one passed,
// so its choices depend only on the seed and the candidates (PolicyOptions::decision_seed).
std::unique_ptr<Policy> NewRandomPolicy(std::optional<uint64_t> own_seed = std::nullopt);

}  // namespace hearsay::route
