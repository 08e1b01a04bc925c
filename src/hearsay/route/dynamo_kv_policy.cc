#include "hearsay/route/dynamo_kv_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <vector>

#include "hearsay/route/pick.h"

namespace hearsay::route {
namespace {

class DynamoKvPolicy final : public Policy {
 public:
  DynamoKvPolicy(const PeerParams& p, bool approximate) : p_(p), approximate_(approximate) {}
  std::string_view name() const override { return approximate_ ? "dynamo-kv-approx" : "dynamo-kv"; }

  void OnOutcome(const Outcome& outcome) override {
    auto it = active_.find(outcome.request_id);
    if (it == active_.end() || it->second.prefill_done) return;
    it->second.prefill_done = true;
    Worker& w = workers_[it->second.slot];
    w.prefill_tokens -= std::min(w.prefill_tokens, it->second.prefill_tokens);
  }

  void OnFinished(Slot /*slot*/, uint64_t request_id) override {
    auto it = active_.find(request_id);
    if (it == active_.end()) return;
    Request& r = it->second;
    Worker& w = workers_[r.slot];
    if (!r.prefill_done) w.prefill_tokens -= std::min(w.prefill_tokens, r.prefill_tokens);
    for (prefix::BlockKey k : r.blocks) {
      auto b = w.blocks.find(k);
      if (b != w.blocks.end() && --b->second == 0) w.blocks.erase(b);
    }
    active_.erase(it);
  }

  void OnPeerDecision(Slot slot, const RouteRequest& request, uint32_t cached_tokens) override {
    Record(slot, request, cached_tokens);
  }

  void OnMemberReset(Slot slot) override {
    std::erase_if(active_, [&](const auto& kv) { return kv.second.slot == slot; });
    if (slot < workers_.size()) workers_[slot] = Worker{};
  }

  std::span<const Price> LastPrices() const override { return prices_; }

 protected:
  Decision DoChoose(const RouteRequest& request, std::span<const Candidate> candidates,
                    int /*self*/, Rng& rng) override {
    const double block = std::max<uint32_t>(1, request.block_tokens);
    prices_.clear();
    logits_.assign(candidates.size(), std::numeric_limits<double>::infinity());
    overlap_.assign(candidates.size(), 0);
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const Candidate& c = candidates[i];
      if (!IsUsable(c)) continue;
      const Worker* w = c.slot < workers_.size() ? &workers_[c.slot] : nullptr;
      const uint32_t overlap_blocks =
          approximate_ ? PredictedBlocks(c.slot, request)
                       : std::min<uint32_t>(c.cached_tokens, request.prompt_tokens) /
                             std::max<uint32_t>(1, request.block_tokens);
      const double cached = std::min<double>(request.prompt_tokens, overlap_blocks * block);
      overlap_[i] = static_cast<uint32_t>(cached);
      const double prefill =
          (request.prompt_tokens - cached) + (w ? static_cast<double>(w->prefill_tokens) : 0);
      double new_blocks = 0;
      for (prefix::BlockKey k : request.key_chain) {
        if (w == nullptr || !w->blocks.contains(k)) new_blocks += 1;
      }
      const double decode = new_blocks + (w ? static_cast<double>(w->blocks.size()) : 0);
      const double logit = p_.dynamo_overlap_score_weight * prefill / block + decode;
      logits_[i] = logit;
      lo = std::min(lo, logit);
      hi = std::max(hi, logit);
      Price price;
      price.slot = c.slot;
      price.credit_tokens = cached;
      price.cost_ms = logit;  // in Dynamo's units (blocks), not ms
      prices_.push_back(price);
    }
    int chosen = -1;
    if (p_.dynamo_temperature <= 0 || hi == lo) {
      // Temperature 0: the lowest logit; equal logits (at any temperature): uniform.
      chosen = PickUniform(
          candidates, [&](const Candidate& c, size_t i) { return IsUsable(c) && logits_[i] == lo; },
          rng);
    } else {
      double total = 0;
      weights_.assign(candidates.size(), 0);
      for (size_t i = 0; i < candidates.size(); ++i) {
        if (!std::isfinite(logits_[i])) continue;
        weights_[i] = std::exp(-((logits_[i] - lo) / (hi - lo)) / p_.dynamo_temperature);
        total += weights_[i];
      }
      double u = rng.UniformDouble() * total;
      for (size_t i = 0; i < candidates.size(); ++i) {
        if (weights_[i] <= 0) continue;
        chosen = static_cast<int>(i);
        if (u < weights_[i]) break;
        u -= weights_[i];
      }
    }
    const Candidate& c = candidates[chosen];
    Record(c.slot, request, overlap_[chosen]);
    Decision d = DecideFor(c, overlap_[chosen] > 0 ? Reason::kLongestMatch : Reason::kLowestCost);
    d.estimated_cached_tokens = overlap_[chosen];
    return d;
  }

 private:
  struct Request {
    Slot slot = 0;
    uint64_t prefill_tokens = 0;
    bool prefill_done = false;
    std::vector<prefix::BlockKey> blocks;
  };
  struct Worker {
    uint64_t prefill_tokens = 0;
    // Active blocks, deduplicated (a block shared by two active requests counts once).
    std::unordered_map<prefix::BlockKey, uint32_t> blocks;
    // Approximate mode: predicted blocks and when each prediction expires.
    std::unordered_map<prefix::BlockKey, TimePoint> predicted;
  };

  uint32_t PredictedBlocks(Slot slot, const RouteRequest& request) const {
    if (slot >= workers_.size()) return 0;
    const auto& predicted = workers_[slot].predicted;
    uint32_t n = 0;
    for (prefix::BlockKey k : request.key_chain) {
      const auto it = predicted.find(k);
      if (it == predicted.end() || it->second <= request.now) break;
      ++n;
    }
    return n;
  }

  void Record(Slot slot, const RouteRequest& request, uint32_t cached_tokens) {
    if (slot >= workers_.size()) workers_.resize(slot + 1);
    Worker& w = workers_[slot];
    Request& r = active_[request.request_id];
    if (!r.blocks.empty()) return;  // already recorded (a replica's echo)
    r.slot = slot;
    r.prefill_tokens = request.prompt_tokens - std::min(request.prompt_tokens, cached_tokens);
    r.blocks.assign(request.key_chain.begin(), request.key_chain.end());
    w.prefill_tokens += r.prefill_tokens;
    for (prefix::BlockKey k : r.blocks) ++w.blocks[k];
    if (approximate_) {
      const TimePoint expiry = request.now + p_.dynamo_approx_ttl;
      for (prefix::BlockKey k : r.blocks) w.predicted[k] = expiry;
      // Expired predictions are dropped now and then so the map stays the size of the TTL window.
      if (++records_since_prune_ >= 4096) {
        records_since_prune_ = 0;
        for (Worker& x : workers_) {
          std::erase_if(x.predicted, [&](const auto& kv) { return kv.second <= request.now; });
        }
      }
    }
  }

  PeerParams p_;
  bool approximate_;
  std::vector<Worker> workers_;
  std::unordered_map<uint64_t, Request> active_;
  uint64_t records_since_prune_ = 0;
  std::vector<double> logits_;
  std::vector<double> weights_;
  std::vector<uint32_t> overlap_;
  std::vector<Price> prices_;
};

}  // namespace

std::unique_ptr<Policy> NewDynamoKvPolicy(const PeerParams& params, bool approximate) {
  return std::make_unique<DynamoKvPolicy>(params, approximate);
}

}  // namespace hearsay::route
