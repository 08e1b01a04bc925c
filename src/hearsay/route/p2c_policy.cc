#include "hearsay/route/p2c_policy.h"

#include "hearsay/route/pick.h"
#include "hearsay/route/sent_ledger.h"

namespace hearsay::route {
namespace {

class P2cPolicy final : public Policy {
 public:
  explicit P2cPolicy(const PolicyOptions& options) : horizon_(options.sent_horizon) {}

  std::string_view name() const override { return "p2c"; }

  void OnSent(Slot slot, const RouteRequest& request) override {
    ledger_.Record(slot, request.now, request.prompt_tokens);
  }
  void OnMemberReset(Slot slot) override { ledger_.Reset(slot); }

 protected:
  Decision DoChoose(const RouteRequest& request, std::span<const Candidate> candidates, int,
                    Rng& rng) override {
    const auto usable = [](const Candidate& c, size_t) { return IsUsable(c); };
    const int a = PickUniform(candidates, usable, rng);
    const int b = PickUniform(
        candidates, [&](const Candidate& c, size_t i) { return IsUsable(c) && int(i) != a; }, rng);
    if (b < 0) return DecideFor(candidates[a], Reason::kLoadBalance);
    const uint64_t load_a = OutstandingRequests(candidates[a], ledger_, request.now, horizon_);
    const uint64_t load_b = OutstandingRequests(candidates[b], ledger_, request.now, horizon_);
    return DecideFor(candidates[load_b < load_a ? b : a], Reason::kLoadBalance);
  }

 private:
  Duration horizon_;
  SentLedger ledger_;
};

}  // namespace

std::unique_ptr<Policy> NewP2cPolicy(const PolicyOptions& options) {
  return std::make_unique<P2cPolicy>(options);
}

}  // namespace hearsay::route
