#include "hearsay/route/paper_policy.h"

#include "hearsay/route/pick.h"

namespace hearsay::route {
namespace {

class PaperPolicy final : public Policy {
 public:
  std::string_view name() const override { return "paper"; }

 protected:
  Decision DoChoose(const RouteRequest& request, std::span<const Candidate> candidates, int self,
                    Rng& rng) override {
    const auto eligible = [](const Candidate& c) { return IsUsable(c) && !c.load.overloaded; };
    bool any = false;
    uint32_t longest = 0;
    for (const Candidate& c : candidates) {
      if (!eligible(c)) continue;
      any = true;
      if (c.cached_tokens > longest) longest = c.cached_tokens;
    }
    const auto local = [&](Reason reason) {
      return self >= 0 ? DecideFor(candidates[self], reason) : ServeLocally(request, reason);
    };
    if (!any) return local(Reason::kAllOverloaded);
    if (longest == 0) return local(Reason::kNoMatch);
    const int i = PickUniform(
        candidates,
        [&](const Candidate& c, size_t) { return eligible(c) && c.cached_tokens == longest; }, rng);
    return DecideFor(candidates[i], Reason::kLongestMatch);
  }
};

}  // namespace

std::unique_ptr<Policy> NewPaperPolicy() { return std::make_unique<PaperPolicy>(); }

}  // namespace hearsay::route
