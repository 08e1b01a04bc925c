// `local`: serves every request at the node where it enters. The no-forwarding baseline.
#pragma once

#include <memory>

#include "hearsay/route/policy.h"

namespace hearsay::route {

// A new `local` policy. It keeps no state.
std::unique_ptr<Policy> NewLocalPolicy();

}  // namespace hearsay::route
