// TenantMetrics: per-tenant series of GET /metrics (docs/operations.md, "Metrics"), labelled with
// tenant names from the API-keys file, never keys or key ids. Tenants appear as they first send a
// request; the label set is bounded by the tenants the file has ever named.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/api/metrics.h"
#include "hearsay/node/cluster_limiter.h"

namespace hearsay::net {

class TenantMetrics {
 public:
  explicit TenantMetrics(api::MetricsRegistry& registry);

  // A client request of `tenant` got past the key check (before its rate limits).
  void CountRequest(std::string_view tenant);
  // A request of `tenant` was refused with 429 by its `limit` ("rps" or "tpm").
  void CountRateLimited(std::string_view tenant, std::string_view limit);
  // `tokens` (prompt plus max_tokens) admitted for `tenant`.
  void CountTokens(std::string_view tenant, uint64_t tokens);
  // The cluster-wide limits' view (node/cluster_limiter.h): per tenant offered here, across the
  // cluster and the share of its limits this node enforces; and how many peers' usage counts.
  void RefreshShares(const std::vector<node::ClusterLimiter::TenantView>& tenants,
                     size_t fresh_peers);
  // A /v1 request without a valid API key (401).
  void CountAuthFailure() { auth_failures_->Increment(); }

  // One tenant's counts since the node started (GET /status `tenants[]`).
  struct TenantCounts {
    std::string tenant;
    uint64_t requests = 0;
    uint64_t rps_limited = 0;
    uint64_t tpm_limited = 0;
    uint64_t tokens = 0;
  };
  // Every tenant served so far, by name.
  std::vector<TenantCounts> Snapshot() const;
  uint64_t auth_failures() const { return static_cast<uint64_t>(auth_failures_->Value()); }

 private:
  struct Series {
    api::Counter* requests = nullptr;
    api::Counter* rps_limited = nullptr;
    api::Counter* tpm_limited = nullptr;
    api::Counter* tokens = nullptr;
    api::Gauge* offered_rps = nullptr;
    api::Gauge* cluster_offered_rps = nullptr;
    api::Gauge* rps_share = nullptr;
    api::Gauge* tpm_share = nullptr;
  };
  Series& For(std::string_view tenant);

  api::MetricsRegistry& registry_;
  api::Counter* auth_failures_ = nullptr;
  api::Gauge* usage_peers_ = nullptr;
  mutable std::mutex mu_;
  std::map<std::string, Series, std::less<>> series_;  // guarded by mu_
};

}  // namespace hearsay::net
