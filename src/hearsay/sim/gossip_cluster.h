// GossipCluster: N gossip::Nodes on one SimNetwork in virtual time, with crash, restart (a new
// generation) and leave; and GossipInvariants, the checks the fault suite runs at every step.
//
// Node i is named and addressed "n<i>"; the first `seed_nodes` nodes are everyone's seeds. Each
// node has its own Rng stream (forked from the cluster seed), its own ScopedScheduler (so a crash
// drops its timers), and a ModelListener that replays the node's listener effects into a naive
// model of every peer's advertised cache. With `secure`, every message goes through the real
// authenticated envelope (gossip/envelope.h) with one cluster key.
//
// Ownership: the cluster owns everything it builds. Thread-safety: none (one simulation thread).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "hearsay/gossip/config.h"
#include "hearsay/gossip/envelope.h"
#include "hearsay/gossip/envelope_framer.h"
#include "hearsay/gossip/keyring.h"
#include "hearsay/gossip/listener.h"
#include "hearsay/gossip/node.h"
#include "hearsay/simenv/sim_network.h"
#include "hearsay/simenv/virtual_scheduler.h"

namespace hearsay::sim {

// Replays one node's listener effects into plain sets, so tests can compare them with the
// node's replicas (an event stream that skipped or repeated a change would not match).
class ModelListener final : public gossip::Listener {
 public:
  using MemberHook = std::function<void(const NodeId&, Generation, gossip::MemberState)>;
  using UsageHook = std::function<void(const NodeId&, Generation, const gossip::UsageRecord&)>;
  // With model_caches false, only membership changes are recorded (cache() stays empty).
  explicit ModelListener(MemberHook hook = nullptr, bool model_caches = true,
                         UsageHook usage_hook = nullptr)
      : hook_(std::move(hook)), usage_hook_(std::move(usage_hook)), model_caches_(model_caches) {}

  void OnMemberChanged(const NodeId& id, Generation g, gossip::MemberState s) override;
  void OnPeerCacheEvents(const NodeId& id, Generation g,
                         std::span<const prefix::BlockEvent> events) override;
  void OnPeerCacheSnapshot(const NodeId& id, Generation g,
                           std::span<const prefix::BlockEvent> live) override;
  void OnPeerUsage(const NodeId& id, Generation g, const gossip::UsageRecord& usage) override {
    if (usage_hook_) usage_hook_(id, g, usage);
  }

  // The advertised cache of `id` as the events built it.
  const std::set<prefix::BlockKey>& cache(const NodeId& id) const;
  // Bumped whenever the node dropped its replica of `id` (death, leave, new generation).
  uint64_t epoch(const NodeId& id) const;
  // Count of events that made no sense (adding a held key, removing an absent one).
  uint64_t inconsistent_events() const { return inconsistent_; }

 private:
  struct Peer {
    Generation generation = 0;
    uint64_t epoch = 0;
    std::set<prefix::BlockKey> cache;
  };
  MemberHook hook_;
  UsageHook usage_hook_;
  bool model_caches_ = true;
  std::map<NodeId, Peer> peers_;
  uint64_t inconsistent_ = 0;
};

class GossipCluster {
 public:
  struct Options {
    int nodes = 5;
    uint64_t seed = 1;
    int seed_nodes = 2;
    gossip::Config config;
    simenv::LinkFaults faults;  // network defaults
    bool secure = false;
    // Called on every membership change any node reports: (observer index, member, generation,
    // state). Optional; experiments count false deaths with it.
    std::function<void(int, const NodeId&, Generation, gossip::MemberState)> on_member_changed;
    // Called on every peer usage record any node hears of: (observer index, member, generation,
    // record). Optional; the rate-limit experiment feeds its limiters with it.
    std::function<void(int, const NodeId&, Generation, const gossip::UsageRecord&)> on_peer_usage;
    // Whether each node's ModelListener replays cache events into its naive model (the fault
    // suite's invariants need it). Experiments that only read replicas turn it off: the model
    // is a std::set per (node, peer), O(N^2) memory and a tenth of the CPU at N = 32.
    bool model_caches = true;
    // Every replica a view of its origin's shared history (gossip/shared_history.h): O(N)
    // memory instead of O(N^2), which is what lets N = 1,024 run in one process.
    bool share_replicas = false;
  };

  explicit GossipCluster(Options options);
  ~GossipCluster();
  GossipCluster(const GossipCluster&) = delete;
  GossipCluster& operator=(const GossipCluster&) = delete;

  static std::string Name(int i);
  int size() const { return static_cast<int>(members_.size()); }

  // Starts every node (or one) with the seed nodes as seeds.
  void StartAll();
  void Start(int i);
  // Crashes node i: the network drops its traffic and its timers and state are destroyed.
  void Crash(int i);
  // Brings a crashed node back with a new generation and an empty cache, and starts it.
  void Restart(int i);
  // Node i leaves gracefully (it stays attached but silent).
  void Leave(int i);

  bool up(int i) const { return members_[i].up && !members_[i].node->left(); }
  gossip::Node& node(int i) { return *members_[i].node; }
  const gossip::Node& node(int i) const { return *members_[i].node; }
  Generation generation(int i) const { return members_[i].generation; }
  const ModelListener& model(int i) const { return *members_[i].listener; }
  simenv::SimNetwork& net() { return net_; }
  simenv::VirtualScheduler& scheduler() { return scheduler_; }
  const Options& options() const { return options_; }
  void RunFor(Duration d) { scheduler_.RunFor(d); }
  TimePoint Now() const { return scheduler_.Now(); }

 private:
  struct Proxy final : MessageSink {
    gossip::Node* node = nullptr;
    void OnMessage(const Address& from, Channel channel,
                   std::span<const uint8_t> payload) override {
      if (node != nullptr) node->OnMessage(from, channel, payload);
    }
  };
  struct Member {
    Generation generation = 0;
    bool up = false;
    std::unique_ptr<Rng> rng;
    std::unique_ptr<simenv::ScopedScheduler> sched;
    std::unique_ptr<ModelListener> listener;
    std::unique_ptr<Proxy> proxy;
    std::optional<gossip::Sealer> sealer;
    std::optional<gossip::Opener> opener;
    std::unique_ptr<gossip::EnvelopeFramer> framer;
    std::unique_ptr<gossip::Node> node;
  };

  void Build(int i, Transport& transport);

  Options options_;
  simenv::VirtualScheduler scheduler_;
  simenv::SimNetwork net_;
  Rng rng_;
  gossip::Keyring keyring_;
  gossip::SharedHistories histories_;
  std::vector<Address> seeds_;
  std::vector<Member> members_;
};

// The fault suite's invariants, checked by Check() at every step of a run:
//  - per-origin versions never go backwards (unless the replica was dropped and rebuilt);
//  - no delta is applied across a gap: a replica at the origin's version holds exactly the
//    origin's cache, and the listener's event stream reproduces every replica;
//  - no healthy node is declared dead (healthy: up, and not marked by MarkUnhealthy).
// Convergence and detection are checked on demand (Converged, AllSeeDead).
class GossipInvariants {
 public:
  explicit GossipInvariants(GossipCluster& cluster) : c_(cluster) {}

  // Checks the step invariants now; violations are appended to violations().
  void Check();
  // Excludes node i from the no-false-death check (it is partitioned, crashed or restarted).
  void MarkUnhealthy(int i) { unhealthy_.insert(i); }
  void MarkHealthy(int i) { unhealthy_.erase(i); }
  // Records every up node's own version now: Converged() then asks for at least these.
  void SetConvergenceTarget();
  // True if every up node sees every other up node live (alive or suspect) at its current
  // generation, and holds its state at least at the target version (or the current one if no
  // target was set).
  bool Converged(std::string* why = nullptr) const;
  // True if every up node other than i sees node i (at `generation`) dead or left.
  bool AllSeeDead(int i, Generation generation) const;
  const std::vector<std::string>& violations() const { return violations_; }

 private:
  GossipCluster& c_;
  std::set<int> unhealthy_;
  // (observer, observer generation, origin) -> (generation, epoch, version) last seen.
  struct Seen {
    Generation generation;
    uint64_t epoch;
    uint64_t version;
  };
  std::map<std::tuple<int, Generation, int>, Seen> seen_;
  std::vector<std::string> violations_;
  std::map<std::pair<int, Generation>, uint64_t> target_;
};

}  // namespace hearsay::sim
