#include "hearsay/route/hearsay_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "hearsay/route/pick.h"
#include "hearsay/route/ttft_estimate.h"

namespace hearsay::route {

HearsayPolicy::HearsayPolicy(const PolicyOptions& options)
    : cost_(options.cost),
      params_(options.hearsay),
      horizon_(options.sent_horizon),
      leases_(options.hearsay.lease_capacity_log2),
      gaps_(kGaps) {}

double HearsayPolicy::confidence(Slot slot) const {
  return slot < confidence_.size() ? confidence_[slot] : 1.0;
}

double HearsayPolicy::fill(Slot slot) const {
  return slot < fill_.size() ? fill_[slot] : params_.initial_fill;
}

Decision HearsayPolicy::DoChoose(const RouteRequest& request, std::span<const Candidate> candidates,
                                 int self, Rng& rng) {
  const double prompt = request.prompt_tokens;
  const LeaseTable::Match lease = leases_.Find(request.key_chain, request.now);
  const double leased_tokens =
      std::min(prompt, double(lease.blocks) * double(request.block_tokens));

  bool any_calm = false;
  for (const Candidate& c : candidates) any_calm |= IsUsable(c) && !c.load.overloaded;
  const auto eligible = [&](const Candidate& c) {
    return IsUsable(c) && (!any_calm || !c.load.overloaded);
  };

  prices_.resize(candidates.size());
  estimates_.resize(candidates.size());
  believed_.resize(candidates.size());
  hosts_.clear();
  // NaN never compares <= anything, so a skipped candidate is never in the tie band.
  constexpr double kSkip = std::numeric_limits<double>::quiet_NaN();
  size_t priced = 0;
  size_t busy = 0;
  double least_prefill = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    Price& price = prices_[i];
    price = Price{.slot = c.slot, .cost_ms = kSkip};
    estimates_[i] = 0;
    if (!eligible(c)) continue;
    price.cost_ms = 0;  // priced
    const auto unsent =
        ledger_.Unreported(c.slot, request.now, c.load.age, c.one_way_delay, horizon_);
    double wait = WaitMs(cost_, c, unsent, params_.reported_wait_drain);
    if (!c.is_self && c.slot < kMaxTrackedSlots) {
      wait = StaleWaitMs(c, wait - unsent.backlog_ms) + unsent.backlog_ms;
    }
    // The queue the entry nodes report there is one the member cannot claim away; its answers
    // are judged against it too (Decision::claimed_ttft_ms).
    if (!c.is_self) wait = std::max(wait, c.shared_wait_ms);

    double credit = std::min(prompt, double(c.cached_tokens));
    if (!c.cache_exact && c.cached_tokens_max > c.cached_tokens) {
      const double upper = std::min(prompt, double(c.cached_tokens_max));
      credit += fill(c.slot) * std::max(0.0, upper - credit);
    }
    estimates_[i] = credit;
    if (!c.cache_exact) {
      const double age_ratio = ToSeconds(c.cache_age) / ToSeconds(params_.stale_half_life);
      credit *= confidence(c.slot) / (1 + std::max(0.0, age_ratio));
    }
    if (lease.slot == c.slot) credit = std::max(credit, leased_tokens * params_.lease_confidence);
    // busy_wait_ms is on the reference hardware: a member k times slower drains k times slower.
    const double busy_ms =
        params_.busy_wait_ms * CostScale(c) * cost_.a_ms_per_token / kBusyWaitReferenceMsPerToken;
    if (wait > busy_ms) credit *= busy_ms / wait;
    // What the member's claims promise, then what its record says they are worth.
    believed_[i] = {wait, credit};
    const double time_trust = c.is_self ? 1.0 : std::clamp(c.time_trust, 1e-3, 1.0);
    if (!c.is_self) credit *= std::clamp(c.cache_trust, 0.0, 1.0);
    price.delay_ms = DelayMs(c, params_.forward_overhead_ms);
    price.wait_ms = wait;
    price.credit_tokens = credit;
    price.prefill_ms = PrefillPartMs(cost_, c, prompt, credit) / time_trust;
    price.interference_ms = params_.interference_weight * double(c.load.running) * price.prefill_ms;
    ++priced;
    const bool queue = c.load.queued + unsent.requests > 0;
    busy += queue ? 1 : 0;
    if (c.host_group != 0) hosts_.push_back({c.host_group, 1});
    least_prefill = std::min(least_prefill, price.prefill_ms);
  }
  ApplyTimeTrust(candidates);
  const double pressure = priced > 0 ? double(busy) / double(priced) : 0;
  MergeHosts();
  double best = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < candidates.size(); ++i) {
    Price& price = prices_[i];
    if (std::isnan(price.cost_ms)) continue;
    const double weight =
        std::max(params_.work_weight * pressure,
                 SharesHost(candidates[i].host_group) ? params_.shared_host_work_weight : 0.0);
    price.work_ms = weight * (price.prefill_ms - least_prefill);
    price.cost_ms =
        price.delay_ms + price.wait_ms + price.prefill_ms + price.work_ms + price.interference_ms;
    if (price.cost_ms < best) best = price.cost_ms;
  }
  // Only reachable if every price overflowed: nothing sensible to compare, so serve here.
  if (!std::isfinite(best)) return ServeLocally(request, Reason::kNoCandidate);

  const double band = best + std::max(params_.near_tie_fraction * best, params_.near_tie_ms);
  size_t ties = 0;
  for (size_t i = 0; i < candidates.size(); ++i) ties += prices_[i].cost_ms <= band ? 1 : 0;
  // A tie goes to the prompt's home among the tied (HearsayParams::home_key_depth), unless the
  // entry node is tied and the home is further than near_tie_ms. Without a home (no key, no
  // names), a tie the entry node is part of is served here: no forward, and the prefix lands
  // where this node's own next requests see it exactly rather than a gossip round late; among
  // peers alone it is drawn at random, so entry nodes sharing one view do not herd.
  const auto tied = [&](const Candidate&, size_t i) { return prices_[i].cost_ms <= band; };
  const bool self_tied = self >= 0 && prices_[self].cost_ms <= band;
  int pick = HomeAmong(request, candidates, tied);
  // The entry node keeps a tie it is part of when the home costs more network than the tie's
  // absolute margin: its own cost is exact, the home's is a view, and a forward adds delay.
  if (pick >= 0 && self_tied && prices_[pick].delay_ms > params_.near_tie_ms) pick = self;
  if (pick < 0) pick = self_tied ? self : PickUniform(candidates, tied, rng);
  const Candidate& chosen = candidates[pick];

  Decision d;
  d.slot = chosen.slot;
  d.expected_ttft_ms =
      prices_[pick].cost_ms - prices_[pick].work_ms - prices_[pick].interference_ms;
  d.claimed_prefill_ms = PrefillPartMs(cost_, chosen, prompt, believed_[pick].credit_tokens);
  d.claimed_ttft_ms = prices_[pick].delay_ms + believed_[pick].wait_ms + d.claimed_prefill_ms;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (int(i) == pick || !(prices_[i].cost_ms < std::numeric_limits<double>::infinity())) continue;
    if (d.fallback_ttft_ms < 0 || prices_[i].cost_ms < d.fallback_ttft_ms) {
      d.fallback_ttft_ms = prices_[i].cost_ms;
    }
  }
  d.estimated_cached_tokens = static_cast<uint32_t>(estimates_[pick]);
  if (!chosen.cache_exact && chosen.cached_tokens_max > chosen.cached_tokens &&
      chosen.slot < kMaxTrackedSlots) {
    gaps_[request.request_id % kGaps] = {request.request_id, chosen.slot, chosen.cached_tokens,
                                         std::min(request.prompt_tokens, chosen.cached_tokens_max)};
  }
  if (lease.slot == chosen.slot) {
    d.estimated_cached_tokens = std::max(d.estimated_cached_tokens, uint32_t(leased_tokens));
  }
  d.reason = !any_calm ? Reason::kAllOverloaded : ties > 1 ? Reason::kNearTie : Reason::kLowestCost;

  last_id_ = request.request_id;
  last_slot_ = chosen.slot;
  last_new_tokens_ =
      request.prompt_tokens - std::min(request.prompt_tokens, d.estimated_cached_tokens);
  last_service_ms_ = prices_[pick].prefill_ms;
  last_fits_ = chosen.load.kv_capacity_tokens == 0 ||
               request.prompt_tokens <= chosen.load.kv_capacity_tokens;
  return d;
}

void HearsayPolicy::MergeHosts() {
  std::sort(hosts_.begin(), hosts_.end(),
            [](const HostMembers& a, const HostMembers& b) { return a.group < b.group; });
  // Merges each group's entries into its first.
  size_t out = 0;
  for (size_t i = 0; i < hosts_.size(); ++i) {
    if (out > 0 && hosts_[out - 1].group == hosts_[i].group) {
      hosts_[out - 1].members += 1;
    } else {
      hosts_[out++] = hosts_[i];
    }
  }
  hosts_.resize(out);
}

bool HearsayPolicy::SharesHost(uint64_t group) const {
  if (group == 0) return false;
  const auto it = std::lower_bound(hosts_.begin(), hosts_.end(), group,
                                   [](const HostMembers& h, uint64_t g) { return h.group < g; });
  // A member alone in its group among the candidates slows nobody else's prefill.
  return it != hosts_.end() && it->group == group && it->members >= 2;
}

// SplitMix64's finalizer: every input bit moves every output bit.
static uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

template <typename Pred>
int HearsayPolicy::HomeAmong(const RouteRequest& request, std::span<const Candidate> candidates,
                             Pred pred) const {
  if (params_.home_key_depth == 0 || request.key_chain.empty()) return -1;
  const size_t depth = std::min<size_t>(request.key_chain.size(), params_.home_key_depth);
  const uint64_t key = request.key_chain[depth - 1];
  int home = -1;
  uint64_t home_rank = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    if (c.node_id.empty() || !pred(c, i)) continue;
    uint64_t name = 0xcbf29ce484222325ULL;  // FNV-1a of the member's name
    for (const char ch : c.node_id) name = (name ^ static_cast<uint8_t>(ch)) * 0x100000001b3ULL;
    const uint64_t rank = Mix64(key ^ Mix64(name));
    if (home < 0 || rank > home_rank) {
      home = static_cast<int>(i);
      home_rank = rank;
    }
  }
  return home;
}

namespace {
// Below this time_trust a member's load claims are worth less than the typical member's.
constexpr double kBlendBelow = 0.5;
}  // namespace

void HearsayPolicy::ApplyTimeTrust(std::span<const Candidate> candidates) {
  // The typical believed member: the median queue wait and running batch of the priced
  // candidates whose load claims are believed in full (self's are exact).
  typical_.clear();
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    if (!std::isnan(prices_[i].cost_ms) && (c.is_self || c.time_trust >= 1)) {
      typical_.push_back(prices_[i].wait_ms);
    }
  }
  const auto median = [this]() {
    if (typical_.empty()) return 0.0;
    const auto mid = typical_.begin() + static_cast<std::ptrdiff_t>(typical_.size() / 2);
    std::nth_element(typical_.begin(), mid, typical_.end());
    return *mid;
  };
  const double typical_wait = median();
  typical_.clear();
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    if (!std::isnan(prices_[i].cost_ms) && (c.is_self || c.time_trust >= 1)) {
      typical_.push_back(double(c.load.running));
    }
  }
  const double typical_running = median();
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    Price& price = prices_[i];
    const double t = std::clamp(c.time_trust, 1e-3, 1.0);
    if (std::isnan(price.cost_ms) || c.is_self || t >= 1) continue;
    if (t >= kBlendBelow) {
      // A mild discount (an honest member's answers run late now and then): its claims stand,
      // their wait scaled up.
      price.wait_ms /= t;
      continue;
    }
    const double running =
        t * double(c.load.running) + (1 - t) * std::max(double(c.load.running), typical_running);
    const double prior = std::max(typical_wait, c.hidden_wait_ms);
    price.wait_ms =
        std::max({price.wait_ms, t * price.wait_ms + (1 - t) * prior, c.hidden_wait_ms});
    price.interference_ms = params_.interference_weight * running * price.prefill_ms;
  }
}

double HearsayPolicy::StaleWaitMs(const Candidate& c, double drained_ms) {
  if (c.slot >= waits_.size()) waits_.resize(c.slot + 1);
  WaitMemory& w = waits_[c.slot];
  if (!w.seen || c.load.age < w.age) {
    const double reported = ReportedWaitMs(cost_, c);
    // From 0: a member not yet seen busy is assumed mostly idle, as draining alone assumed.
    w.mean_ms += params_.wait_mean_weight * (reported - w.mean_ms);
    w.seen = true;
  }
  w.age = c.load.age;
  const double elapsed = std::max(0.0, ToMillis(c.load.age + c.one_way_delay));
  const double memory = std::max(ToMillis(params_.queue_memory),
                                 params_.queue_memory_per_wait * ReportedWaitMs(cost_, c));
  const double keep = std::exp(-elapsed / memory);
  return w.mean_ms + (drained_ms - w.mean_ms) * keep;
}

void HearsayPolicy::OnSent(Slot slot, const RouteRequest& request) {
  const bool same = last_id_ == request.request_id && last_slot_ == slot;
  if (same) {
    ledger_.Record(slot, request.now, last_new_tokens_, last_service_ms_, request.request_id);
  } else {
    ledger_.Record(slot, request.now, request.prompt_tokens,
                   cost_.PrefillMs(request.prompt_tokens, 0), request.request_id);
  }
  if (!same || last_fits_) {
    leases_.Grant(request.key_chain, slot, request.now, request.now + params_.lease_ttl);
  }
}

void HearsayPolicy::OnOutcome(const Outcome& outcome) {
  if (outcome.slot >= kMaxTrackedSlots) return;
  Gap& gap = gaps_[outcome.request_id % kGaps];
  if (gap.request_id == outcome.request_id && gap.slot == outcome.slot && gap.upper > gap.lower) {
    if (outcome.slot >= fill_.size()) fill_.resize(outcome.slot + 1, params_.initial_fill);
    const double where = std::clamp(
        (double(outcome.actual_cached_tokens) - gap.lower) / double(gap.upper - gap.lower), 0.0,
        1.0);
    fill_[outcome.slot] += params_.learning_rate * (where - fill_[outcome.slot]);
    gap = Gap{};
  }
  if (outcome.estimated_cached_tokens == 0) return;
  if (outcome.slot >= confidence_.size()) confidence_.resize(outcome.slot + 1, 1.0);
  const double ratio =
      std::min(1.0, double(outcome.actual_cached_tokens) / outcome.estimated_cached_tokens);
  double& conf = confidence_[outcome.slot];
  conf += params_.learning_rate * (ratio - conf);
  conf = std::clamp(conf, params_.min_confidence, 1.0);
}

void HearsayPolicy::OnAbandoned(Slot slot, uint64_t request_id) {
  ledger_.Forget(slot, request_id);
}

void HearsayPolicy::OnMemberReset(Slot slot) {
  ledger_.Reset(slot);
  leases_.Revoke(slot);
  if (slot < confidence_.size()) confidence_[slot] = 1.0;
  if (slot < fill_.size()) fill_[slot] = params_.initial_fill;
  if (slot < waits_.size()) waits_[slot] = WaitMemory{};
}

}  // namespace hearsay::route
