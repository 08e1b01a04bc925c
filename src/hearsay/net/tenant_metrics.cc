#include "hearsay/net/tenant_metrics.h"

namespace hearsay::net {

TenantMetrics::TenantMetrics(api::MetricsRegistry& registry) : registry_(registry) {
  auth_failures_ = &registry_.AddCounter(
      "hearsay_api_auth_failures_total",
      "/v1 requests refused with 401: no API key, or one the API-keys file does not hold");
  usage_peers_ = &registry_.AddGauge(
      "hearsay_tenant_usage_peers",
      "live peers whose fresh usage record counts in the tenants' cluster-wide rate limits");
}

TenantMetrics::Series& TenantMetrics::For(std::string_view tenant) {
  auto it = series_.find(tenant);
  if (it != series_.end()) return it->second;
  const std::string name(tenant);
  Series s;
  s.requests =
      &registry_.AddCounter("hearsay_tenant_requests_total",
                            "client requests with a valid API key, by tenant", {{"tenant", name}});
  s.rps_limited = &registry_.AddCounter("hearsay_tenant_rate_limited_total",
                                        "client requests refused with 429 by the tenant's limit",
                                        {{"tenant", name}, {"limit", "rps"}});
  s.tpm_limited = &registry_.AddCounter("hearsay_tenant_rate_limited_total",
                                        "client requests refused with 429 by the tenant's limit",
                                        {{"tenant", name}, {"limit", "tpm"}});
  s.tokens = &registry_.AddCounter(
      "hearsay_tenant_tokens_total",
      "tokens admitted for the tenant's client requests (prompt plus max_tokens)",
      {{"tenant", name}});
  s.offered_rps = &registry_.AddGauge(
      "hearsay_tenant_offered_rps",
      "requests per second the tenant's clients offer (recent window), here or across the cluster",
      {{"tenant", name}, {"scope", "node"}});
  s.cluster_offered_rps = &registry_.AddGauge(
      "hearsay_tenant_offered_rps",
      "requests per second the tenant's clients offer (recent window), here or across the cluster",
      {{"tenant", name}, {"scope", "cluster"}});
  s.rps_share = &registry_.AddGauge("hearsay_tenant_limit_share",
                                    "share of the tenant's cluster-wide limit this node enforces",
                                    {{"tenant", name}, {"limit", "rps"}});
  s.tpm_share = &registry_.AddGauge("hearsay_tenant_limit_share",
                                    "share of the tenant's cluster-wide limit this node enforces",
                                    {{"tenant", name}, {"limit", "tpm"}});
  return series_.emplace(name, s).first->second;
}

void TenantMetrics::CountRequest(std::string_view tenant) {
  std::lock_guard<std::mutex> lock(mu_);
  For(tenant).requests->Increment();
}

void TenantMetrics::CountRateLimited(std::string_view tenant, std::string_view limit) {
  std::lock_guard<std::mutex> lock(mu_);
  Series& s = For(tenant);
  (limit == "tpm" ? s.tpm_limited : s.rps_limited)->Increment();
}

void TenantMetrics::CountTokens(std::string_view tenant, uint64_t tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  For(tenant).tokens->Increment(static_cast<double>(tokens));
}

std::vector<TenantMetrics::TenantCounts> TenantMetrics::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TenantCounts> out;
  out.reserve(series_.size());
  for (const auto& [name, s] : series_) {
    out.push_back({name, static_cast<uint64_t>(s.requests->Value()),
                   static_cast<uint64_t>(s.rps_limited->Value()),
                   static_cast<uint64_t>(s.tpm_limited->Value()),
                   static_cast<uint64_t>(s.tokens->Value())});
  }
  return out;
}

}  // namespace hearsay::net

namespace hearsay::net {

void TenantMetrics::RefreshShares(const std::vector<node::ClusterLimiter::TenantView>& tenants,
                                  size_t fresh_peers) {
  usage_peers_->Set(static_cast<double>(fresh_peers));
  std::lock_guard<std::mutex> lock(mu_);
  for (const node::ClusterLimiter::TenantView& t : tenants) {
    Series& s = For(t.name);
    s.offered_rps->Set(t.offered_rps);
    s.cluster_offered_rps->Set(t.cluster_offered_rps);
    s.rps_share->Set(t.rps_share);
    s.tpm_share->Set(t.tpm_share);
  }
}

}  // namespace hearsay::net
