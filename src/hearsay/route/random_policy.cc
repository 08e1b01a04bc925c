#include "hearsay/route/random_policy.h"

#include "hearsay/route/pick.h"

namespace hearsay::route {
namespace {

class RandomPolicy final : public Policy {
 public:
  std::string_view name() const override { return "random"; }

 protected:
  Decision DoChoose(const RouteRequest&, std::span<const Candidate> candidates, int,
                    Rng& rng) override {
    const int i = PickUniform(
        candidates, [](const Candidate& c, size_t) { return IsUsable(c); }, rng);
    return DecideFor(candidates[i], Reason::kLoadBalance);
  }
};

}  // namespace

std::unique_ptr<Policy> NewRandomPolicy() { return std::make_unique<RandomPolicy>(); }

}  // namespace hearsay::route
