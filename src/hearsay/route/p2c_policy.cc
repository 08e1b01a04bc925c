#include "hearsay/route/p2c_policy.h"

#include "hearsay/route/pick.h"
#include "hearsay/route/sent_ledger.h"

namespace hearsay::route {
namespace {

class P2cPolicy final : public SentCountingPolicy {
 public:
  explicit P2cPolicy(const PolicyOptions& options) : SentCountingPolicy(options) {}

  std::string_view name() const override { return "p2c"; }

 protected:
  Decision DoChoose(const RouteRequest& request, std::span<const Candidate> candidates, int,
                    Rng& rng) override {
    const auto usable = [](const Candidate& c, size_t) { return IsUsable(c); };
    const int a = PickUniform(candidates, usable, rng);
    const int b = PickUniform(
        candidates, [&](const Candidate& c, size_t i) { return IsUsable(c) && int(i) != a; }, rng);
    if (b < 0) return DecideFor(candidates[a], Reason::kLoadBalance);
    const uint64_t load_a = Outstanding(candidates[a], request.now);
    const uint64_t load_b = Outstanding(candidates[b], request.now);
    return DecideFor(candidates[load_b < load_a ? b : a], Reason::kLoadBalance);
  }
};

}  // namespace

std::unique_ptr<Policy> NewP2cPolicy(const PolicyOptions& options) {
  return std::make_unique<P2cPolicy>(options);
}

}  // namespace hearsay::route
