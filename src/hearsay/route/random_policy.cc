#include "hearsay/route/random_policy.h"

#include "hearsay/route/pick.h"

namespace hearsay::route {
namespace {

class RandomPolicy final : public Policy {
 public:
  explicit RandomPolicy(std::optional<uint64_t> own_seed) {
    if (own_seed) own_rng_.emplace(*own_seed);
  }
  std::string_view name() const override { return "random"; }

 protected:
  Decision DoChoose(const RouteRequest&, std::span<const Candidate> candidates, int,
                    Rng& rng) override {
    Rng& source = own_rng_ ? *own_rng_ : rng;
    const int i = PickUniform(
        candidates, [](const Candidate& c, size_t) { return IsUsable(c); }, source);
    return DecideFor(candidates[i], Reason::kLoadBalance);
  }

 private:
  std::optional<Rng> own_rng_;
};

}  // namespace

std::unique_ptr<Policy> NewRandomPolicy(std::optional<uint64_t> own_seed) {
  return std::make_unique<RandomPolicy>(own_seed);
}

}  // namespace hearsay::route
