// ClusterLimiter: per-tenant rate limits (requests per second, tokens per minute) enforced across
// the whole cluster by the nodes where requests enter it, without any coordinator.
//
// Every entry node counts what each tenant's clients offer it (every request that asks, admitted
// or refused, and the tokens of those that pass the request limit) as exponentially weighted
// rates over a recent window, and gossips them as its usage record (gossip/usage.h). A node then
// enforces on its own entry traffic the tenant's limit times its share:
//
//   share = own offered rate / (own offered rate + the rates live peers reported for the tenant)
//
// where the own rate is the one this node last published (the current one until it has
// published one), so both sides of the ratio are about equally old: compared with peers' rates a
// gossip round old, current own rates would add up to more than 1 whenever traffic grows.
//
// so the shares of all entry nodes add up to about 1, and a tenant spread over N entry nodes gets
// about its limit in total, split in proportion to where its clients send. Each share drives a
// token bucket (TokenBucket) of capacity max(1, rps * share) requests refilled at rps * share a
// second (and tpm * share tokens refilled at tpm * share a minute).
//
// Robustness: a peer's record is used only while fresh (it arrived within stale_after; a node
// with traffic republishes every publish_interval, an idle one once, empty), a member that dies,
// leaves or restarts drops out at once (OnPeerChanged), and a record names at most
// gossip::kMaxUsageTenants tenants (the busiest; a tenant left out counts as 0 there). A node
// that knows of no peer usage for a tenant (alone, just started, or cut off) enforces the whole
// limit, as a single node would: until the first records arrive, N entry nodes admit up to N
// times the limit.
//
// Time is given by the caller (the node's clock), so tests run in virtual time. Limits are taken
// from each call (a reload that changes them applies to the next request).
//
// Thread-safety: every method may be called from any thread (one mutex, short critical sections);
// the daemon admits on its I/O threads while the node's core thread feeds peer records in.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "hearsay/common/ids.h"
#include "hearsay/env/time.h"
#include "hearsay/gossip/usage.h"

namespace hearsay::node {

// One token bucket. Not thread-safe by itself.
class TokenBucket {
 public:
  // Takes `cost` at `now` from a bucket of `capacity` refilled at `per_second`: 0 when granted,
  // else how long until it would be. A bucket starts full. A take is granted while the bucket
  // holds at least min(cost, capacity), and may leave it in debt.
  Duration Take(double cost, double capacity, double per_second, TimePoint now);
  double level() const { return level_; }

 private:
  bool started_ = false;
  double level_ = 0;
  TimePoint last_{};
};

// An exponentially weighted rate: events of some amount, decayed with time constant `window`.
// Not thread-safe by itself.
class DecayingRate {
 public:
  void Add(double amount, TimePoint now, Duration window);
  // Amount per second at `now`.
  double PerSecond(TimePoint now, Duration window) const;

 private:
  double value_ = 0;  // decayed sum of amounts, as of last_
  TimePoint last_{};
};

struct ClusterLimiterOptions {
  // Time constant of the offered-rate estimates (the "recent window").
  Duration window = FromSeconds(2);
  // How often a node with traffic republishes its usage record.
  Duration publish_interval = FromMillis(500);
  // A peer's record older than this (since it arrived here) no longer counts.
  Duration stale_after = FromSeconds(5);
};

class ClusterLimiter {
 public:
  struct Verdict {
    bool ok = true;
    Duration retry_after{0};
    const char* limit = "";  // "rps" or "tpm" when refused
    double share = 1;        // the share of the tenant's limit this node enforced
  };

  // One tenant's figures at this node, for metrics and status.
  struct TenantView {
    std::string name;
    double offered_rps = 0;          // offered here
    double cluster_offered_rps = 0;  // offered here and at every live peer with a fresh record
    double rps_share = 1;            // share of the requests limit enforced here
    double offered_tpm = 0;
    double cluster_offered_tpm = 0;
    double tpm_share = 1;
  };

  explicit ClusterLimiter(ClusterLimiterOptions options = {});

  // One request of `tenant` at `now`, counted as offered; checked against `rps` (0: unlimited)
  // times this node's share.
  Verdict AdmitRequest(std::string_view tenant, uint64_t rps, TimePoint now);
  // `tokens` tokens of `tenant` at `now`, counted as offered; checked against `tpm` (0:
  // unlimited) times this node's share.
  Verdict AdmitTokens(std::string_view tenant, uint64_t tpm, uint64_t tokens, TimePoint now);

  // The usage to publish now (gossip::Node::SetUsage), or nullopt if nothing is due: a node with
  // offered traffic publishes every publish_interval, one without publishes its empty usage once.
  // Only tenants with a limit are published.
  std::optional<std::vector<gossip::TenantUsage>> UsageToPublish(TimePoint now);
  // A live peer's usage record arrived at `now`; it replaces the peer's earlier one (a new
  // generation replaces the old one's).
  void OnPeerUsage(const NodeId& id, Generation generation, const gossip::UsageRecord& usage,
                   TimePoint now);
  // The peer died or left (live false), or is now known at `generation`: a record of it, or of an
  // older generation of it, no longer counts.
  void OnPeerChanged(const NodeId& id, Generation generation, bool live);

  // Every tenant offered here, by name.
  std::vector<TenantView> Tenants(TimePoint now);
  // Peers whose record counts now.
  size_t fresh_peers(TimePoint now);
  const ClusterLimiterOptions& options() const { return options_; }

 private:
  struct Tenant {
    uint64_t hash = 0;
    DecayingRate requests, tokens;
    TokenBucket rps, tpm;
    // The rates this node last published (requests per second, tokens per minute): the share
    // compares them, not the current ones, with the peers' published rates, so that a rate
    // rising everywhere at once does not give every node a share above its due.
    double published_rps = 0, published_tpm = 0;
    // Whether its last request came with an rps or tpm limit: only limited tenants are published
    // (an unlimited busy one would take a place among the kMaxUsageTenants for nothing).
    bool rps_limited = false, tpm_limited = false;
  };
  struct Sums {
    uint64_t milli_requests_ps = 0;
    uint64_t tokens_per_minute = 0;
  };
  struct Peer {
    Generation generation = 0;
    TimePoint arrived{};
    std::vector<gossip::TenantUsage> tenants;
  };

  Tenant& For(std::string_view tenant);
  // Drops the peers whose record went stale (cheap unless one is due).
  void Expire(TimePoint now);
  void AddPeer(const Peer& p, int sign);
  // The peers' offered rates of `hash` (requests per second, tokens per minute).
  std::pair<double, double> PeerRates(uint64_t hash) const;
  static double ShareOf(double own, double peers) { return own > 0 ? own / (own + peers) : 1.0; }

  // Invariants: totals_ is the sum of every peers_ record per tenant hash (entries at 0 erased);
  // every peers_ record arrived after next_expiry_ - stale_after.
  const ClusterLimiterOptions options_;
  std::mutex mu_;
  std::map<std::string, Tenant, std::less<>> tenants_;  // guarded by mu_
  std::map<NodeId, Peer> peers_;                        // guarded by mu_
  std::unordered_map<uint64_t, Sums> totals_;           // guarded by mu_
  TimePoint next_expiry_ = TimePoint::max();            // guarded by mu_
  TimePoint last_publish_{};                            // guarded by mu_
  bool published_ = false;                              // guarded by mu_
  bool last_published_empty_ = true;                    // guarded by mu_
};

}  // namespace hearsay::node
