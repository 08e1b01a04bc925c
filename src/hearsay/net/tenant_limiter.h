// TenantLimiter: per-tenant rate limits (api_keys.h TenantLimits) where requests enter the
// cluster, enforced cluster-wide by node::ClusterLimiter (node/cluster_limiter.h): this node's
// token buckets hold the tenant's limit times this node's share of the tenant's offered traffic,
// which the nodes gossip.
//
// Requests per second: a bucket of max(1, rps * share) refilled at rps * share per second; a
// request takes 1. Tokens per minute: a bucket of tpm * share refilled at tpm * share / 60 per
// second; a request takes its prompt tokens plus its max_tokens (what it may use, charged at
// admission and not refunded). A take is granted while the bucket holds at least min(cost,
// capacity), and may then leave it in debt (a request larger than the whole bucket still passes
// when the bucket is full, and the debt holds the tenant to its average rate). A refusal says
// after how long the same take would be granted (Retry-After). Alone (no peer has reported the
// tenant) the share is 1.
//
// Time is given by the caller (the node's clock), so tests run in virtual time. Limits are taken
// from each call: a reload of the keys file that changes a tenant's limits applies to its next
// request (the bucket keeps its level, clamped to the new capacity).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "hearsay/env/time.h"
#include "hearsay/net/api_keys.h"
#include "hearsay/node/cluster_limiter.h"

namespace hearsay::net {

using TokenBucket = node::TokenBucket;

class TenantLimiter {
 public:
  using Verdict = node::ClusterLimiter::Verdict;

  explicit TenantLimiter(node::ClusterLimiterOptions options = {}) : cluster_(options) {}

  // One request of `tenant` at `now` (its rps bucket).
  Verdict AdmitRequest(std::string_view tenant, const TenantLimits& limits, TimePoint now) {
    return cluster_.AdmitRequest(tenant, limits.rps, now);
  }
  // `tokens` tokens of `tenant` at `now` (its tpm bucket).
  Verdict AdmitTokens(std::string_view tenant, const TenantLimits& limits, uint64_t tokens,
                      TimePoint now) {
    return cluster_.AdmitTokens(tenant, limits.tpm, tokens, now);
  }
  // The cluster-wide side: the node gossips its usage and feeds peers' records here.
  node::ClusterLimiter& cluster() { return cluster_; }

 private:
  node::ClusterLimiter cluster_;
};

// Retry-After's value: whole seconds, rounded up, at least 1.
std::string RetryAfterSeconds(Duration d);

}  // namespace hearsay::net
