#include "hearsay/gossip/node.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "hearsay/gossip/node_test_util.h"

namespace hearsay::gossip {
namespace {

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
  load.decode_us_per_token = 23500;
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
    EXPECT_EQ(v->load.decode_us_per_token, 23500u);
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

TEST(NodeTest, ServiceRecordsReachEveryPeerAndChangesFollow) {
  Cluster c(4, 5);
  const Service a{{{"sim", "model-a", {"a"}, 4096, {}, 7, 16}}};
  ASSERT_TRUE(c.node(0).SetService(a).ok());
  c.StartAll();
  c.Run(3s);
  for (int i = 1; i < c.size(); ++i) {
    EXPECT_EQ(c.listener(i).services["n0"], a) << i;
    ASSERT_NE(c.node(i).PeerStore("n0"), nullptr);
    EXPECT_EQ(c.node(i).PeerStore("n0")->service().service, a);
  }
  // The same service again is not a new write.
  const uint64_t version = c.node(0).own_store().max_version();
  ASSERT_TRUE(c.node(0).SetService(a).ok());
  EXPECT_EQ(c.node(0).own_store().max_version(), version);
  // An engine restarted with another model and an adapter loaded: every peer hears of it once.
  const Service b{{{"vllm", "model-b", {}, 8192, {"lora-1"}, 9, 16}}};
  ASSERT_TRUE(c.node(0).SetService(b).ok());
  c.Run(3s);
  for (int i = 1; i < c.size(); ++i) {
    EXPECT_EQ(c.listener(i).services["n0"], b) << i;
    EXPECT_EQ(c.listener(i).service_reports["n0"], 2) << i;
  }
  // Over the bounds: refused, and nothing is published.
  Service bad = b;
  bad.engines[0].model = "bad\x01name";
  EXPECT_EQ(c.node(0).SetService(bad).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.node(0).service(), b);
  // A restarted member (new generation) publishes its service again, and peers hear it anew.
  c.Crash(0);
  c.Run(15s);
  c.Restart(0, 2);
  ASSERT_TRUE(c.node(0).SetService(a).ok());
  c.Run(5s);
  for (int i = 1; i < c.size(); ++i) EXPECT_EQ(c.listener(i).services["n0"], a) << i;
}

TEST(NodeTest, UsageRecordsReachEveryPeerAndTheLatestWins) {
  Cluster c(4, 5);
  c.StartAll();
  c.Run(2s);
  const std::vector<TenantUsage> first{{TenantHash("acme"), 3000, 6000}};
  ASSERT_TRUE(c.node(1).SetUsage(first).ok());
  c.Run(3s);
  for (int i = 0; i < c.size(); ++i) {
    if (i == 1) continue;
    EXPECT_EQ(c.listener(i).usages["n1"], first) << i;
    ASSERT_NE(c.node(i).PeerStore("n1"), nullptr);
    EXPECT_EQ(c.node(i).PeerStore("n1")->usage().tenants, first);
  }
  ASSERT_TRUE(c.node(1).SetUsage({}).ok());
  c.Run(3s);
  for (int i = 0; i < c.size(); ++i) {
    if (i != 1) {
      EXPECT_TRUE(c.listener(i).usages["n1"].empty()) << i;
    }
  }
  // Over the bounds (unsorted): refused, and nothing is published.
  const uint64_t version = c.node(1).own_store().max_version();
  EXPECT_EQ(c.node(1).SetUsage({{2, 1, 1}, {1, 1, 1}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.node(1).own_store().max_version(), version);
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

// A node whose state changes sends its full digest with every Syn, on the stream when
// it is too large for a datagram (large clusters), so the peer answers with deltas at once. Before,
// such a digest was dropped and the peer answered the bare Syn with its own full digest (a
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
