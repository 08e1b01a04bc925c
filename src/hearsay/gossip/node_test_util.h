// The simulated cluster of gossip::Node the node tests share (node_test.cc,
// node_membership_test.cc): nodes on a TestNetwork in virtual time, each with a listener that
// keeps a naive model of what its peers advertise.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "hearsay/gossip/node.h"
#include "hearsay/gossip/test_network.h"
#include "hearsay/simenv/virtual_scheduler.h"

namespace hearsay::gossip {

using namespace std::chrono_literals;
using prefix::BlockEvent;

// Records listener effects, keeping a naive model of each peer's advertised cache.
class RecordingListener : public Listener {
 public:
  void OnMemberChanged(const NodeId& id, Generation g, MemberState s) override {
    changes.push_back({id, g, s});
    if (s != MemberState::kAlive && s != MemberState::kSuspect) caches.erase(id);
    if (generations[id] != g) caches.erase(id);
    generations[id] = g;
  }
  void OnPeerCacheEvents(const NodeId& id, Generation, std::span<const BlockEvent> ev) override {
    for (const auto& e : ev) {
      if (e.kind == BlockEvent::Kind::kAdded) {
        caches[id].insert(e.key);
      } else {
        caches[id].erase(e.key);
      }
    }
  }
  void OnPeerCacheSnapshot(const NodeId& id, Generation,
                           std::span<const BlockEvent> live) override {
    auto& c = caches[id];
    c.clear();
    for (const auto& e : live) c.insert(e.key);
  }
  void OnPeerLoad(const NodeId& id, Generation, const LoadReport& l) override { loads[id] = l; }
  void OnPeerStride(const NodeId& id, Generation, uint32_t stride) override {
    strides[id] = stride;
  }
  void OnPeerService(const NodeId& id, Generation, const Service& service) override {
    services[id] = service;
    ++service_reports[id];
  }

  struct Change {
    NodeId id;
    Generation g;
    MemberState s;
  };
  std::vector<Change> changes;
  std::map<NodeId, std::set<prefix::BlockKey>> caches;
  std::map<NodeId, Generation> generations;
  std::map<NodeId, LoadReport> loads;
  std::map<NodeId, uint32_t> strides;
  void OnPeerUsage(const NodeId& id, Generation, const UsageRecord& usage) override {
    usages[id] = usage.tenants;
  }
  std::map<NodeId, Service> services;
  std::map<NodeId, std::vector<TenantUsage>> usages;
  std::map<NodeId, int> service_reports;
};

struct TestNode {
  std::unique_ptr<Rng> rng;
  std::unique_ptr<simenv::ScopedScheduler> sched;
  std::unique_ptr<RecordingListener> listener;
  std::unique_ptr<Node> node;
};

class Cluster {
 public:
  Cluster(int n, uint64_t seed, Config config = {}) : net_(sched_, seed), config_(config) {
    for (int i = 0; i < n; ++i) Add(i, 1);
  }

  static std::string Name(int i) {
    std::string s = std::to_string(i);
    s.insert(s.begin(), 'n');
    return s;
  }

  void Add(int i, Generation g) {
    if (static_cast<int>(nodes_.size()) <= i) nodes_.resize(i + 1);
    TestNode& t = nodes_[i];
    t.node.reset();
    t.rng = std::make_unique<Rng>(1000 + i * 7919 + g);
    t.sched = std::make_unique<simenv::ScopedScheduler>(sched_);
    t.listener = std::make_unique<RecordingListener>();
    auto& ep = net_.Attach(Name(i));
    t.node = std::make_unique<Node>(Name(i), g, Name(i), config_, *t.sched, *t.rng, ep, nullptr,
                                    t.listener.get());
    net_.SetSink(Name(i), t.node.get());
  }
  void StartAll() {
    for (size_t i = 0; i < nodes_.size(); ++i) Start(static_cast<int>(i));
  }
  void Start(int i) {
    std::vector<Address> seeds{Name(0), Name(1)};
    nodes_[i].node->Start(seeds);
  }
  void Crash(int i) {
    net_.SetDown(Name(i), true);
    nodes_[i].sched->CancelAll();
    nodes_[i].node.reset();
    net_.SetSink(Name(i), nullptr);
  }
  void Restart(int i, Generation g) {
    net_.SetDown(Name(i), false);
    Add(i, g);
    Start(i);
  }
  void Run(Duration d) { sched_.RunFor(d); }
  Node& node(int i) { return *nodes_[i].node; }
  RecordingListener& listener(int i) { return *nodes_[i].listener; }
  testing::TestNetwork& net() { return net_; }
  simenv::VirtualScheduler& sched() { return sched_; }
  int size() const { return static_cast<int>(nodes_.size()); }

  // True if node i sees node j in `state`.
  bool Sees(int i, int j, MemberState state) {
    auto v = node(i).Member(Name(j));
    return v && v->state == state;
  }

 private:
  simenv::VirtualScheduler sched_;
  testing::TestNetwork net_;
  Config config_;
  std::vector<TestNode> nodes_;
};

inline std::vector<BlockEvent> Chain(uint64_t base, int len) {
  std::vector<BlockEvent> ev;
  for (int i = 0; i < len; ++i) {
    ev.push_back(
        {BlockEvent::Kind::kAdded, base + static_cast<uint64_t>(i), static_cast<uint32_t>(i)});
  }
  return ev;
}

// Delivers to node `to` a push-pull "from" node `from` that carries `u` (as a peer's notice).
inline void Inject(Cluster& c, int to, int from, const MemberUpdate& u) {
  Message m;
  m.type = MsgType::kPushPull;
  m.header.sender = Cluster::Name(from);
  m.header.generation = 1;
  m.header.incarnation = c.node(from).incarnation();
  m.members.push_back(u);
  const std::vector<uint8_t> body = Encode(m);
  c.node(to).OnMessage(Cluster::Name(from), Channel::kDatagram, body);
}

// Conditions of a large cluster, where the false death at N = 128 and 50% loss happened (issue
// 3): no piggybacked dissemination, no random notices, no push-pull, so nothing but the
// mechanisms under test can carry a suspicion to its target or a refutation back.
inline Config QuietDisseminationConfig() {
  Config config;
  config.piggyback_budget_bytes = 0;
  config.refute_fanout = 0;
  config.push_pull_interval = 1h;
  return config;
}

}  // namespace hearsay::gossip
