#include "hearsay/route/least_loaded_policy.h"

#include <limits>

#include "hearsay/route/pick.h"
#include "hearsay/route/sent_ledger.h"

namespace hearsay::route {
namespace {

class LeastLoadedPolicy final : public SentCountingPolicy {
 public:
  explicit LeastLoadedPolicy(const PolicyOptions& options) : SentCountingPolicy(options) {}

  std::string_view name() const override { return "least-loaded"; }

 protected:
  Decision DoChoose(const RouteRequest& request, std::span<const Candidate> candidates, int,
                    Rng& rng) override {
    uint64_t best = std::numeric_limits<uint64_t>::max();
    for (const Candidate& c : candidates) {
      if (IsUsable(c)) {
        best = std::min(best, Outstanding(c, request.now));
      }
    }
    const int i = PickUniform(
        candidates,
        [&](const Candidate& c, size_t) {
          return IsUsable(c) && Outstanding(c, request.now) == best;
        },
        rng);
    return DecideFor(candidates[i], Reason::kLoadBalance);
  }
};

}  // namespace

std::unique_ptr<Policy> NewLeastLoadedPolicy(const PolicyOptions& options) {
  return std::make_unique<LeastLoadedPolicy>(options);
}

}  // namespace hearsay::route
