// SimCluster: N node::Nodes on one VirtualScheduler and SimNetwork, each with its own SimEngine
// and a real gossip::Node, so routing sees real gossip staleness. The cluster is also every
// node's PeerClient (forwards travel the sampled one-way delay each way) and the oracle's
// ExactClusterView (exact, instant engine state).
//
// Node i is named and addressed "n<i>"; nodes 0 and 1 are everyone's gossip seeds. Each node has
// its own Rng stream and ScopedScheduler, so Crash(i) drops its timers, engine and state; a
// forward in flight to a crashed node fails back to its entry node (before the first token if
// none was sent), and Restart(i) brings it back with a new generation and an empty cache.
//
// Ownership: the cluster owns everything it builds. Thread-safety: none (one simulation thread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/engine/sim_engine.h"
#include "hearsay/env/peer_client.h"
#include "hearsay/gossip/config.h"
#include "hearsay/gossip/service.h"
#include "hearsay/node/node.h"
#include "hearsay/prefix/block_keys.h"
#include "hearsay/route/policy_options.h"
#include "hearsay/simenv/sim_network.h"
#include "hearsay/simenv/virtual_scheduler.h"

namespace hearsay::sim {

struct SimClusterOptions {
  int nodes = 3;
  uint64_t seed = 1;
  // Link latency: uniform in [delay, delay * (1 + jitter)].
  double delay_ms = 1.0;
  double delay_jitter = 0.1;
  // Loss probability of gossip messages (forwards are not lost: they ride a reliable stream).
  double loss = 0;
  gossip::Config gossip;
  std::string policy = "hearsay";
  route::PolicyOptions policy_options;
  engine::SimEngineOptions engine;
  // A pool of unequal machines: node i's engine runs node_costs[i] (instead of engine.cost), and
  // node i prices with it as its own cost model (instead of policy_options.cost). Empty = alike.
  std::vector<engine::CostParams> node_costs;
  // What node i serves (node::NodeOptions::service; gossiped); empty or shorter = a
  // single-model node, which serves every request whatever model it names.
  std::vector<gossip::Service> node_services;
  // Every node prices members by their measured prefill speed
  // (node::NodeOptions::price_by_measured_prefill).
  bool price_by_measured_prefill = false;
  // Nodes 0 .. liars - 1 lie in gossip (node::Misbehaviour: every prefix, idle, never bounce).
  int liars = 0;
  // The next `slanderers` nodes (liars .. liars + slanderers - 1) list every peer under work they
  // never sent (node::Misbehaviour::slander).
  int slanderers = 0;
  // node::SharedBacklogOptions::trimmed_listers of every node.
  size_t trimmed_listers = node::SharedBacklogOptions().trimmed_listers;
  // node::PeerTrustOptions::enabled of every node.
  bool trust = true;
  // node::NodeOptions::forward_deadline_factor of every node.
  double forward_deadline_factor = node::NodeOptions().forward_deadline_factor;
  uint32_t block_tokens = 16;
  Duration publish_interval = FromMillis(100);
  // Every node's decision records go here (node::Node::SetRecorder); nullptr = none. Borrowed.
  node::DecisionRecorder* recorder = nullptr;
  // When set, every engine's cache events also go here as they happen (a KV-event stream, as
  // vLLM, SGLang and Dynamo's workers publish it), called with the node index: when a request's
  // first token or last token leaves that engine, and whenever its node drains them for gossip.
  std::function<void(int node, std::span<const prefix::BlockEvent> events)> cache_events;
};

class SimCluster final : public node::ExactClusterView {
 public:
  // INVALID_ARGUMENT / NOT_FOUND for bad options (engine, policy).
  static Result<std::unique_ptr<SimCluster>> Create(const SimClusterOptions& options);
  ~SimCluster() override;
  SimCluster(const SimCluster&) = delete;
  SimCluster& operator=(const SimCluster&) = delete;

  static std::string Name(int i);
  int size() const { return static_cast<int>(members_.size()); }

  // Starts every node's gossip and publishing.
  void StartAll();
  // Sends `request` from a router outside the cluster (a central router: it is never crashed) to
  // node `to`, with the hop marker set so that node serves it. The request travels one sampled
  // one-way delay, and every event comes back to `sink` one sampled delay after the node sent it,
  // under the id the request carried.
  void SubmitFromRouter(int to, PeerRequest request, ResponseSink* sink);
  // Crashes node i (see the file comment). No-op if down.
  void Crash(int i);
  // Restarts a crashed node with a new generation and an empty cache, and starts it.
  Status Restart(int i);
  bool up(int i) const { return members_[i].up; }

  node::Node& node(int i) { return *members_[i].node; }
  engine::SimEngine& engine(int i) { return *members_[i].engine; }
  Generation generation(int i) const { return members_[i].generation; }
  simenv::VirtualScheduler& scheduler() { return scheduler_; }
  simenv::SimNetwork& net() { return net_; }
  const prefix::BlockKeyer& keyer() const { return keyer_; }
  const SimClusterOptions& options() const { return options_; }
  // Bytes every node sent on the network so far (gossip only: forwards do not use SimNetwork).
  uint64_t gossip_bytes_sent() const;

  // node::ExactClusterView.
  std::optional<uint32_t> CachedTokens(const NodeId& peer, std::span<const uint32_t> prompt,
                                       uint64_t ns) const override;
  std::optional<engine::EngineLoad> Load(const NodeId& peer) const override;

 private:
  class Client;
  class RelaySink;
  class TapEngine;
  struct Proxy final : MessageSink {
    node::Node* node = nullptr;
    void OnMessage(const Address& from, Channel channel,
                   std::span<const uint8_t> payload) override {
      if (node != nullptr) node->gossip_sink().OnMessage(from, channel, payload);
    }
  };
  struct Member {
    Generation generation = 1;
    bool up = false;
    std::unique_ptr<Rng> rng;
    std::unique_ptr<simenv::ScopedScheduler> sched;
    std::unique_ptr<Proxy> proxy;
    std::unique_ptr<Client> client;
    std::unique_ptr<engine::SimEngine> engine;
    std::unique_ptr<TapEngine> tap;  // only with SimClusterOptions::cache_events
    std::unique_ptr<node::Node> node;
  };
  // A forward in flight: from entry node `from` (at from_generation; -1 = a central router) to
  // node `to`.
  struct Relay {
    int from = 0;
    Generation from_generation = 0;
    int to = 0;
    Generation to_generation = 0;
    uint64_t origin_id = 0;
    ResponseSink* sink = nullptr;
    bool delivered = false;  // submitted to the target node
    bool first_sent = false;
    bool done = false;      // terminal event sent back
    TimePoint back_at{};    // when the last event sent back arrives
    TimePoint first_at{};   // when the first token reaches the entry node
    bool given_up = false;  // the entry node gave it up at its deadline (ForwardDeadline)
  };

  SimCluster(const SimClusterOptions& options, prefix::BlockKeyer keyer);
  Status Build(int i, Transport& transport);
  void Forward(int from, const Address& to, PeerRequest request, ResponseSink* sink);
  // Relay `rid`'s first-token deadline (PeerRequest::first_token_within_ms) has passed: unless
  // its first token has reached the entry node, the entry gives the forward up (DEADLINE_EXCEEDED,
  // as the daemon's peer client) and the target, told a one-way delay later, cancels it.
  void ForwardDeadline(uint64_t rid);
  // Publishes node i's pending cache events (no-op without cache_events).
  void PumpCacheEvents(int i);
  Duration SampleDelay();
  // Runs `fn` after one sampled one-way delay if relay `rid`'s entry node is still the same.
  template <typename F>
  void Back(uint64_t rid, F fn);
  int IndexOf(const Address& address) const;

  SimClusterOptions options_;
  simenv::VirtualScheduler scheduler_;
  simenv::SimNetwork net_;
  Rng rng_;
  Rng delay_rng_;
  prefix::BlockKeyer keyer_;
  std::vector<Address> seeds_;
  std::vector<Member> members_;
  std::unique_ptr<RelaySink> relay_sink_;
  std::unordered_map<uint64_t, Relay> relays_;
  uint64_t next_relay_ = 1;
};

}  // namespace hearsay::sim
