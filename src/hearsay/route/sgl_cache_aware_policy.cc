#include "hearsay/route/sgl_cache_aware_policy.h"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hearsay/route/pick.h"

namespace hearsay::route {
namespace {

class SglCacheAwarePolicy final : public Policy {
 public:
  explicit SglCacheAwarePolicy(const PeerParams& p) : p_(p) {}
  std::string_view name() const override { return "sgl-cache-aware"; }

  void OnFinished(Slot slot, uint64_t /*request_id*/) override {
    if (slot < in_flight_.size() && in_flight_[slot] > 0) --in_flight_[slot];
  }

  void OnMemberReset(Slot slot) override {
    if (slot < in_flight_.size()) in_flight_[slot] = 0;
    for (auto it = tree_.begin(); it != tree_.end();) {
      std::erase_if(it->second.tenants, [&](const Tenant& t) { return t.slot == slot; });
      it = it->second.tenants.empty() ? tree_.erase(it) : std::next(it);
    }
    if (slot < size_.size()) size_[slot] = 0;
  }

 protected:
  Decision DoChoose(const RouteRequest& request, std::span<const Candidate> candidates,
                    int /*self*/, Rng& rng) override {
    MaybeEvict(request.now, request.block_tokens);
    uint64_t max_load = 0, min_load = std::numeric_limits<uint64_t>::max();
    for (const Candidate& c : candidates) {
      const uint64_t l = Load(c.slot);
      max_load = std::max(max_load, l);
      min_load = std::min(min_load, l);
    }
    const bool imbalanced = max_load - min_load > p_.sgl_balance_abs_threshold &&
                            static_cast<double>(max_load) >
                                static_cast<double>(min_load) * p_.sgl_balance_rel_threshold;
    int chosen = -1;
    Reason reason = Reason::kLoadBalance;
    uint32_t matched_tokens = 0;
    if (imbalanced) {
      for (size_t i = 0; i < candidates.size(); ++i) {
        if (!IsUsable(candidates[i])) continue;
        if (chosen < 0 || Load(candidates[i].slot) < Load(candidates[chosen].slot)) {
          chosen = static_cast<int>(i);
        }
      }
    } else {
      // The deepest block any worker's tree holds, and the workers holding it.
      int depth = -1;
      for (size_t i = 0; i < request.key_chain.size(); ++i) {
        const auto it = tree_.find(request.key_chain[i]);
        if (it == tree_.end() || it->second.tenants.empty()) break;
        depth = static_cast<int>(i);
      }
      matched_tokens =
          depth < 0 ? 0
                    : std::min<uint32_t>(request.prompt_tokens,
                                         static_cast<uint32_t>(depth + 1) * request.block_tokens);
      const double rate = request.prompt_tokens == 0
                              ? 0.0
                              : static_cast<double>(matched_tokens) / request.prompt_tokens;
      if (rate > p_.sgl_cache_threshold) {
        const Node& node = tree_.at(request.key_chain[depth]);
        // The gateway returns one holder of the deepest node in map order, i.e. arbitrarily.
        chosen = PickUniform(
            candidates,
            [&](const Candidate& c, size_t) { return IsUsable(c) && node.Holds(c.slot); }, rng);
        reason = Reason::kLongestMatch;
      }
      if (chosen < 0) {
        matched_tokens = 0;
        reason = Reason::kNoMatch;
        for (size_t i = 0; i < candidates.size(); ++i) {
          if (!IsUsable(candidates[i])) continue;
          if (chosen < 0 || Size(candidates[i].slot) < Size(candidates[chosen].slot)) {
            chosen = static_cast<int>(i);
          }
        }
      }
    }
    const Candidate& c = candidates[chosen];
    Insert(c.slot, request);
    Grow(c.slot);
    ++in_flight_[c.slot];
    Decision d = DecideFor(c, reason);
    d.estimated_cached_tokens = reason == Reason::kLongestMatch ? matched_tokens : 0;
    return d;
  }

 private:
  struct Tenant {
    Slot slot;
    TimePoint last_access;
  };
  // One block of the tree: the block index and the workers whose share holds it.
  struct Node {
    uint32_t index = 0;
    std::vector<Tenant> tenants;
    bool Holds(Slot s) const {
      return std::any_of(tenants.begin(), tenants.end(),
                         [&](const Tenant& t) { return t.slot == s; });
    }
  };

  void Grow(Slot s) {
    if (s >= in_flight_.size()) {
      in_flight_.resize(s + 1, 0);
      size_.resize(s + 1, 0);
    }
  }
  uint64_t Load(Slot s) const { return s < in_flight_.size() ? in_flight_[s] : 0; }
  uint64_t Size(Slot s) const { return s < size_.size() ? size_[s] : 0; }

  void Insert(Slot s, const RouteRequest& request) {
    Grow(s);
    for (size_t i = 0; i < request.key_chain.size(); ++i) {
      Node& node = tree_[request.key_chain[i]];
      node.index = static_cast<uint32_t>(i);
      auto it = std::find_if(node.tenants.begin(), node.tenants.end(),
                             [&](const Tenant& t) { return t.slot == s; });
      if (it == node.tenants.end()) {
        node.tenants.push_back({s, request.now});
        size_[s] += request.block_tokens;
      } else {
        it->last_access = request.now;
      }
    }
  }

  // LRU eviction per worker: a path is touched whole on insert, so a parent is never older than
  // its child, and evicting oldest first (deepest first on ties) removes leaves before parents.
  void MaybeEvict(TimePoint now, uint32_t block_tokens) {
    if (!evict_armed_) {
      next_eviction_ = now + p_.sgl_eviction_interval;
      evict_armed_ = true;
      return;
    }
    if (now < next_eviction_) return;
    next_eviction_ = now + p_.sgl_eviction_interval;
    for (Slot s = 0; s < size_.size(); ++s) {
      if (size_[s] <= p_.sgl_max_tree_tokens) continue;
      std::vector<std::pair<TimePoint, std::pair<uint32_t, prefix::BlockKey>>> entries;
      for (const auto& [key, node] : tree_) {
        for (const Tenant& t : node.tenants) {
          if (t.slot == s) entries.push_back({t.last_access, {node.index, key}});
        }
      }
      std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
        if (a.first != b.first) return a.first < b.first;
        if (a.second.first != b.second.first) return a.second.first > b.second.first;
        return a.second.second < b.second.second;
      });
      for (const auto& e : entries) {
        if (size_[s] <= p_.sgl_max_tree_tokens) break;
        auto it = tree_.find(e.second.second);
        std::erase_if(it->second.tenants, [&](const Tenant& t) { return t.slot == s; });
        if (it->second.tenants.empty()) tree_.erase(it);
        size_[s] -= std::min<uint64_t>(size_[s], block_tokens);
      }
    }
  }

  PeerParams p_;
  std::unordered_map<prefix::BlockKey, Node> tree_;
  std::vector<uint64_t> in_flight_;
  std::vector<uint64_t> size_;
  bool evict_armed_ = false;
  TimePoint next_eviction_{};
};

}  // namespace

std::unique_ptr<Policy> NewSglCacheAwarePolicy(const PeerParams& params) {
  return std::make_unique<SglCacheAwarePolicy>(params);
}

}  // namespace hearsay::route
