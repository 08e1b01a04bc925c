// RouterTier: the peers' deployment in the simulator. One central router, or k replicas of it
// behind a load balancer, in front of the SimCluster's engines.
//
// A router is the single entry point of its requests: a request reaches it at no network cost
// (the client is beside it), the router decides at once, and the request then travels one
// sampled one-way delay to the chosen engine (SimCluster::SubmitFromRouter, hop marker set, so
// the node serves it and never routes it); every event comes back one delay later. Every
// request therefore crosses the network: the forwarded fraction of a router tier is 1.
//
// Each replica owns its own policy instance (route/registry.h), i.e. its own view, fed only as
// the real router's is:
//   - its own decisions and the lifecycle of its own requests (Policy::Choose, OnOutcome at the
//     first token, OnFinished at the last), as the router sees them (one delay after the engine);
//   - an exact index of every engine's cached blocks, fed by the engines' KV events
//     (SimClusterOptions::cache_events), each applied one sampled delay after the engine emitted
//     it; all replicas subscribe to the same stream, so they share one index. It fills
//     Candidate::cached_tokens (dynamo-kv, llmd-precise use it; sgl-cache-aware and
//     dynamo-kv-approx ignore it);
//   - engine metrics scraped every scrape_interval, each scrape arriving one delay later: waiting
//     requests, running requests, KV blocks held by running requests (vLLM's usage gauge) and
//     capacity, in Candidate::load (llmd-precise uses them);
//   - with replica_sync, every other replica's decisions (OnPeerDecision), first tokens and
//     finishes, one delay after they happen (Dynamo's --router-replica-sync).
// The load balancer sends a request to replica (entry node mod k), uniform over replicas.
//
// Ownership: borrows the cluster; owns its policies. Thread-safety: none (one simulation thread).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/engine/engine.h"
#include "hearsay/env/peer_client.h"
#include "hearsay/env/rng.h"
#include "hearsay/route/policy.h"
#include "hearsay/route/policy_options.h"
#include "hearsay/sim/sim_cluster.h"

namespace hearsay::sim {

struct RouterTierOptions {
  std::string policy;
  route::PolicyOptions policy_options;
  // Router replicas behind the load balancer, >= 1.
  int replicas = 1;
  // Replicas share their decisions and request lifecycles (Dynamo's replica sync).
  bool replica_sync = false;
  // How often the routers scrape engine metrics (the llm-d endpoint picker's default: 50 ms).
  Duration scrape_interval = FromMillis(50);
  uint64_t seed = 1;
};

class RouterTier {
 public:
  // NOT_FOUND / INVALID_ARGUMENT for a bad policy or options. The cluster must have been built
  // with SimClusterOptions::cache_events forwarding to OnCacheEvents().
  static Result<std::unique_ptr<RouterTier>> Create(SimCluster& cluster,
                                                    const RouterTierOptions& options);
  ~RouterTier();

  // The cache events of node `node`, as the engine emitted them now (see the file comment).
  void OnCacheEvents(int node, std::span<const prefix::BlockEvent> events);
  // Starts the metrics scrapes.
  void Start();
  // Routes a client request that arrived at replica `replica` (mod replicas); its events go to
  // `sink` under request.id, which must be unique.
  void Submit(int replica, PeerRequest request, ResponseSink* sink);

  int replicas() const { return static_cast<int>(replicas_.size()); }

 private:
  class Sink;
  struct Replica {
    std::unique_ptr<route::Policy> policy;
    std::unique_ptr<Rng> rng;
  };
  struct InFlight {
    int replica = 0;
    route::Slot slot = 0;
    ResponseSink* client = nullptr;
    uint32_t prompt_tokens = 0;
    uint32_t estimated_cached = 0;
  };

  RouterTier(SimCluster& cluster, const RouterTierOptions& options);
  Duration Delay();
  void Scrape();
  uint32_t IndexMatch(int node, std::span<const prefix::BlockKey> chain) const;
  // Runs `fn(policy)` on every replica but `except`, one delay from now (replica sync).
  template <typename F>
  void Broadcast(int except, F fn);
  void FirstToken(uint64_t id, const PeerFirstToken& first);
  void Finished(uint64_t id);

  SimCluster& cluster_;
  RouterTierOptions options_;
  Rng delay_rng_;
  std::vector<Replica> replicas_;
  std::unique_ptr<Sink> sink_;
  // The KV-event index: per node, the blocks its engine holds (as far as the events arrived).
  std::vector<std::unordered_set<prefix::BlockKey>> index_;
  // The last scrape of every engine, as it arrived.
  std::vector<engine::EngineLoad> scraped_;
  std::vector<TimePoint> scraped_at_;
  std::unordered_map<uint64_t, InFlight> in_flight_;
  std::vector<route::Candidate> candidates_;
  std::vector<prefix::BlockKey> chain_;
  std::vector<std::string> names_;
};

}  // namespace hearsay::sim
