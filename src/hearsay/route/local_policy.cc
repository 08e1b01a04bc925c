#include "hearsay/route/local_policy.h"

#include "hearsay/route/pick.h"

namespace hearsay::route {
namespace {

class LocalPolicy final : public Policy {
 public:
  std::string_view name() const override { return "local"; }

 protected:
  Decision DoChoose(const RouteRequest& request, std::span<const Candidate> candidates, int self,
                    Rng&) override {
    if (self < 0) return ServeLocally(request, Reason::kLocalPolicy);
    return DecideFor(candidates[self], Reason::kLocalPolicy);
  }
};

}  // namespace

std::unique_ptr<Policy> NewLocalPolicy() { return std::make_unique<LocalPolicy>(); }

}  // namespace hearsay::route
