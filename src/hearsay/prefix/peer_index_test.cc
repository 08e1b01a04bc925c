#include "hearsay/prefix/peer_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "hearsay/env/rng.h"

namespace hearsay::prefix {
namespace {

using Kind = BlockEvent::Kind;

BlockEvent Add(BlockKey k) { return {Kind::kAdded, k, 0}; }
BlockEvent Del(BlockKey k) { return {Kind::kRemoved, k, 0}; }

// A chain of n keys derived from `seed` (a stand-in for block_keys.h).
std::vector<BlockKey> Chain(uint64_t seed, size_t n) {
  std::vector<BlockKey> keys;
  uint64_t k = seed;
  for (size_t i = 0; i < n; ++i) {
    k += 0x9e3779b97f4a7c15ULL;
    uint64_t z = k;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    keys.push_back(z ^ (z >> 31));
  }
  return keys;
}

// "p7" and the like (built by append: GCC 12 misfires -Wrestrict on operator+ here).
NodeId Name(const char* prefix, uint64_t i) {
  NodeId name = prefix;
  name += std::to_string(i);
  return name;
}

std::vector<BlockEvent> Adds(std::span<const BlockKey> keys) {
  std::vector<BlockEvent> events;
  for (BlockKey k : keys) events.push_back(Add(k));
  return events;
}

std::vector<uint32_t> MatchAll(const PeerIndex& index, std::span<const BlockKey> chain) {
  std::vector<uint32_t> out(index.slot_limit(), 12345);
  EXPECT_TRUE(index.Match(chain, out).ok());
  return out;
}

uint32_t MatchOf(const PeerIndex& index, const NodeId& peer, std::span<const BlockKey> chain) {
  const std::optional<PeerSlot> slot = index.FindSlot(peer);
  EXPECT_TRUE(slot.has_value());
  return MatchAll(index, chain)[*slot];
}

std::vector<BlockKey> Sorted(std::vector<BlockKey> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(PeerIndexTest, ObservePeerRegistersAndIsIdempotent) {
  PeerIndex index;
  Result<PeerSlot> a = index.ObservePeer("a", 1);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, 0u);
  Result<PeerSlot> b = index.ObservePeer("b", 7);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, 1u);
  EXPECT_EQ(index.num_peers(), 2u);
  EXPECT_EQ(index.slot_limit(), 2u);
  EXPECT_EQ(*index.ObservePeer("a", 1), 0u);
  EXPECT_EQ(*index.GenerationOf("b"), 7u);
  EXPECT_EQ(*index.BlocksHeld("a"), 0u);
  EXPECT_EQ(*index.PeerAt(1), "b");
  EXPECT_EQ(index.PeerAt(2), nullptr);
  EXPECT_EQ(index.FindSlot("zz"), std::nullopt);
}

TEST(PeerIndexTest, UnknownPeerIsNotFound) {
  PeerIndex index;
  const std::vector<BlockEvent> events = {Add(1)};
  const std::vector<BlockKey> keys = {1};
  EXPECT_EQ(index.ApplyEvents("x", 1, events).code(), StatusCode::kNotFound);
  EXPECT_EQ(index.ApplySnapshot("x", 1, keys).code(), StatusCode::kNotFound);
  EXPECT_EQ(index.RemovePeer("x").code(), StatusCode::kNotFound);
  EXPECT_EQ(index.GenerationOf("x").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(index.BlocksHeld("x").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(index.Keys("x").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(index.BlocksHeld(PeerSlot{5}), 0u);
  EXPECT_FALSE(index.Holds(5, 1));
  EXPECT_EQ(index.num_peers(), 0u);
}

TEST(PeerIndexTest, EmptyPeerIdIsRejected) {
  PeerIndex index;
  EXPECT_EQ(index.ObservePeer("", 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(index.num_peers(), 0u);
}

TEST(PeerIndexTest, AddsRemovesAndCounts) {
  PeerIndex index;
  const PeerSlot a = *index.ObservePeer("a", 1);
  const std::vector<BlockEvent> events = {Add(10), Add(11), Add(12), Del(11)};
  ASSERT_TRUE(index.ApplyEvents("a", 1, events).ok());
  EXPECT_EQ(*index.BlocksHeld("a"), 2u);
  EXPECT_EQ(index.BlocksHeld(a), 2u);
  EXPECT_TRUE(index.Holds(a, 10));
  EXPECT_FALSE(index.Holds(a, 11));
  EXPECT_EQ(*index.Keys("a"), (std::vector<BlockKey>{10, 12}));
}

TEST(PeerIndexTest, DuplicateAddsAndMissingRemovesAreNoOps) {
  PeerIndex index;
  (void)*index.ObservePeer("a", 1);
  const std::vector<BlockEvent> events = {Add(5), Add(5), Add(5), Del(6), Del(7), Del(5), Del(5)};
  ASSERT_TRUE(index.ApplyEvents("a", 1, events).ok());
  EXPECT_EQ(*index.BlocksHeld("a"), 0u);
  const std::vector<BlockEvent> again = {Add(5), Add(5)};
  ASSERT_TRUE(index.ApplyEvents("a", 1, again).ok());
  EXPECT_EQ(*index.BlocksHeld("a"), 1u);
  EXPECT_EQ(*index.Keys("a"), (std::vector<BlockKey>{5}));
}

TEST(PeerIndexTest, KeyZeroAndMaxAreOrdinaryKeys) {
  PeerIndex index;
  const PeerSlot a = *index.ObservePeer("a", 1);
  const std::vector<BlockEvent> events = {Add(0), Add(UINT64_MAX)};
  ASSERT_TRUE(index.ApplyEvents("a", 1, events).ok());
  EXPECT_TRUE(index.Holds(a, 0));
  EXPECT_TRUE(index.Holds(a, UINT64_MAX));
  const std::vector<BlockKey> chain = {0, UINT64_MAX, 3};
  EXPECT_EQ(MatchOf(index, "a", chain), 2u);
}

TEST(PeerIndexTest, StaleGenerationIsRejectedAndChangesNothing) {
  PeerIndex index;
  (void)*index.ObservePeer("a", 5);
  const std::vector<BlockEvent> events = {Add(1), Add(2)};
  ASSERT_TRUE(index.ApplyEvents("a", 5, events).ok());
  const std::vector<BlockEvent> stale = {Add(3), Del(1)};
  EXPECT_EQ(index.ApplyEvents("a", 4, stale).code(), StatusCode::kFailedPrecondition);
  const std::vector<BlockKey> snapshot = {9};
  EXPECT_EQ(index.ApplySnapshot("a", 4, snapshot).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(index.ObservePeer("a", 4).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(*index.GenerationOf("a"), 5u);
  EXPECT_EQ(*index.Keys("a"), (std::vector<BlockKey>{1, 2}));
}

TEST(PeerIndexTest, HigherGenerationClearsAtOnce) {
  PeerIndex index;
  const PeerSlot a = *index.ObservePeer("a", 1);
  const std::vector<BlockKey> chain = Chain(1, 20);
  ASSERT_TRUE(index.ApplyEvents("a", 1, Adds(chain)).ok());
  EXPECT_EQ(MatchOf(index, "a", chain), 20u);

  // A restart seen through a heartbeat: same slot, nothing held.
  EXPECT_EQ(*index.ObservePeer("a", 2), a);
  EXPECT_EQ(*index.BlocksHeld("a"), 0u);
  EXPECT_EQ(MatchOf(index, "a", chain), 0u);
  EXPECT_FALSE(index.Holds(a, chain[0]));

  // A restart seen through the first delta of the new generation.
  ASSERT_TRUE(index.ApplyEvents("a", 2, Adds(chain)).ok());
  const std::vector<BlockEvent> fresh = {Add(chain[0]), Add(chain[1])};
  ASSERT_TRUE(index.ApplyEvents("a", 3, fresh).ok());
  EXPECT_EQ(*index.GenerationOf("a"), 3u);
  EXPECT_EQ(*index.BlocksHeld("a"), 2u);
  EXPECT_EQ(MatchOf(index, "a", chain), 2u);
  EXPECT_EQ(*index.Keys("a"), Sorted({chain[0], chain[1]}));
}

TEST(PeerIndexTest, SnapshotReplacesEverything) {
  PeerIndex index;
  (void)*index.ObservePeer("a", 1);
  const std::vector<BlockKey> chain = Chain(2, 8);
  ASSERT_TRUE(index.ApplyEvents("a", 1, Adds(chain)).ok());
  const std::vector<BlockKey> snapshot = {chain[0], chain[1], chain[2], 77, 77};
  ASSERT_TRUE(index.ApplySnapshot("a", 1, snapshot).ok());
  EXPECT_EQ(*index.BlocksHeld("a"), 4u);
  EXPECT_EQ(MatchOf(index, "a", chain), 3u);
  EXPECT_EQ(*index.Keys("a"), Sorted({chain[0], chain[1], chain[2], 77}));

  ASSERT_TRUE(index.ApplySnapshot("a", 4, std::span<const BlockKey>{}).ok());
  EXPECT_EQ(*index.GenerationOf("a"), 4u);
  EXPECT_EQ(*index.BlocksHeld("a"), 0u);
  EXPECT_TRUE(index.Keys("a")->empty());
}

TEST(PeerIndexTest, RemovePeerForgetsAndFreesTheSlot) {
  PeerIndex index;
  (void)*index.ObservePeer("a", 1);
  const PeerSlot b = *index.ObservePeer("b", 1);
  const std::vector<BlockKey> chain = Chain(3, 10);
  ASSERT_TRUE(index.ApplyEvents("a", 1, Adds(chain)).ok());
  ASSERT_TRUE(index.ApplyEvents("b", 1, Adds(chain)).ok());
  ASSERT_TRUE(index.RemovePeer("a").ok());
  EXPECT_EQ(index.num_peers(), 1u);
  EXPECT_EQ(index.FindSlot("a"), std::nullopt);
  EXPECT_EQ(index.PeerAt(0), nullptr);
  EXPECT_EQ(MatchAll(index, chain), (std::vector<uint32_t>{0, 10}));
  EXPECT_EQ(index.RemovePeer("a").code(), StatusCode::kNotFound);

  // The slot is reused, and its new peer inherits nothing.
  EXPECT_EQ(*index.ObservePeer("c", 1), 0u);
  EXPECT_EQ(*index.BlocksHeld("c"), 0u);
  EXPECT_EQ(MatchAll(index, chain), (std::vector<uint32_t>{0, 10}));
  // Removing the last slot shrinks slot_limit.
  ASSERT_TRUE(index.RemovePeer("b").ok());
  EXPECT_EQ(index.slot_limit(), 1u);
  EXPECT_FALSE(index.Holds(b, chain[0]));
  // A returning peer starts empty.
  EXPECT_EQ(*index.ObservePeer("a", 1), 1u);
  EXPECT_EQ(*index.BlocksHeld("a"), 0u);
  EXPECT_EQ(MatchAll(index, chain), (std::vector<uint32_t>{0, 0}));
}

TEST(PeerIndexTest, MatchIsTheLongestHeldRunFromTheStart) {
  PeerIndex index;
  (void)*index.ObservePeer("gap", 1);
  (void)*index.ObservePeer("full", 1);
  (void)*index.ObservePeer("nofirst", 1);
  (void)*index.ObservePeer("none", 1);
  const std::vector<BlockKey> chain = Chain(4, 6);
  // Holds k0, k1, k3, k4, k5: a lossy view with a gap at k2.
  const std::vector<BlockEvent> gap = {Add(chain[0]), Add(chain[1]), Add(chain[3]), Add(chain[4]),
                                       Add(chain[5])};
  ASSERT_TRUE(index.ApplyEvents("gap", 1, gap).ok());
  ASSERT_TRUE(index.ApplyEvents("full", 1, Adds(chain)).ok());
  const std::vector<BlockEvent> nofirst = {Add(chain[1]), Add(chain[2])};
  ASSERT_TRUE(index.ApplyEvents("nofirst", 1, nofirst).ok());
  const std::vector<BlockEvent> other = {Add(999)};
  ASSERT_TRUE(index.ApplyEvents("none", 1, other).ok());
  EXPECT_EQ(MatchAll(index, chain), (std::vector<uint32_t>{2, 6, 0, 0}));
  // A longer query than anyone holds stops at what is held.
  std::vector<BlockKey> longer = chain;
  longer.push_back(31337);
  EXPECT_EQ(MatchAll(index, longer), (std::vector<uint32_t>{2, 6, 0, 0}));
  // A prefix of the chain.
  EXPECT_EQ(MatchAll(index, std::span(chain).first(1)), (std::vector<uint32_t>{1, 1, 0, 0}));
}

TEST(PeerIndexTest, MatchRejectsSmallOutputAndHandlesEmptyChains) {
  PeerIndex index;
  (void)*index.ObservePeer("a", 1);
  (void)*index.ObservePeer("b", 1);
  const std::vector<BlockKey> chain = Chain(5, 3);
  std::vector<uint32_t> small(1, 7);
  EXPECT_EQ(index.Match(chain, small).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(small[0], 7u);
  std::vector<uint32_t> out(4, 7);
  ASSERT_TRUE(index.Match({}, out).ok());
  EXPECT_EQ(out, (std::vector<uint32_t>{0, 0, 7, 7}));  // only [0, slot_limit) is written

  PeerIndex empty;
  ASSERT_TRUE(empty.Match(chain, std::span<uint32_t>{}).ok());
}

TEST(PeerIndexTest, HugeChainMatchesInFull) {
  PeerIndex index;
  (void)*index.ObservePeer("a", 1);
  (void)*index.ObservePeer("b", 1);
  // A 1,000,000-token prompt at 16 tokens per block.
  const std::vector<BlockKey> chain = Chain(6, 62'500);
  ASSERT_TRUE(index.ApplyEvents("a", 1, Adds(chain)).ok());
  ASSERT_TRUE(index.ApplySnapshot("b", 1, std::span(chain).first(40'000)).ok());
  EXPECT_EQ(*index.BlocksHeld("a"), 62'500u);
  EXPECT_EQ(MatchAll(index, chain), (std::vector<uint32_t>{62'500, 40'000}));
}

TEST(PeerIndexTest, DuplicateFloodDoesNotBalloonTheTable) {
  PeerIndex index;
  (void)*index.ObservePeer("a", 1);
  const std::vector<BlockKey> same(200'000, 42);
  ASSERT_TRUE(index.ApplySnapshot("a", 1, same).ok());
  const std::vector<BlockEvent> adds(200'000, Add(43));
  ASSERT_TRUE(index.ApplyEvents("a", 1, adds).ok());
  EXPECT_EQ(*index.BlocksHeld("a"), 2u);
  EXPECT_EQ(index.table_size(), 2u);
  EXPECT_LT(index.MemoryBytes(), size_t{64} << 10);
}

TEST(PeerIndexTest, InvalidEventKindIsRejectedAtomically) {
  PeerIndex index;
  (void)*index.ObservePeer("a", 1);
  std::vector<BlockEvent> events = {Add(1), Add(2), Add(3)};
  events[2].kind = static_cast<Kind>(7);
  EXPECT_EQ(index.ApplyEvents("a", 2, events).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*index.BlocksHeld("a"), 0u);
  EXPECT_EQ(*index.GenerationOf("a"), 1u);
}

TEST(PeerIndexTest, TooManyPeersIsResourceExhausted) {
  PeerIndex index(PeerIndexOptions{.max_peers = 2});
  ASSERT_TRUE(index.ObservePeer("a", 1).ok());
  ASSERT_TRUE(index.ObservePeer("b", 1).ok());
  EXPECT_EQ(index.ObservePeer("c", 1).status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(index.ObservePeer("a", 2).ok());  // known peers still update
  ASSERT_TRUE(index.RemovePeer("a").ok());
  EXPECT_TRUE(index.ObservePeer("c", 1).ok());
}

TEST(PeerIndexTest, TooManyBlocksIsResourceExhaustedAtomically) {
  PeerIndex index(PeerIndexOptions{.max_blocks_per_peer = 3});
  (void)*index.ObservePeer("a", 1);
  const std::vector<BlockEvent> two = {Add(1), Add(2)};
  ASSERT_TRUE(index.ApplyEvents("a", 1, two).ok());
  const std::vector<BlockEvent> more = {Add(3), Add(4)};
  EXPECT_EQ(index.ApplyEvents("a", 1, more).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(*index.Keys("a"), (std::vector<BlockKey>{1, 2}));
  // A restart starts from zero, so the same batch fits in a new generation.
  ASSERT_TRUE(index.ApplyEvents("a", 2, more).ok());
  EXPECT_EQ(*index.Keys("a"), (std::vector<BlockKey>{3, 4}));
  const std::vector<BlockKey> big = {1, 2, 3, 4};
  EXPECT_EQ(index.ApplySnapshot("a", 2, big).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(*index.Keys("a"), (std::vector<BlockKey>{3, 4}));
}

TEST(PeerIndexTest, OptionsAreClamped) {
  PeerIndex zero(PeerIndexOptions{.max_peers = 0});
  EXPECT_EQ(zero.options().max_peers, 1u);
  PeerIndex huge(PeerIndexOptions{.max_peers = size_t{1} << 40});
  EXPECT_EQ(huge.options().max_peers, PeerIndex::kMaxPeersLimit);
}

TEST(PeerIndexTest, PopularKeysHeldByManyPeers) {
  // More than HolderTable::kInline holders move a key to a bitset and back.
  PeerIndex index(PeerIndexOptions{.max_peers = 200});
  const std::vector<BlockKey> chain = Chain(7, 30);
  for (int p = 0; p < 150; ++p) {
    const NodeId id = Name("p", p);
    (void)*index.ObservePeer(id, 1);
    // Peer p holds the first p % 31 keys.
    ASSERT_TRUE(index.ApplyEvents(id, 1, Adds(std::span(chain).first(p % 31))).ok());
  }
  std::vector<uint32_t> out = MatchAll(index, chain);
  for (int p = 0; p < 150; ++p) EXPECT_EQ(out[p], static_cast<uint32_t>(p % 31)) << p;
  // Drop most holders again: keys fall back to inline lists.
  for (int p = 0; p < 150; ++p) {
    if (p % 50 == 30) continue;
    const NodeId id = Name("p", p);
    std::vector<BlockEvent> dels;
    for (BlockKey k : chain) dels.push_back(Del(k));
    ASSERT_TRUE(index.ApplyEvents(id, 1, dels).ok());
  }
  out = MatchAll(index, chain);
  for (int p = 0; p < 150; ++p) EXPECT_EQ(out[p], p % 50 == 30 ? p % 31u : 0u) << p;
}

TEST(PeerIndexTest, ColumnChurnNeverLeaksOldBeliefs) {
  // Many more restarts than columns: cleared columns must be swept before reuse.
  PeerIndex index(PeerIndexOptions{.max_peers = 4});
  const std::vector<BlockKey> chain = Chain(8, 50);
  Generation gen[4] = {1, 1, 1, 1};
  for (int p = 0; p < 4; ++p) ASSERT_TRUE(index.ObservePeer(Name("p", p), 1).ok());
  for (int round = 1; round <= 80; ++round) {
    for (int p = 0; p < 4; ++p) {
      const NodeId id = Name("p", p);
      const size_t depth = (round * 7 + p * 13) % 51;
      // Alternate same-generation snapshots and restarts.
      if (round % 2 == 0) ++gen[p];
      ASSERT_TRUE(index.ApplySnapshot(id, gen[p], std::span(chain).first(depth)).ok());
      ASSERT_EQ(MatchOf(index, id, chain), depth) << round << " " << p;
      if (round % 3 == 0) {
        ASSERT_TRUE(index.ObservePeer(id, ++gen[p]).ok());
        ASSERT_EQ(MatchOf(index, id, chain), 0u);
        ASSERT_TRUE(index.ApplyEvents(id, gen[p], Adds(std::span(chain).first(depth))).ok());
      }
    }
    if (round % 5 == 0) {
      ASSERT_TRUE(index.RemovePeer("p1").ok());
      ASSERT_TRUE(index.ObservePeer("p1", gen[1]).ok());
      ASSERT_EQ(MatchOf(index, "p1", chain), 0u);
    }
  }
  EXPECT_LE(index.table_size(), 200u);
}

TEST(PeerIndexTest, TableShrinksAfterPeersLeave) {
  PeerIndex index;
  for (int p = 0; p < 8; ++p) {
    const NodeId id = Name("p", p);
    (void)*index.ObservePeer(id, 1);
    ASSERT_TRUE(index.ApplyEvents(id, 1, Adds(Chain(100 + p, 5000))).ok());
  }
  const size_t full = index.MemoryBytes();
  for (int p = 0; p < 8; ++p) ASSERT_TRUE(index.RemovePeer(Name("p", p)).ok());
  // Cleanup is amortized over later mutations: observing peers drives the sweep.
  for (int i = 0; i < 400; ++i) (void)*index.ObservePeer("q", 1 + i);
  EXPECT_EQ(index.table_size(), 0u);
  EXPECT_LT(index.MemoryBytes(), full / 8);
}

// ---- Property test against a naive model ----

struct ModelPeer {
  Generation generation = 0;
  std::set<BlockKey> keys;
};

class Model {
 public:
  Model(size_t max_peers, uint64_t max_blocks) : max_peers_(max_peers), max_blocks_(max_blocks) {}

  StatusCode Observe(const NodeId& id, Generation g) {
    auto it = peers_.find(id);
    if (it == peers_.end()) {
      if (peers_.size() >= max_peers_) return StatusCode::kResourceExhausted;
      peers_[id].generation = g;
      return StatusCode::kOk;
    }
    if (g < it->second.generation) return StatusCode::kFailedPrecondition;
    if (g > it->second.generation) it->second = ModelPeer{g, {}};
    return StatusCode::kOk;
  }
  StatusCode Remove(const NodeId& id) {
    return peers_.erase(id) ? StatusCode::kOk : StatusCode::kNotFound;
  }
  StatusCode Events(const NodeId& id, Generation g, const std::vector<BlockEvent>& events) {
    auto it = peers_.find(id);
    if (it == peers_.end()) return StatusCode::kNotFound;
    if (g < it->second.generation) return StatusCode::kFailedPrecondition;
    uint64_t adds = 0;
    for (const BlockEvent& e : events) adds += e.kind == Kind::kAdded;
    const uint64_t base = g > it->second.generation ? 0 : it->second.keys.size();
    if (base + adds > max_blocks_) return StatusCode::kResourceExhausted;
    if (g > it->second.generation) it->second = ModelPeer{g, {}};
    for (const BlockEvent& e : events) {
      if (e.kind == Kind::kAdded) {
        it->second.keys.insert(e.key);
      } else {
        it->second.keys.erase(e.key);
      }
    }
    return StatusCode::kOk;
  }
  StatusCode Snapshot(const NodeId& id, Generation g, const std::vector<BlockKey>& keys) {
    auto it = peers_.find(id);
    if (it == peers_.end()) return StatusCode::kNotFound;
    if (g < it->second.generation) return StatusCode::kFailedPrecondition;
    if (keys.size() > max_blocks_) return StatusCode::kResourceExhausted;
    it->second = ModelPeer{g, std::set<BlockKey>(keys.begin(), keys.end())};
    return StatusCode::kOk;
  }
  uint32_t MatchOf(const NodeId& id, const std::vector<BlockKey>& chain) const {
    const ModelPeer& p = peers_.at(id);
    uint32_t m = 0;
    while (m < chain.size() && p.keys.count(chain[m])) ++m;
    return m;
  }
  const std::map<NodeId, ModelPeer>& peers() const { return peers_; }

 private:
  size_t max_peers_;
  uint64_t max_blocks_;
  std::map<NodeId, ModelPeer> peers_;
};

// Checks every observable of `index` against `model`.
void ExpectSame(const PeerIndex& index, const Model& model,
                const std::vector<std::vector<BlockKey>>& queries) {
  ASSERT_EQ(index.num_peers(), model.peers().size());
  for (const auto& [id, mp] : model.peers()) {
    const std::optional<PeerSlot> slot = index.FindSlot(id);
    ASSERT_TRUE(slot.has_value()) << id;
    ASSERT_EQ(*index.PeerAt(*slot), id);
    ASSERT_EQ(*index.GenerationOf(id), mp.generation) << id;
    ASSERT_EQ(*index.BlocksHeld(id), mp.keys.size()) << id;
    ASSERT_EQ(*index.Keys(id), std::vector<BlockKey>(mp.keys.begin(), mp.keys.end())) << id;
  }
  std::vector<uint32_t> out(index.slot_limit() + 3);
  for (const std::vector<BlockKey>& q : queries) {
    ASSERT_TRUE(index.Match(q, out).ok());
    for (PeerSlot s = 0; s < index.slot_limit(); ++s) {
      const NodeId* id = index.PeerAt(s);
      ASSERT_EQ(out[s], id == nullptr ? 0u : model.MatchOf(*id, q)) << "slot " << s;
    }
  }
}

struct PropertyConfig {
  size_t max_peers;
  uint64_t max_blocks;
  int names;   // distinct peer names in play
  int chains;  // key universe: `chains` chains of `depth` keys
  int depth;
  int steps;
  int max_batch;
};

void RunProperty(uint64_t seed, const PropertyConfig& cfg) {
  Rng rng(seed);
  PeerIndex index(PeerIndexOptions{
      .max_peers = cfg.max_peers, .max_blocks_per_peer = cfg.max_blocks, .hash_seed = seed});
  Model model(cfg.max_peers, cfg.max_blocks);
  std::vector<std::vector<BlockKey>> universe;
  for (int c = 0; c < cfg.chains; ++c) universe.push_back(Chain(seed * 1000 + c, cfg.depth));
  // Chains share prefixes: chain c > 0 starts with a prefix of chain c - 1.
  for (int c = 1; c < cfg.chains; ++c) {
    const size_t shared = rng.Below(cfg.depth);
    std::copy_n(universe[c - 1].begin(), shared, universe[c].begin());
  }
  const auto random_key = [&] {
    const auto& ch = universe[rng.Below(universe.size())];
    return ch[rng.Below(ch.size())];
  };
  const auto random_name = [&] { return Name("n", rng.Below(cfg.names)); };
  const auto random_generation = [&](const NodeId& id) -> Generation {
    auto it = model.peers().find(id);
    const Generation known = it == model.peers().end() ? 3 : it->second.generation;
    const uint64_t r = rng.Below(10);
    if (r == 0 && known > 0) return known - 1;
    if (r == 1) return known + 1;
    return known;
  };

  for (int step = 0; step < cfg.steps; ++step) {
    const uint64_t op = rng.Below(100);
    const NodeId id = random_name();
    std::vector<std::vector<BlockKey>> queries;
    if (op < 12) {
      const Generation g = random_generation(id);
      const StatusCode want = model.Observe(id, g);
      ASSERT_EQ(index.ObservePeer(id, g).status().code(), want) << "step " << step;
    } else if (op < 17) {
      ASSERT_EQ(index.RemovePeer(id).code(), model.Remove(id)) << "step " << step;
    } else if (op < 75) {
      const Generation g = random_generation(id);
      std::vector<BlockEvent> events(rng.Below(cfg.max_batch + 1));
      // Mostly walk a chain prefix in order (as an engine would), sometimes random keys.
      const auto& ch = universe[rng.Below(universe.size())];
      const bool in_order = rng.Bernoulli(0.5);
      const size_t start = rng.Below(ch.size());
      for (size_t i = 0; i < events.size(); ++i) {
        events[i].kind = rng.Bernoulli(0.65) ? Kind::kAdded : Kind::kRemoved;
        events[i].key = in_order ? ch[(start + i) % ch.size()] : random_key();
      }
      const StatusCode want = model.Events(id, g, events);
      ASSERT_EQ(index.ApplyEvents(id, g, events).code(), want) << "step " << step;
    } else if (op < 85) {
      const Generation g = random_generation(id);
      std::vector<BlockKey> keys(rng.Below(cfg.max_batch + 1));
      for (BlockKey& k : keys) k = random_key();
      const StatusCode want = model.Snapshot(id, g, keys);
      ASSERT_EQ(index.ApplySnapshot(id, g, keys).code(), want) << "step " << step;
    }
    // Every step: check everything, with chain queries (and a non-prefix query).
    for (int q = 0; q < 3; ++q) {
      std::vector<BlockKey> chain = universe[rng.Below(universe.size())];
      chain.resize(rng.Below(chain.size() + 1));
      if (rng.Bernoulli(0.2)) chain.push_back(random_key());
      queries.push_back(std::move(chain));
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSame(index, model, queries)) << "step " << step;
  }
}

TEST(PeerIndexPropertyTest, SmallUniverseManySeeds) {
  const PropertyConfig cfg{.max_peers = 6,
                           .max_blocks = 40,
                           .names = 8,
                           .chains = 4,
                           .depth = 12,
                           .steps = 300,
                           .max_batch = 12};
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    SCOPED_TRACE(Name("seed ", seed));
    ASSERT_NO_FATAL_FAILURE(RunProperty(seed, cfg));
  }
}

TEST(PeerIndexPropertyTest, ManyPeersSharingKeys) {
  // Enough peers that popular keys use bitsets, and more than 64 columns (several words).
  const PropertyConfig cfg{.max_peers = 90,
                           .max_blocks = 1000,
                           .names = 100,
                           .chains = 6,
                           .depth = 24,
                           .steps = 400,
                           .max_batch = 40};
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE(Name("seed ", seed));
    ASSERT_NO_FATAL_FAILURE(RunProperty(seed, cfg));
  }
}

TEST(PeerIndexPropertyTest, LargeBatchesGrowAndShrinkTheTable) {
  const PropertyConfig cfg{.max_peers = 10,
                           .max_blocks = 5000,
                           .names = 12,
                           .chains = 20,
                           .depth = 150,
                           .steps = 150,
                           .max_batch = 600};
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE(Name("seed ", seed));
    ASSERT_NO_FATAL_FAILURE(RunProperty(seed, cfg));
  }
}

}  // namespace
}  // namespace hearsay::prefix

namespace hearsay::prefix {
namespace {

// Each peer chooses its own landmark stride; the index matches each at its own.
TEST(PeerIndexTest, PeersAtDifferentStridesAreEachMatchedWithinTheirStride) {
  PeerIndex index;
  ASSERT_TRUE(index.ObservePeer("fine", 1).ok());
  ASSERT_TRUE(index.ObservePeer("coarse", 1).ok());
  ASSERT_TRUE(index.ObservePeer("exact", 1).ok());
  ASSERT_TRUE(index.SetStride("fine", 1, 4).ok());
  ASSERT_TRUE(index.SetStride("coarse", 1, 16).ok());
  const std::vector<BlockKey> chain = Chain(11, 40);
  // Truth: "fine" holds the first 30 blocks, "coarse" the first 20, "exact" the first 7; each
  // advertises only the blocks whose index is a multiple of its stride.
  std::vector<BlockEvent> fine, coarse;
  for (size_t i = 0; i < 30; i += 4) fine.push_back(Add(chain[i]));
  for (size_t i = 0; i < 20; i += 16) coarse.push_back(Add(chain[i]));
  ASSERT_TRUE(index.ApplyEvents("fine", 1, fine).ok());
  ASSERT_TRUE(index.ApplyEvents("coarse", 1, coarse).ok());
  ASSERT_TRUE(index.ApplyEvents("exact", 1, Adds(std::span(chain).first(7))).ok());
  std::vector<uint32_t> out(index.slot_limit(), 12345);
  ASSERT_TRUE(index.MatchStrided(chain, out).ok());
  const uint32_t f = out[*index.FindSlot("fine")];
  const uint32_t c = out[*index.FindSlot("coarse")];
  const uint32_t e = out[*index.FindSlot("exact")];
  EXPECT_EQ(f, 29u);  // landmarks 0..28: (8 - 1) * 4 + 1
  EXPECT_EQ(c, 17u);  // landmarks 0, 16
  EXPECT_EQ(e, 7u);   // stride 1 (the default): exact
  EXPECT_LT(30 - f, 4u);
  EXPECT_LT(20 - c, 16u);
  EXPECT_EQ(index.StrideOf(*index.FindSlot("coarse")), 16u);
  EXPECT_EQ(index.StrideOf(*index.FindSlot("exact")), 1u);
  // One stride for all would be wrong for the other: at stride 4, "coarse" lacks landmark 4.
  std::vector<BlockKey> every4;
  for (size_t i = 0; i < chain.size(); i += 4) every4.push_back(chain[i]);
  EXPECT_EQ(MatchOf(index, "coarse", every4), 1u);
  // A short chain: only landmark 0 of each.
  ASSERT_TRUE(index.MatchStrided(std::span(chain).first(3), out).ok());
  EXPECT_EQ(out[*index.FindSlot("fine")], 1u);
  EXPECT_EQ(out[*index.FindSlot("coarse")], 1u);
  EXPECT_EQ(out[*index.FindSlot("exact")], 3u);
  // A new stride keeps the keys (the snapshot that comes with it replaces them).
  ASSERT_TRUE(index.SetStride("coarse", 1, 8).ok());
  ASSERT_TRUE(index.MatchStrided(chain, out).ok());
  EXPECT_EQ(out[*index.FindSlot("coarse")], 1u);  // landmark 8 is not held
  ASSERT_TRUE(
      index.ApplySnapshot("coarse", 1, std::vector<BlockKey>{chain[0], chain[8], chain[16]}).ok());
  ASSERT_TRUE(index.MatchStrided(chain, out).ok());
  EXPECT_EQ(out[*index.FindSlot("coarse")], 17u);
}

TEST(PeerIndexTest, SetStrideRejectsBadInputAndMatchStridedChecksItsOutput) {
  PeerIndex index;
  ASSERT_TRUE(index.ObservePeer("a", 2).ok());
  EXPECT_EQ(index.SetStride("a", 2, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(index.SetStride("b", 2, 4).code(), StatusCode::kNotFound);
  EXPECT_EQ(index.SetStride("a", 1, 4).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(index.StrideOf(*index.FindSlot("a")), 1u);
  EXPECT_EQ(index.StrideOf(99), 0u);
  std::vector<uint32_t> none;
  EXPECT_EQ(index.MatchStrided(Chain(1, 3), none).code(), StatusCode::kInvalidArgument);
  std::vector<uint32_t> out(1, 7);
  ASSERT_TRUE(index.MatchStrided({}, out).ok());
  EXPECT_EQ(out[0], 0u);
}

}  // namespace
}  // namespace hearsay::prefix
