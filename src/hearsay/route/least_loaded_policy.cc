#include "hearsay/route/least_loaded_policy.h"

#include <limits>

#include "hearsay/route/pick.h"
#include "hearsay/route/sent_ledger.h"

namespace hearsay::route {
namespace {

class LeastLoadedPolicy final : public Policy {
 public:
  explicit LeastLoadedPolicy(const PolicyOptions& options) : horizon_(options.sent_horizon) {}

  std::string_view name() const override { return "least-loaded"; }

  void OnSent(Slot slot, const RouteRequest& request) override {
    ledger_.Record(slot, request.now, request.prompt_tokens);
  }
  void OnMemberReset(Slot slot) override { ledger_.Reset(slot); }

 protected:
  Decision DoChoose(const RouteRequest& request, std::span<const Candidate> candidates, int,
                    Rng& rng) override {
    uint64_t best = std::numeric_limits<uint64_t>::max();
    for (const Candidate& c : candidates) {
      if (IsUsable(c)) {
        best = std::min(best, OutstandingRequests(c, ledger_, request.now, horizon_));
      }
    }
    const int i = PickUniform(
        candidates,
        [&](const Candidate& c, size_t) {
          return IsUsable(c) && OutstandingRequests(c, ledger_, request.now, horizon_) == best;
        },
        rng);
    return DecideFor(candidates[i], Reason::kLoadBalance);
  }

 private:
  Duration horizon_;
  SentLedger ledger_;
};

}  // namespace

std::unique_ptr<Policy> NewLeastLoadedPolicy(const PolicyOptions& options) {
  return std::make_unique<LeastLoadedPolicy>(options);
}

}  // namespace hearsay::route
