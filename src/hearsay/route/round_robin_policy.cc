#include "hearsay/route/round_robin_policy.h"

#include "hearsay/route/pick.h"

namespace hearsay::route {
namespace {

class RoundRobinPolicy final : public Policy {
 public:
  std::string_view name() const override { return "round-robin"; }

 protected:
  Decision DoChoose(const RouteRequest&, std::span<const Candidate> candidates, int,
                    Rng&) override {
    // The usable member with the smallest slot above last_, else the smallest slot overall.
    int next = -1;
    int first = -1;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const Candidate& c = candidates[i];
      if (!IsUsable(c)) continue;
      if (first < 0 || c.slot < candidates[first].slot) first = static_cast<int>(i);
      if (c.slot > last_ && (next < 0 || c.slot < candidates[next].slot)) {
        next = static_cast<int>(i);
      }
    }
    const Candidate& chosen = candidates[next >= 0 ? next : first];
    last_ = chosen.slot;
    return DecideFor(chosen, Reason::kLoadBalance);
  }

 private:
  Slot last_ = kNoSlot;
};

}  // namespace

std::unique_ptr<Policy> NewRoundRobinPolicy() { return std::make_unique<RoundRobinPolicy>(); }

}  // namespace hearsay::route
