#include "hearsay/route/policy.h"

namespace hearsay::route {

std::string_view ReasonName(Reason reason) {
  switch (reason) {
    case Reason::kHopForced:
      return "hop-forced";
    case Reason::kNoCandidate:
      return "no-candidate";
    case Reason::kLocalPolicy:
      return "local-policy";
    case Reason::kLoadBalance:
      return "load-balance";
    case Reason::kLongestMatch:
      return "longest-match";
    case Reason::kNoMatch:
      return "no-match";
    case Reason::kAllOverloaded:
      return "all-overloaded";
    case Reason::kLowestCost:
      return "lowest-cost";
    case Reason::kNearTie:
      return "near-tie";
  }
  return "unknown";
}

Decision ServeLocally(const RouteRequest& request, Reason reason) {
  Decision d;
  d.slot = request.entry_slot;
  d.reason = reason;
  return d;
}

Decision Policy::Choose(const RouteRequest& request, std::span<const Candidate> candidates,
                        Rng& rng) {
  if (request.forwarded) return ServeLocally(request, Reason::kHopForced);
  int self = -1;
  bool any_usable = false;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    if (c.is_self && self < 0) self = static_cast<int>(i);
    // Self is always usable: the entry node is alive by definition.
    any_usable |= c.usable || c.is_self;
  }
  if (!any_usable) return ServeLocally(request, Reason::kNoCandidate);
  return DoChoose(request, candidates, self, rng);
}

}  // namespace hearsay::route
