#include "hearsay/gossip/node.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "hearsay/gossip/test_network.h"
#include "hearsay/simenv/virtual_scheduler.h"

namespace hearsay::gossip {
namespace {

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

std::vector<BlockEvent> Chain(uint64_t base, int len) {
  std::vector<BlockEvent> ev;
  for (int i = 0; i < len; ++i) {
    ev.push_back(
        {BlockEvent::Kind::kAdded, base + static_cast<uint64_t>(i), static_cast<uint32_t>(i)});
  }
  return ev;
}

TEST(NodeTest, JoinsThroughSeedsAndEveryoneSeesEveryone) {
  Cluster c(6, 1);
  c.StartAll();
  c.Run(5s);
  for (int i = 0; i < c.size(); ++i) {
    EXPECT_EQ(c.node(i).live_member_count(), 5u) << "node " << i;
    for (int j = 0; j < c.size(); ++j) {
      if (i != j) {
        EXPECT_TRUE(c.Sees(i, j, MemberState::kAlive)) << i << " sees " << j;
      }
    }
  }
}

// Regression (soak seed 1009): the two seeds' first messages to each other were lost and each
// joiner reached only one seed, so two islands formed; a node stopped contacting seeds once it
// knew any member, and no member of one island ever named a member of the other.
TEST(NodeTest, JoinersSplitBetweenSeedsStillFormOneCluster) {
  Cluster c(6, 3);
  auto block_both = [&](int a, int b, bool blocked) {
    c.net().Block(Cluster::Name(a), Cluster::Name(b), blocked);
    c.net().Block(Cluster::Name(b), Cluster::Name(a), blocked);
  };
  // Islands at join time: {n0, n2, n3} reach only n0, {n1, n4, n5} only n1.
  const std::vector<std::pair<int, int>> cuts = {{0, 1}, {2, 1}, {3, 1}, {4, 0}, {5, 0},
                                                 {2, 4}, {2, 5}, {3, 4}, {3, 5}};
  for (auto [a, b] : cuts) block_both(a, b, true);
  c.StartAll();
  c.Run(3s);
  EXPECT_FALSE(c.Sees(0, 1, MemberState::kAlive));  // the split did happen
  EXPECT_TRUE(c.Sees(0, 2, MemberState::kAlive));
  EXPECT_TRUE(c.Sees(1, 4, MemberState::kAlive));
  for (auto [a, b] : cuts) block_both(a, b, false);
  c.Run(20s);
  for (int i = 0; i < c.size(); ++i) {
    for (int j = 0; j < c.size(); ++j) {
      if (i == j) continue;
      EXPECT_TRUE(c.Sees(i, j, MemberState::kAlive)) << i << " sees " << j;
    }
  }
}

TEST(NodeTest, SingleNodeWithoutSeedsStartsAlone) {
  simenv::VirtualScheduler sched;
  testing::TestNetwork net(sched, 1);
  Rng rng(1);
  Node node("solo", 1, "solo", Config{}, sched, rng, net.Attach("solo"));
  net.SetSink("solo", &node);
  node.Start({});
  sched.RunFor(10s);
  EXPECT_EQ(node.live_member_count(), 0u);
  EXPECT_EQ(node.counters().msgs_sent, 0u);
}

TEST(NodeTest, LoadAndCacheEventsReachEveryPeer) {
  Config config;
  config.landmark_stride = 4;
  Cluster c(5, 2, config);
  c.StartAll();
  c.Run(3s);
  LoadReport load;
  load.queue_depth = 7;
  load.running = 3;
  load.kv_used_tokens = 100;
  load.kv_capacity_tokens = 1000;
  load.prefill_ms_per_token = 0.25;
  load.waiting_prefill_tokens = 5000;
  load.running_context_tokens = 12000;
  load.queue_wait_us = 42000;
  c.node(2).SetLoad(load);
  const auto events = Chain(1000, 10);  // landmarks at 0, 4, 8
  c.node(2).PublishCacheEvents(events);
  c.Run(3s);
  std::vector<prefix::BlockKey> chain;
  for (const auto& e : events) chain.push_back(e.key);
  for (int i = 0; i < c.size(); ++i) {
    if (i == 2) continue;
    auto v = c.node(i).Member("n2");
    ASSERT_TRUE(v);
    EXPECT_TRUE(v->has_load);
    EXPECT_EQ(v->load.queue_depth, 7u);
    EXPECT_EQ(v->load.prefill_ms_per_token, 0.25);
    EXPECT_EQ(v->load.waiting_prefill_tokens, 5000u);
    EXPECT_EQ(v->load.running_context_tokens, 12000u);
    EXPECT_EQ(v->load.queue_wait_us, 42000u);
    EXPECT_EQ(c.listener(i).caches["n2"], (std::set<prefix::BlockKey>{1000, 1004, 1008}));
    EXPECT_EQ(c.node(i).EstimateMatchedBlocks("n2", chain), 9u);
    EXPECT_EQ(c.node(i).EstimateMatchedBlocks("n2", std::span(chain).first(4)), 1u);
    EXPECT_EQ(c.node(i).EstimateMatchedBlocks("n3", chain), 0u);
    ASSERT_TRUE(v->rtt_ms.has_value());
    EXPECT_GT(*v->rtt_ms, 0.0);
    EXPECT_LT(*v->rtt_ms, 10.0);
  }
  // Removals propagate too.
  c.node(2).PublishCacheEvents(std::vector<BlockEvent>{{BlockEvent::Kind::kRemoved, 1008, 8}});
  c.Run(3s);
  for (int i = 0; i < c.size(); ++i) {
    if (i == 2) continue;
    EXPECT_EQ(c.listener(i).caches["n2"], (std::set<prefix::BlockKey>{1000, 1004}));
    EXPECT_EQ(c.node(i).EstimateMatchedBlocks("n2", chain), 5u);
  }
}

TEST(NodeTest, FreshSmallDeltasGoAsDatagramsAndABacklogOnTheStream) {
  Config config;
  config.landmark_stride = 1;
  Cluster c(8, 5, config);
  c.StartAll();
  c.Run(3s);
  auto streamed = [&] {
    uint64_t n = 0;
    for (int i = 0; i < c.size(); ++i) n += c.node(i).counters().stream_msgs_sent;
    return n;
  };
  // Every node writes 30 fresh entries (~230 bytes): one exchange may carry several origins'
  // deltas, over 1,400 bytes together, but each fits a datagram, so none goes on the stream.
  const uint64_t before = streamed();
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < c.size(); ++i) {
      c.node(i).PublishCacheEvents(Chain(100000 * (i + 1) + 1000 * round, 30));
    }
    c.Run(100ms);
  }
  c.Run(2s);
  EXPECT_EQ(streamed(), before);
  for (int i = 0; i < c.size(); ++i) {
    for (int j = 0; j < c.size(); ++j) {
      if (i == j) continue;
      EXPECT_EQ(c.listener(i).caches[Cluster::Name(j)].size(), 150u) << i << " of " << j;
    }
  }
  // A backlog far over 1,400 bytes (2,000 entries of ~8 bytes) travels on the stream.
  c.node(2).PublishCacheEvents(Chain(9000000, 2000));
  c.Run(2s);
  EXPECT_GT(streamed(), before);
  for (int i = 0; i < c.size(); ++i) {
    if (i == 2) continue;
    EXPECT_EQ(c.listener(i).caches["n2"].size(), 2150u) << "node " << i;
  }
}

// Syns per gossip interval: gossip_fanout, plus one once the cluster is larger than
// large_cluster_members (here lowered so that 8 nodes count as large).
TEST(NodeTest, LargeClustersSendOneMoreSynPerGossipInterval) {
  for (size_t large : {size_t{64}, size_t{5}}) {
    Config config;
    config.large_cluster_members = large;
    Cluster c(8, 11, config);
    c.StartAll();
    c.Run(3s);
    auto syns = [&] {
      uint64_t n = 0;
      for (int i = 0; i < c.size(); ++i) {
        n += c.node(i).counters().sent_by_type[static_cast<size_t>(MsgType::kSyn)];
      }
      return n;
    };
    const uint64_t before = syns();
    c.Run(10s);
    // 10 s = 50 gossip intervals per node, 8 nodes.
    const double per_interval = static_cast<double>(syns() - before) / (8 * 50);
    const double expected = config.gossip_fanout + (large < 8 ? 1 : 0);
    EXPECT_NEAR(per_interval, expected, 0.1) << "large_cluster_members " << large;
  }
}

// A node whose state changes sends its full digest with every Syn, on the stream when it is too
// large for a datagram (large clusters), so the peer answers with deltas at once. Without it, such
// a digest would be dropped and the peer would answer the bare Syn with its own full digest (a
// SynAck), one leg more per exchange. Here datagrams are made too small for a 12-node digest.
TEST(NodeTest, SynCarriesADigestTooLargeForADatagramOnTheStream) {
  Config config;
  config.datagram_budget_bytes = 120;
  Cluster c(12, 12, config);
  c.StartAll();
  uint64_t key = 1;
  auto churn = [&](Duration d) {
    for (Duration t{}; t < d; t += 50ms) {
      for (int i = 0; i < c.size(); ++i) {
        c.node(i).PublishCacheEvents(Chain(key, 16));
        key += 16;
      }
      c.Run(50ms);
    }
  };
  churn(5s);
  auto sent = [&](MsgType type) {
    uint64_t n = 0;
    for (int i = 0; i < c.size(); ++i) {
      n += c.node(i).counters().sent_by_type[static_cast<size_t>(type)];
    }
    return n;
  };
  const uint64_t syns = sent(MsgType::kSyn), syn_acks = sent(MsgType::kSynAck);
  churn(5s);
  const uint64_t new_syns = sent(MsgType::kSyn) - syns;
  const uint64_t new_syn_acks = sent(MsgType::kSynAck) - syn_acks;
  ASSERT_GT(new_syns, 500u);
  // Under churn every Syn carries the digest: no peer needs to send its own.
  EXPECT_LT(new_syn_acks, new_syns / 20) << new_syn_acks << " SynAcks for " << new_syns << " Syns";
  for (int i = 0; i < c.size(); ++i) {
    for (int j = 0; j < c.size(); ++j) {
      if (i != j) {
        EXPECT_TRUE(c.Sees(i, j, MemberState::kAlive)) << i << " " << j;
      }
    }
  }
}

TEST(NodeTest, LoadRidesOnProbeAcks) {
  Config config;
  config.gossip_interval = 1h;  // no anti-entropy: only piggybacked load
  Cluster c(2, 3, config);
  c.StartAll();
  c.Run(2s);
  LoadReport load;
  load.queue_depth = 11;
  c.node(1).SetLoad(load);
  c.Run(3s);
  auto v = c.node(0).Member("n1");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->load.queue_depth, 11u);
}

TEST(NodeTest, OverloadFlagHasHysteresis) {
  Cluster c(2, 4);
  c.StartAll();
  c.Run(1s);
  LoadReport l;
  l.queue_depth = 63;
  c.node(0).SetLoad(l);
  EXPECT_FALSE(c.node(0).overloaded());
  l.queue_depth = 64;
  c.node(0).SetLoad(l);
  EXPECT_TRUE(c.node(0).overloaded());
  l.queue_depth = 40;  // between the marks: stays overloaded
  c.node(0).SetLoad(l);
  EXPECT_TRUE(c.node(0).overloaded());
  c.Run(3s);
  EXPECT_TRUE(c.node(1).Member("n0")->load.overloaded);
  l.queue_depth = 32;
  c.node(0).SetLoad(l);
  EXPECT_FALSE(c.node(0).overloaded());
  c.Run(3s);
  EXPECT_FALSE(c.node(1).Member("n0")->load.overloaded);
}

TEST(NodeTest, FullPrefixCacheIsNotOverloadButPinnedKvIs) {
  Cluster c(2, 4);
  c.StartAll();
  c.Run(1s);
  LoadReport l;
  l.kv_capacity_tokens = 1000;
  l.kv_used_tokens = 1000;  // an LRU cache full of evictable prefixes: normal
  l.running_context_tokens = 500;
  c.node(0).SetLoad(l);
  EXPECT_FALSE(c.node(0).overloaded());
  l.running_context_tokens = 970;  // running requests hold nearly all of it
  c.node(0).SetLoad(l);
  EXPECT_TRUE(c.node(0).overloaded());
  l.running_context_tokens = 950;  // between the marks: stays overloaded
  c.node(0).SetLoad(l);
  EXPECT_TRUE(c.node(0).overloaded());
  l.running_context_tokens = 900;
  c.node(0).SetLoad(l);
  EXPECT_FALSE(c.node(0).overloaded());
}

TEST(NodeTest, CrashedNodeIsDeclaredDeadByAll) {
  Cluster c(5, 5);
  c.StartAll();
  c.Run(5s);
  c.Crash(3);
  c.Run(20s);
  for (int i = 0; i < c.size(); ++i) {
    if (i == 3) continue;
    EXPECT_TRUE(c.Sees(i, 3, MemberState::kDead)) << i;
    EXPECT_EQ(c.node(i).PeerStore("n3"), nullptr);
    for (int j = 0; j < c.size(); ++j) {
      if (j != i && j != 3) {
        EXPECT_TRUE(c.Sees(i, j, MemberState::kAlive));
      }
    }
  }
}

// Survivors wait for no round-robin turn to probe a member whose state, arriving
// several times a second under churn, stopped: the first to notice probes it out of turn, so
// all of them suspect it within about 1 s of silence plus a probe or two. Without it the kill is
// probed about once a second cluster-wide, and at N = 100 a 4.4 s wait for the first probe was
// seen. In a healthy cluster the state keeps arriving, and such probes stay rare.
TEST(NodeTest, MemberWhoseStateStopsArrivingIsProbedOutOfTurnByEveryone) {
  Cluster c(12, 11);
  c.StartAll();
  uint64_t key = 1;
  auto churn = [&](Duration d, int skip) {
    for (Duration t{}; t < d; t += 50ms) {
      for (int i = 0; i < c.size(); ++i) {
        if (i != skip) c.node(i).PublishCacheEvents(Chain(key, 16));
        key += 16;
      }
      c.Run(50ms);
    }
  };
  churn(10s, -1);
  uint64_t healthy = 0;
  for (int i = 0; i < c.size(); ++i) healthy += c.node(i).counters().silence_probes;
  EXPECT_LE(healthy, 3u);  // over 10 s of a 12-node cluster: 120 probes in all
  c.Crash(5);
  churn(3500ms, 5);
  int suspecting = 0;
  uint64_t silent = 0;
  for (int i = 0; i < c.size(); ++i) {
    if (i == 5) continue;
    silent += c.node(i).counters().silence_probes;
    suspecting += c.Sees(i, 5, MemberState::kSuspect) || c.Sees(i, 5, MemberState::kDead);
  }
  // The first to notice accuses; the others then probe it as a suspect (suspects go first).
  EXPECT_GE(silent, 1u);
  EXPECT_EQ(suspecting, c.size() - 1);
}

// Regression: at 50% loss a probe's direct and indirect round trips all fail about a
// third of the time, so healthy members were accused over and over; the accusations raised
// every node's local health to its cap (probing at 9x its interval), and in a small cluster, with
// few probers to confirm a suspicion, a real death took ~20 s to be declared by all. A probe now
// counts any message heard from its target as an ack.
TEST(NodeTest, SmallClusterAtHalfLossKeepsHealthAndDetectsDeathWithin15s) {
  for (uint64_t seed : {21, 22, 23}) {
    Cluster c(8, seed);
    c.net().set_loss(0.5);
    c.StartAll();
    c.Run(30s);
    int health = 0;
    for (int i = 0; i < c.size(); ++i) health = std::max(health, c.node(i).local_health());
    EXPECT_LE(health, 3) << "seed " << seed;
    c.Crash(5);
    Duration detect{};
    for (; detect < 40s; detect += 100ms) {
      bool all = true;
      for (int i = 0; i < c.size() && all; ++i) {
        if (i != 5) all = c.Sees(i, 5, MemberState::kDead);
      }
      if (all) break;
      c.Run(100ms);
    }
    EXPECT_LE(detect, 15s) << "seed " << seed << ": " << ToSeconds(detect) << " s";
    for (int i = 0; i < c.size(); ++i) {
      for (int j = 0; j < c.size(); ++j) {
        if (i != 5 && j != 5 && i != j) {
          EXPECT_FALSE(c.Sees(i, j, MemberState::kDead)) << "seed " << seed;
        }
      }
    }
  }
}

TEST(NodeTest, RestartWithNewGenerationDropsOldCacheAtOnce) {
  Config config;
  config.landmark_stride = 1;
  Cluster c(4, 6, config);
  c.StartAll();
  c.Run(3s);
  c.node(1).PublishCacheEvents(Chain(500, 3));
  c.Run(3s);
  ASSERT_EQ(c.listener(0).caches["n1"].size(), 3u);
  c.Crash(1);
  c.Run(200ms);  // far less than failure detection takes
  c.Restart(1, 2);
  c.Run(3s);
  for (int i : {0, 2, 3}) {
    auto v = c.node(i).Member("n1");
    ASSERT_TRUE(v);
    EXPECT_EQ(v->generation, 2u);
    EXPECT_EQ(v->state, MemberState::kAlive);
    EXPECT_TRUE(c.listener(i).caches["n1"].empty()) << i;
    ASSERT_NE(c.node(i).PeerStore("n1"), nullptr);
    EXPECT_EQ(c.node(i).PeerStore("n1")->live_count(), 0u);
  }
}

TEST(NodeTest, GracefulLeaveIsSeenAsLeft) {
  Cluster c(4, 7);
  c.StartAll();
  c.Run(3s);
  c.node(2).Leave();
  c.Run(3s);
  for (int i : {0, 1, 3}) EXPECT_TRUE(c.Sees(i, 2, MemberState::kLeft)) << i;
  EXPECT_TRUE(c.node(2).left());
}

TEST(NodeTest, SlowNodeThatAnswersIsNotDeclaredDead) {
  Cluster c(5, 8);
  c.StartAll();
  c.Run(3s);
  // Answers after 700 ms: later than the probe timeout, within the probe interval.
  c.net().SetExtraDelay("n4", 700ms);
  c.Run(60s);
  for (int i = 0; i < 4; ++i) {
    auto v = c.node(i).Member("n4");
    ASSERT_TRUE(v);
    EXPECT_NE(v->state, MemberState::kDead) << i;
    ASSERT_TRUE(v->rtt_ms.has_value());
    EXPECT_GT(*v->rtt_ms, 500.0);
  }
}

TEST(NodeTest, SuspectRefutesWithHigherIncarnation) {
  Cluster c(4, 9);
  c.StartAll();
  c.Run(3s);
  // n0 cannot reach n3 directly, but others can: n0 suspects n3 unless indirect probes save it.
  c.net().Block("n0", "n3", true);
  c.net().Block("n3", "n0", true);
  c.net().Block("n1", "n3", true);
  c.net().Block("n3", "n1", true);
  c.net().Block("n2", "n3", true);
  c.net().Block("n3", "n2", true);
  c.Run(3s);  // long enough to suspect, too short to kill
  c.net().Block("n0", "n3", false);
  c.net().Block("n3", "n0", false);
  c.net().Block("n1", "n3", false);
  c.net().Block("n3", "n1", false);
  c.net().Block("n2", "n3", false);
  c.net().Block("n3", "n2", false);
  c.Run(30s);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(c.Sees(i, 3, MemberState::kAlive)) << i;
  EXPECT_GT(c.node(3).incarnation(), 0u);
}

// Delivers to node `to` a push-pull "from" node `from` that carries `u` (as a peer's notice).
void Inject(Cluster& c, int to, int from, const MemberUpdate& u) {
  Message m;
  m.type = MsgType::kPushPull;
  m.header.sender = Cluster::Name(from);
  m.header.generation = 1;
  m.header.incarnation = c.node(from).incarnation();
  m.members.push_back(u);
  const std::vector<uint8_t> body = Encode(m);
  c.node(to).OnMessage(Cluster::Name(from), Channel::kDatagram, body);
}

// Conditions of a large cluster, where a false death at N = 128 and 50% loss can happen: no
// piggybacked dissemination, no random notices, no push-pull, so nothing but the
// mechanisms under test can carry a suspicion to its target or a refutation back.
Config QuietDisseminationConfig() {
  Config config;
  config.piggyback_budget_bytes = 0;
  config.refute_fanout = 0;
  config.push_pull_interval = 1h;
  return config;
}

// Regression (N = 128 at 50% loss): n123 held an accusation of n119 for 24 s and
// declared it dead, never having heard from it directly nor received its refutation. A node
// that suspects a member whose newer state keeps arriving through others now tells it, and the
// suspect refutes.
TEST(NodeTest, SuspectWhoseStateKeepsArrivingLearnsOfItsSuspicionAndRefutes) {
  Cluster c(5, 31, QuietDisseminationConfig());
  c.StartAll();
  c.Run(5s);
  for (int i = 0; i < c.size(); ++i) ASSERT_EQ(c.node(i).live_member_count(), 4u) << i;
  // n0 never hears n3 directly (so the "it talks to us" path cannot fire), but its state
  // reaches n0 through the others.
  c.net().Block("n3", "n0", true);
  MemberUpdate accusation{MemberState::kSuspect, "n3", "n3", 1, 0, "n1", {}};
  Inject(c, 0, 1, accusation);
  ASSERT_TRUE(c.Sees(0, 3, MemberState::kSuspect));
  for (int k = 0; k < 20; ++k) {
    c.node(3).PublishCacheEvents(Chain(7000 + 100 * k, 1));
    c.Run(100ms);
  }
  EXPECT_GT(c.node(0).counters().evidence_notices, 0u);
  EXPECT_GT(c.node(3).incarnation(), 0u) << "n3 never learned of its suspicion";
}

// The refutation goes straight back to whoever delivered the accusation.
TEST(NodeTest, RefutationAnswersTheAccusingMessage) {
  Cluster c(5, 32, QuietDisseminationConfig());
  c.StartAll();
  c.Run(5s);
  MemberUpdate accusation{MemberState::kSuspect, "n3", "n3", 1, 0, "n0", {}};
  Inject(c, 0, 1, accusation);  // n0 suspects n3...
  Inject(c, 3, 0, accusation);  // ...and says so to n3
  EXPECT_EQ(c.node(3).incarnation(), 1u);
  c.Run(5ms);  // a few link latencies: far less than n3's next message to n0 would take
  auto v = c.node(0).Member("n3");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->incarnation, 1u);
  EXPECT_EQ(v->state, MemberState::kAlive);
  // Regression (N = 128, 50% loss, seed 2): n2 still holds the accusation n3 has already refuted
  // and tells n3; n3 must answer it too, or n2 declares it dead.
  Inject(c, 2, 1, accusation);
  ASSERT_TRUE(c.Sees(2, 3, MemberState::kSuspect));
  Inject(c, 3, 2, accusation);
  EXPECT_EQ(c.node(3).incarnation(), 1u);
  c.Run(5ms);
  EXPECT_TRUE(c.Sees(2, 3, MemberState::kAlive));
}

// Regression (N = 100 at 50% loss, seed 2): a node never learned of another member
// for the whole run, so the member's death could never be declared by all. Here n2 and n3
// cannot talk, no updates are piggybacked and push-pull is off; n2 learns of n3 only because
// the others' digests name it.
TEST(NodeTest, MemberNamedOnlyInDigestsIsDiscovered) {
  Cluster c(4, 33, QuietDisseminationConfig());
  c.net().Block("n2", "n3", true);
  c.net().Block("n3", "n2", true);
  for (int i = 0; i < 3; ++i) c.Start(i);
  c.Run(3s);
  c.Start(3);
  c.Run(10s);
  EXPECT_TRUE(c.Sees(2, 3, MemberState::kAlive) || c.Sees(2, 3, MemberState::kSuspect));
  EXPECT_GT(c.node(2).counters().discovery_pulls, 0u);
}

// A member learned after a node's probe pass began joins that pass at a random place. Otherwise
// it would wait for the next pass, which starts only after every member known at the last
// shuffle was probed (N seconds): at N = 256 a member learned during the join phase was probed by
// no one for the first 9 s. Here n39 joins a settled 40-node cluster (whose passes last ~39 s)
// and dies 3 s later, with no cache churn (so no silence probes): only round-robin probes can
// find it.
TEST(NodeTest, MemberLearnedMidPassIsProbedInThatPass) {
  Cluster c(40, 41);
  for (int i = 0; i < 39; ++i) c.Start(i);
  c.Run(10s);
  c.Start(39);
  c.Run(3s);
  for (int i = 0; i < 39; ++i) ASSERT_TRUE(c.Sees(i, 39, MemberState::kAlive)) << i;
  c.Crash(39);
  Duration detect{};
  for (; detect < 30s; detect += 100ms) {
    bool all = true;
    for (int i = 0; i < 39 && all; ++i) all = c.Sees(i, 39, MemberState::kDead);
    if (all) break;
    c.Run(100ms);
  }
  EXPECT_LE(detect, 15s) << ToSeconds(detect) << " s";
}

// In a large cluster only about refute_fanout of the members that hear of a suspicion
// probe the suspect out of turn. When everyone did, each failed probe anywhere cost a probe of
// every node, and at N = 256 and 50% loss the suspicions of healthy members took every probe
// slot, leaving none for the round-robin. Here 9 nodes of a 40-node cluster (which passes last
// ~39 s) are told that n20 is suspected: its probes come from the accuser's own, the few chosen
// hearers' and the round-robin's share, far fewer than one per hearer.
TEST(NodeTest, OnlyAFewHearersProbeASuspectOutOfTurn) {
  Cluster c(40, 42);
  c.StartAll();
  c.Run(10s);
  // n20 hears everything but cannot answer, so the suspicion stands for the whole window.
  for (int i = 0; i < c.size(); ++i) c.net().Block("n20", Cluster::Name(i), true);
  const uint64_t pings_before =
      c.node(20).counters().received_by_type[static_cast<size_t>(MsgType::kPing)];
  for (int i = 0; i < c.size(); ++i) {
    if (i == 20 || i == 7) continue;
    MemberUpdate accusation{MemberState::kSuspect, "n20", "n20", 1, 0, "n7", {}};
    Inject(c, i, 7, accusation);
    ASSERT_TRUE(c.Sees(i, 20, MemberState::kSuspect)) << i;
  }
  // Within one probe interval every hearer has had its next probe. Had every one of the 38
  // spent it on n20, n20 would get 38 probes and their retries; about refute_fanout / n of them
  // (8 of 40) are chosen, plus the round-robin's share (one in 39 probes).
  c.Run(1s);
  const uint64_t pings =
      c.node(20).counters().received_by_type[static_cast<size_t>(MsgType::kPing)] - pings_before;
  EXPECT_LE(pings, 70u);
  EXPECT_GE(pings, 2u);
}

// Only a version of a member's state above every one seen before is evidence that it
// is alive. Catching up on its older writes is not: at N = 256 and 50% loss a killed member's
// last writes kept reaching some nodes for 2.5 s after its death (pulls lost and retried) and
// saved their probes of it. Here n0's only peers are n1 and n3, played by hand: n1's digest names
// n3 at version 40, then n3 is silent while n1 delivers those 40 versions one every 100 ms.
// Every probe of n3 must fail (and n3 be suspected); counting the late deltas as evidence saved
// every one of them.
TEST(NodeTest, CatchingUpOnAMembersOldStateIsNotEvidenceOfLife) {
  Cluster c(1, 43);
  c.StartAll();
  auto send = [&](Message m) {
    m.header.sender = "n1";
    m.header.generation = 1;
    const std::vector<uint8_t> body = Encode(m);
    c.node(0).OnMessage("n1", Channel::kDatagram, body);
  };
  Message hello;
  hello.type = MsgType::kPushPull;
  hello.members.push_back({MemberState::kAlive, "n1", "n1", 1, 0, {}, {}});
  hello.members.push_back({MemberState::kAlive, "n3", "n3", 1, 0, {}, {}});
  send(hello);
  ASSERT_EQ(c.node(0).live_member_count(), 2u);
  OriginStore n3("n3", 1, 256, nullptr, /*writer=*/true);
  std::vector<OriginDelta> deltas;
  for (uint64_t v = 1; v <= 40; ++v) {
    ASSERT_TRUE(n3.PutCache(1000 + v, 0, true));
    std::optional<OriginDelta> d = n3.BuildDelta(v - 1, 1000);
    ASSERT_TRUE(d.has_value());
    deltas.push_back(*d);
  }
  Message syn_ack;
  syn_ack.type = MsgType::kSynAck;
  syn_ack.digest = {{"n1", 1, 0}, {"n3", 1, 40}};
  send(syn_ack);
  for (const OriginDelta& d : deltas) {
    Message m;
    m.type = MsgType::kDeltas;
    m.deltas = {d};
    send(m);
    c.Run(100ms);
  }
  ASSERT_EQ(c.node(0).PeerStore("n3")->max_version(), 40u);
  EXPECT_TRUE(c.Sees(0, 3, MemberState::kSuspect) || c.Sees(0, 3, MemberState::kDead));
  EXPECT_EQ(c.node(0).counters().probes_relayed, 0u);
}

TEST(NodeTest, MalformedMessagesAreCountedAndChangeNothing) {
  Cluster c(3, 10);
  c.StartAll();
  c.Run(3s);
  const auto before = c.node(0).Members();
  Rng rng(77);
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> junk(rng.Below(64));
    for (auto& b : junk) b = static_cast<uint8_t>(rng.NextU64());
    if (!junk.empty() && rng.Bernoulli(0.5)) junk[0] = kWireVersion;
    c.node(0).OnMessage("evil", Channel::kDatagram, junk);
  }
  EXPECT_GE(c.node(0).counters().dropped_malformed, 1900u);
  const auto after = c.node(0).Members();
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(before[i].id, after[i].id);
    EXPECT_EQ(before[i].state, after[i].state);
  }
}

TEST(NodeTest, ConvergesUnderLossAndDuplication) {
  Config config;
  config.landmark_stride = 1;
  // No heartbeat writes: one made just before the check would not have spread yet, and the
  // exact version comparison below is about the cache writes.
  config.heartbeat_interval = 1h;
  Cluster c(6, 11, config);
  c.net().set_loss(0.3);
  c.net().set_dup(0.3);
  c.StartAll();
  c.Run(5s);
  for (int k = 0; k < 6; ++k) {
    c.node(k).PublishCacheEvents(Chain(10000 * (k + 1), 20));
    std::vector<BlockEvent> rm;
    for (int b = 0; b < 20; b += 3) {
      rm.push_back({BlockEvent::Kind::kRemoved, 10000ULL * (k + 1) + b, static_cast<uint32_t>(b)});
    }
    c.node(k).PublishCacheEvents(rm);
  }
  c.Run(10s);
  for (int i = 0; i < 6; ++i) {
    for (int k = 0; k < 6; ++k) {
      if (i == k) continue;
      const OriginStore* s = c.node(i).PeerStore(Cluster::Name(k));
      ASSERT_NE(s, nullptr);
      EXPECT_EQ(s->max_version(), c.node(k).own_store().max_version());
      EXPECT_EQ(s->live_count(), 13u);
      EXPECT_EQ(c.listener(i).caches[Cluster::Name(k)].size(), 13u);
      EXPECT_TRUE(c.Sees(i, k, MemberState::kAlive));
    }
  }
}

}  // namespace
}  // namespace hearsay::gossip

namespace hearsay::gossip {
namespace {

// Each node's landmark stride follows the cluster size it sees. When the cluster grows
// past the budget every origin re-publishes at a coarser stride, which its peers take as a run;
// when it shrinks well below, the finer landmarks come back from the blocks the origin holds.
// At every step, no replica holds a key off its stated stride, and the estimates stay within it.
TEST(NodeTest, StrideFollowsTheClusterSizeAndPeersNeverMixStrides) {
  Config config;
  config.landmark_stride = 2;
  config.landmark_budget_members = 3;
  Cluster c(6, 11, config);
  for (int i = 0; i < 3; ++i) c.Start(i);
  // n2 holds blocks 0..20 of one chain (keys 5000 + index).
  const auto events = Chain(5000, 21);
  c.node(2).PublishCacheEvents(events);
  std::vector<prefix::BlockKey> chain;
  for (const auto& e : events) chain.push_back(e.key);
  // Invariant, checked every 50 ms: every replica of n2 holds only keys at its stated stride, and
  // the listener's view agrees with the replica.
  int checks = 0;
  std::set<int> down;
  auto check = [&] {
    for (int i = 0; i < c.size(); ++i) {
      if (i == 2 || down.count(i) != 0 || !c.Sees(i, 2, MemberState::kAlive)) continue;
      const OriginStore* r = c.node(i).PeerStore("n2");
      if (r == nullptr || r->stride() == 0) continue;
      ++checks;
      for (const auto& e : r->LiveKeys()) {
        ASSERT_EQ(e.block_index % r->stride(), 0u) << "node " << i << " stride " << r->stride();
      }
      ASSERT_EQ(c.listener(i).strides["n2"], r->stride()) << i;
    }
  };
  auto run_checked = [&](Duration d) {
    for (Duration t{}; t < d; t += 50ms) {
      c.Run(50ms);
      check();
    }
  };
  auto expect_view = [&](int i, uint32_t stride) {
    SCOPED_TRACE(::testing::Message() << "node " << i << " stride " << stride);
    EXPECT_EQ(c.node(i).PeerStride("n2"), stride);
    std::set<prefix::BlockKey> want;
    for (uint32_t b = 0; b < 21; b += stride) want.insert(5000 + b);
    EXPECT_EQ(c.listener(i).caches["n2"], want);
    // Truth 21 blocks; the estimate is the last landmark held + 1, within the stride.
    const uint32_t est = c.node(i).EstimateMatchedBlocks("n2", chain);
    EXPECT_EQ(est, (20 / stride) * stride + 1);
    EXPECT_LT(21 - est, stride);
  };
  run_checked(3s);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(c.node(i).landmark_stride(), 2u);
  for (int i : {0, 1}) expect_view(i, 2);

  // Six members: 6 > 3, so 2 x 2 = 4.
  const uint64_t snapshots_before = c.node(0).counters().snapshots_applied;
  for (int i = 3; i < 6; ++i) c.Start(i);
  run_checked(5s);
  for (int i = 0; i < c.size(); ++i) {
    EXPECT_EQ(c.node(i).landmark_stride(), 4u) << i;
    EXPECT_EQ(c.node(i).counters().deltas_stride_mismatch, 0u) << i;
    if (i != 2) expect_view(i, 4);
  }
  EXPECT_EQ(c.node(2).counters().restrides, 1u);
  EXPECT_EQ(c.node(0).counters().snapshots_applied, snapshots_before);

  // Down to two: 2 + 2 / 3 = 2 <= 3 members calls for stride 2 again; n2 re-derives landmarks
  // 2, 6, 10, 14 and 18, which it never published at stride 4.
  for (int i : {1, 3, 4, 5}) {
    c.Crash(i);
    down.insert(i);
  }
  run_checked(40s);
  ASSERT_TRUE(c.Sees(0, 1, MemberState::kDead));
  EXPECT_EQ(c.node(2).landmark_stride(), 2u);
  EXPECT_EQ(c.node(2).counters().restrides, 2u);
  expect_view(0, 2);
  EXPECT_GT(checks, 1000);
}

// A change of stride travels as an ordinary run applied whole, never as a snapshot,
// and a replica that applied it serves it on: here n1 never hears from n2 directly, so it can only
// learn n2's new stride from replicas that took the change as a run.
TEST(NodeTest, StrideChangeReachesPeersAsARunThroughReplicas) {
  Config config;
  config.landmark_stride = 2;
  config.landmark_budget_members = 3;
  Cluster c(6, 12, config);
  c.net().Block("n1", "n2", true);
  c.net().Block("n2", "n1", true);
  for (int i = 0; i < 3; ++i) c.Start(i);
  c.node(2).PublishCacheEvents(Chain(5000, 21));
  auto view_of_n2 = [&](int i) {
    std::set<prefix::BlockKey> out;
    const OriginStore* r = c.node(i).PeerStore("n2");
    if (r == nullptr) return out;
    for (const auto& e : r->LiveKeys()) out.insert(e.key);
    return out;
  };
  auto want = [](uint32_t stride) {
    std::set<prefix::BlockKey> out;
    for (uint32_t b = 0; b < 21; b += stride) out.insert(5000 + b);
    return out;
  };
  c.Run(3s);
  ASSERT_EQ(view_of_n2(1), want(2));
  ASSERT_EQ(c.node(1).PeerStride("n2"), 2u);
  // Six members: every node's stride goes 2 -> 4. Each check runs every 50 ms: a replica holds
  // only keys at its stride.
  for (int i = 3; i < 6; ++i) c.Start(i);
  for (int step = 0; step < 100; ++step) {
    c.Run(50ms);
    for (int i = 0; i < c.size(); ++i) {
      const OriginStore* r = i == 2 ? nullptr : c.node(i).PeerStore("n2");
      if (r == nullptr || r->stride() == 0) continue;
      for (const auto& e : r->LiveKeys()) ASSERT_EQ(e.block_index % r->stride(), 0u) << i;
    }
  }
  EXPECT_EQ(c.node(2).landmark_stride(), 4u);
  EXPECT_EQ(c.node(1).PeerStride("n2"), 4u);
  EXPECT_EQ(view_of_n2(1), want(4));
  EXPECT_EQ(c.listener(1).caches["n2"], want(4));
  EXPECT_EQ(c.listener(1).strides["n2"], 4u);
  for (int i = 0; i < c.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(c.node(i).counters().snapshots_applied, 0u);
    EXPECT_EQ(c.node(i).counters().snapshots_sent, 0u);
    EXPECT_EQ(c.node(i).counters().deltas_stride_mismatch, 0u);
  }
}

}  // namespace
}  // namespace hearsay::gossip
