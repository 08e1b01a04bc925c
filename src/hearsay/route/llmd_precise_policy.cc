#include "hearsay/route/llmd_precise_policy.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "hearsay/route/pick.h"

namespace hearsay::route {
namespace {

class LlmdPrecisePolicy final : public Policy {
 public:
  explicit LlmdPrecisePolicy(const PeerParams& p) : p_(p) {}
  std::string_view name() const override { return "llmd-precise"; }
  std::span<const Price> LastPrices() const override { return prices_; }

 protected:
  Decision DoChoose(const RouteRequest& request, std::span<const Candidate> candidates,
                    int /*self*/, Rng& rng) override {
    const uint32_t block = std::max<uint32_t>(1, request.block_tokens);
    uint32_t min_blocks = std::numeric_limits<uint32_t>::max(), max_blocks = 0;
    uint32_t min_q = std::numeric_limits<uint32_t>::max(), max_q = 0;
    for (const Candidate& c : candidates) {
      if (!IsUsable(c)) continue;
      const uint32_t b = c.cached_tokens / block;
      if (b > 0) {
        min_blocks = std::min(min_blocks, b);
        max_blocks = std::max(max_blocks, b);
      }
      min_q = std::min(min_q, c.load.queued);
      max_q = std::max(max_q, c.load.queued);
    }
    scores_.assign(candidates.size(), -1);
    prices_.clear();
    double best = -1;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const Candidate& c = candidates[i];
      if (!IsUsable(c)) continue;
      const uint32_t b = c.cached_tokens / block;
      double prefix = 0;
      if (b > 0) {
        prefix = max_blocks == min_blocks
                     ? 1.0
                     : static_cast<double>(b - min_blocks) / (max_blocks - min_blocks);
      }
      const double used = c.load.kv_capacity_tokens == 0
                              ? 0.0
                              : std::min(1.0, static_cast<double>(c.load.kv_used_tokens) /
                                                  static_cast<double>(c.load.kv_capacity_tokens));
      const double queue =
          max_q == min_q ? 1.0 : static_cast<double>(max_q - c.load.queued) / (max_q - min_q);
      const double score = p_.llmd_prefix_weight * prefix +
                           p_.llmd_kv_utilization_weight * (1.0 - used) +
                           p_.llmd_queue_weight * queue;
      scores_[i] = score;
      best = std::max(best, score);
      Price price;
      price.slot = c.slot;
      price.credit_tokens = static_cast<double>(b) * block;
      price.cost_ms = -score;  // a score, negated so that lower is better as for the others
      prices_.push_back(price);
    }
    const int chosen = PickUniform(
        candidates, [&](const Candidate& c, size_t i) { return IsUsable(c) && scores_[i] == best; },
        rng);
    const Candidate& c = candidates[chosen];
    return DecideFor(c, c.cached_tokens >= block ? Reason::kLongestMatch : Reason::kLoadBalance);
  }

 private:
  PeerParams p_;
  std::vector<double> scores_;
  std::vector<Price> prices_;
};

}  // namespace

std::unique_ptr<Policy> NewLlmdPrecisePolicy(const PeerParams& params) {
  return std::make_unique<LlmdPrecisePolicy>(params);
}

}  // namespace hearsay::route
