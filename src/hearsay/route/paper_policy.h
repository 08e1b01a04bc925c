// `paper`: the scheme of "Towards Distributed Inference of LLMs on a P2P Network" (2026).
//
// Sends each request to the usable member with the longest estimated prefix match
// (Candidate::cached_tokens; exact for self, gossiped for peers), skipping members that advertise
// overload, with ties broken at random (self takes part in the draw). It serves locally when no
// member that is not overloaded holds any of the prefix, or when every usable member is
// overloaded. It ignores network delay and queue length: the two weaknesses `hearsay` fixes.
#pragma once

#include <memory>

#include "hearsay/route/policy.h"

namespace hearsay::route {

// A new `paper` policy. It keeps no state.
std::unique_ptr<Policy> NewPaperPolicy();

}  // namespace hearsay::route
