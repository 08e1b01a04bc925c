#include "hearsay/node/cluster_limiter.h"

#include <algorithm>
#include <cmath>

namespace hearsay::node {

Duration TokenBucket::Take(double cost, double capacity, double per_second, TimePoint now) {
  if (!started_) {
    started_ = true;
    level_ = capacity;
    last_ = now;
  }
  if (now > last_) {
    level_ = std::min(capacity, level_ + ToSeconds(now - last_) * per_second);
    last_ = now;
  }
  level_ = std::min(level_, capacity);
  const double need = std::min(cost, capacity);
  if (level_ >= need) {
    level_ -= cost;
    return Duration{0};
  }
  return FromSeconds((need - level_) / per_second);
}

void DecayingRate::Add(double amount, TimePoint now, Duration window) {
  if (now > last_) {
    value_ *= std::exp(-ToSeconds(now - last_) / ToSeconds(window));
    last_ = now;
  }
  value_ += amount;
}

double DecayingRate::PerSecond(TimePoint now, Duration window) const {
  const double w = ToSeconds(window);
  const double v = now > last_ ? value_ * std::exp(-ToSeconds(now - last_) / w) : value_;
  return v / w;
}

ClusterLimiter::ClusterLimiter(ClusterLimiterOptions options) : options_(options) {}

ClusterLimiter::Tenant& ClusterLimiter::For(std::string_view tenant) {
  auto it = tenants_.find(tenant);
  if (it == tenants_.end()) {
    it = tenants_.emplace(std::string(tenant), Tenant{}).first;
    it->second.hash = gossip::TenantHash(tenant);
  }
  return it->second;
}

void ClusterLimiter::AddPeer(const Peer& p, int sign) {
  for (const gossip::TenantUsage& t : p.tenants) {
    Sums& s = totals_[t.tenant];
    if (sign > 0) {
      s.milli_requests_ps += t.milli_requests_ps;
      s.tokens_per_minute += t.tokens_per_minute;
    } else {
      s.milli_requests_ps -= t.milli_requests_ps;
      s.tokens_per_minute -= t.tokens_per_minute;
      if (s.milli_requests_ps == 0 && s.tokens_per_minute == 0) totals_.erase(t.tenant);
    }
  }
}

void ClusterLimiter::Expire(TimePoint now) {
  if (now < next_expiry_) return;
  next_expiry_ = TimePoint::max();
  for (auto it = peers_.begin(); it != peers_.end();) {
    if (now - it->second.arrived >= options_.stale_after) {
      AddPeer(it->second, -1);
      it = peers_.erase(it);
    } else {
      next_expiry_ = std::min(next_expiry_, it->second.arrived + options_.stale_after);
      ++it;
    }
  }
}

std::pair<double, double> ClusterLimiter::PeerRates(uint64_t hash) const {
  auto it = totals_.find(hash);
  if (it == totals_.end()) return {0, 0};
  return {static_cast<double>(it->second.milli_requests_ps) / 1000.0,
          static_cast<double>(it->second.tokens_per_minute)};
}

ClusterLimiter::Verdict ClusterLimiter::AdmitRequest(std::string_view tenant, uint64_t rps,
                                                     TimePoint now) {
  std::lock_guard<std::mutex> lock(mu_);
  Expire(now);
  Tenant& t = For(tenant);
  t.requests.Add(1, now, options_.window);
  t.rps_limited = rps > 0;
  if (rps == 0) return {};
  const double own =
      t.published_rps > 0 ? t.published_rps : t.requests.PerSecond(now, options_.window);
  const double share = ShareOf(own, PeerRates(t.hash).first);
  const double rate = static_cast<double>(rps) * share;
  const Duration wait = t.rps.Take(1, std::max(1.0, rate), rate, now);
  if (wait == Duration{0}) return Verdict{true, Duration{0}, "", share};
  return Verdict{false, wait, "rps", share};
}

ClusterLimiter::Verdict ClusterLimiter::AdmitTokens(std::string_view tenant, uint64_t tpm,
                                                    uint64_t tokens, TimePoint now) {
  std::lock_guard<std::mutex> lock(mu_);
  Expire(now);
  Tenant& t = For(tenant);
  t.tokens.Add(static_cast<double>(tokens), now, options_.window);
  t.tpm_limited = tpm > 0;
  if (tpm == 0) return {};
  const double own =
      t.published_tpm > 0 ? t.published_tpm : t.tokens.PerSecond(now, options_.window) * 60;
  const double share = ShareOf(own, PeerRates(t.hash).second);
  const double per_minute = static_cast<double>(tpm) * share;
  const Duration wait = t.tpm.Take(static_cast<double>(tokens), per_minute, per_minute / 60.0, now);
  if (wait == Duration{0}) return Verdict{true, Duration{0}, "", share};
  return Verdict{false, wait, "tpm", share};
}

std::optional<std::vector<gossip::TenantUsage>> ClusterLimiter::UsageToPublish(TimePoint now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (published_ && now - last_publish_ < options_.publish_interval) return std::nullopt;
  std::vector<gossip::TenantUsage> out;
  for (auto& [name, t] : tenants_) {
    t.published_rps = t.requests.PerSecond(now, options_.window);
    t.published_tpm = t.tokens.PerSecond(now, options_.window) * 60;
    const auto clamp = [](double v) {
      return static_cast<uint64_t>(std::clamp(std::round(v), 0.0, double(gossip::kMaxUsageRate)));
    };
    const uint64_t milli = clamp(t.published_rps * 1000);
    const uint64_t tpm = clamp(t.published_tpm);
    if ((milli == 0 && tpm == 0) || !(t.rps_limited || t.tpm_limited)) continue;
    out.push_back({t.hash, milli, tpm});
  }
  if (out.empty() && last_published_empty_) return std::nullopt;
  // Two names with one hash count as one tenant, as every peer sees them.
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.tenant < b.tenant; });
  std::vector<gossip::TenantUsage> merged;
  for (const gossip::TenantUsage& u : out) {
    if (!merged.empty() && merged.back().tenant == u.tenant) {
      merged.back().milli_requests_ps =
          std::min(gossip::kMaxUsageRate, merged.back().milli_requests_ps + u.milli_requests_ps);
      merged.back().tokens_per_minute =
          std::min(gossip::kMaxUsageRate, merged.back().tokens_per_minute + u.tokens_per_minute);
    } else {
      merged.push_back(u);
    }
  }
  if (merged.size() > gossip::kMaxUsageTenants) {
    // The busiest tenants: a quiet one left out is counted as 0 here by peers, which lets them
    // admit a little more of it, never less.
    std::nth_element(merged.begin(), merged.begin() + gossip::kMaxUsageTenants, merged.end(),
                     [](const auto& a, const auto& b) {
                       return std::tie(a.milli_requests_ps, a.tokens_per_minute) >
                              std::tie(b.milli_requests_ps, b.tokens_per_minute);
                     });
    merged.resize(gossip::kMaxUsageTenants);
    std::sort(merged.begin(), merged.end(),
              [](const auto& a, const auto& b) { return a.tenant < b.tenant; });
  }
  published_ = true;
  last_publish_ = now;
  last_published_empty_ = merged.empty();
  return merged;
}

void ClusterLimiter::OnPeerUsage(const NodeId& id, Generation generation,
                                 const gossip::UsageRecord& usage, TimePoint now) {
  if (!gossip::ValidUsage(usage.tenants)) return;  // the decoder refuses these already
  std::lock_guard<std::mutex> lock(mu_);
  auto it = peers_.find(id);
  if (it != peers_.end()) {
    if (it->second.generation > generation) return;  // a late record of an older generation
    AddPeer(it->second, -1);
    peers_.erase(it);
  }
  if (usage.tenants.empty()) return;
  Peer p{generation, now, usage.tenants};
  AddPeer(p, +1);
  peers_.emplace(id, std::move(p));
  next_expiry_ = std::min(next_expiry_, now + options_.stale_after);
}

void ClusterLimiter::OnPeerChanged(const NodeId& id, Generation generation, bool live) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = peers_.find(id);
  if (it == peers_.end() || (live && it->second.generation >= generation)) return;
  AddPeer(it->second, -1);
  peers_.erase(it);
}

std::vector<ClusterLimiter::TenantView> ClusterLimiter::Tenants(TimePoint now) {
  std::lock_guard<std::mutex> lock(mu_);
  Expire(now);
  std::vector<TenantView> out;
  for (const auto& [name, t] : tenants_) {
    TenantView v;
    v.name = name;
    const auto [peer_rps, peer_tpm] = PeerRates(t.hash);
    v.offered_rps = t.requests.PerSecond(now, options_.window);
    v.cluster_offered_rps = v.offered_rps + peer_rps;
    v.rps_share = ShareOf(t.published_rps > 0 ? t.published_rps : v.offered_rps, peer_rps);
    v.offered_tpm = t.tokens.PerSecond(now, options_.window) * 60;
    v.cluster_offered_tpm = v.offered_tpm + peer_tpm;
    v.tpm_share = ShareOf(t.published_tpm > 0 ? t.published_tpm : v.offered_tpm, peer_tpm);
    out.push_back(std::move(v));
  }
  return out;
}

size_t ClusterLimiter::fresh_peers(TimePoint now) {
  std::lock_guard<std::mutex> lock(mu_);
  Expire(now);
  return peers_.size();
}

}  // namespace hearsay::node
