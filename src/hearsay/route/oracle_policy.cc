#include "hearsay/route/oracle_policy.h"

#include <limits>

#include "hearsay/route/pick.h"
#include "hearsay/route/sent_ledger.h"
#include "hearsay/route/ttft_estimate.h"

namespace hearsay::route {
namespace {

class OraclePolicy final : public Policy {
 public:
  explicit OraclePolicy(const PolicyOptions& options)
      : cost_(options.cost),
        horizon_(options.sent_horizon),
        forward_overhead_ms_(options.hearsay.forward_overhead_ms),
        drain_(options.hearsay.reported_wait_drain) {}

  std::string_view name() const override { return "oracle"; }

  void OnSent(Slot slot, const RouteRequest& request) override {
    const bool same = last_id_ == request.request_id && last_slot_ == slot;
    if (same) {
      ledger_.Record(slot, request.now, last_new_tokens_, last_service_ms_);
    } else {
      ledger_.Record(slot, request.now, request.prompt_tokens,
                     cost_.PrefillMs(request.prompt_tokens, 0));
    }
  }
  void OnMemberReset(Slot slot) override { ledger_.Reset(slot); }

 protected:
  Decision DoChoose(const RouteRequest& request, std::span<const Candidate> candidates, int,
                    Rng& rng) override {
    const double prompt = request.prompt_tokens;
    const auto price = [&](const Candidate& c) {
      const auto unsent =
          ledger_.Unreported(c.slot, request.now, c.load.age, c.one_way_delay, horizon_);
      return DelayMs(c, forward_overhead_ms_) + WaitMs(cost_, c, unsent, drain_) +
             PrefillPartMs(cost_, c, prompt, c.cached_tokens);
    };
    double best = std::numeric_limits<double>::infinity();
    for (const Candidate& c : candidates) {
      if (IsUsable(c)) best = std::min(best, price(c));
    }
    const int i = PickUniform(
        candidates, [&](const Candidate& c, size_t) { return IsUsable(c) && price(c) == best; },
        rng);
    if (i < 0) return ServeLocally(request, Reason::kNoCandidate);  // every price overflowed
    const Candidate& chosen = candidates[i];
    last_id_ = request.request_id;
    last_slot_ = chosen.slot;
    last_new_tokens_ =
        request.prompt_tokens - std::min(request.prompt_tokens, chosen.cached_tokens);
    last_service_ms_ = PrefillPartMs(cost_, chosen, prompt, chosen.cached_tokens);
    return DecideFor(chosen, Reason::kLowestCost, best);
  }

 private:
  PrefillCostModel cost_;
  Duration horizon_;
  double forward_overhead_ms_;
  double drain_;
  SentLedger ledger_;
  uint64_t last_id_ = 0;
  Slot last_slot_ = kNoSlot;
  uint32_t last_new_tokens_ = 0;
  double last_service_ms_ = 0;
};

}  // namespace

std::unique_ptr<Policy> NewOraclePolicy(const PolicyOptions& options) {
  return std::make_unique<OraclePolicy>(options);
}

}  // namespace hearsay::route
