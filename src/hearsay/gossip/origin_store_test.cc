#include "hearsay/gossip/origin_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include "hearsay/env/rng.h"

namespace hearsay::gossip {
namespace {

using prefix::BlockEvent;

std::map<prefix::BlockKey, uint32_t> LiveMap(const OriginStore& s) {
  std::map<prefix::BlockKey, uint32_t> out;
  for (const auto& e : s.LiveKeys()) out[e.key] = e.block_index;
  return out;
}

TEST(OriginStoreTest, WriterSkipsNoOpWritesAndVersionsEveryChange) {
  OriginStore s("a", 1, 4);
  EXPECT_TRUE(s.PutCache(10, 0, true));
  EXPECT_FALSE(s.PutCache(10, 0, true));
  EXPECT_FALSE(s.PutCache(11, 0, false));  // removing what is not held
  EXPECT_TRUE(s.PutCache(10, 0, false));
  EXPECT_EQ(s.max_version(), 2u);
  EXPECT_EQ(s.PutLoad(LoadReport{}, 1), 3u);
  EXPECT_FALSE(s.Contains(10));
}

TEST(OriginStoreTest, RefusesGapsAndIgnoresDuplicates) {
  OriginStore w("a", 1, 100);
  for (uint64_t k = 1; k <= 10; ++k) ASSERT_TRUE(w.PutCache(k, 0, true));
  OriginStore r("a", 1, 100);
  auto first = w.BuildDelta(0, 1 << 20);
  ASSERT_TRUE(first);
  OriginDelta later = *w.BuildDelta(5, 1 << 20);
  EXPECT_EQ(r.Apply(later, nullptr), OriginStore::ApplyResult::kGap);
  EXPECT_EQ(r.max_version(), 0u);
  std::vector<BlockEvent> ev;
  EXPECT_EQ(r.Apply(*first, &ev), OriginStore::ApplyResult::kApplied);
  EXPECT_EQ(ev.size(), 10u);
  ev.clear();
  EXPECT_EQ(r.Apply(*first, &ev), OriginStore::ApplyResult::kStale);
  EXPECT_EQ(r.Apply(later, &ev), OriginStore::ApplyResult::kStale);
  EXPECT_TRUE(ev.empty());
  EXPECT_EQ(LiveMap(r), LiveMap(w));
}

TEST(OriginStoreTest, BudgetCutsARunAtAnItemBoundary) {
  OriginStore w("a", 1, 100);
  for (uint64_t k = 1; k <= 100; ++k) ASSERT_TRUE(w.PutCache(k, 0, true));
  auto d = w.BuildDelta(0, 200);
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->snapshot);
  EXPECT_LT(d->entries.size(), 100u);
  EXPECT_EQ(d->to_version, d->entries.back().version);
  Message m;
  m.type = MsgType::kDeltas;
  m.header.sender = "x";
  m.deltas = {*d};
  EXPECT_LE(Encode(m).size(), 200u + 64);
}

TEST(OriginStoreTest, FarBehindPeersGetASnapshot) {
  OriginStore w("a", 1, 4);
  for (uint64_t k = 1; k <= 50; ++k) ASSERT_TRUE(w.PutCache(k, 0, true));
  for (uint64_t k = 1; k <= 40; ++k) ASSERT_TRUE(w.PutCache(k, 0, false));
  EXPECT_GT(w.gc_floor(), 0u);
  EXPECT_LE(w.tombstone_count(), std::max<size_t>(4, w.live_count()));
  auto d = w.BuildDelta(3, 1 << 20);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->snapshot);
  OriginStore r("a", 1, 4);
  std::vector<BlockEvent> ev;
  EXPECT_EQ(r.Apply(*d, &ev), OriginStore::ApplyResult::kApplied);
  EXPECT_EQ(LiveMap(r), LiveMap(w));
  EXPECT_EQ(ev.size(), 10u);
}

TEST(OriginStoreTest, KeepsSummaryKeysAndRemovalEventsNameTheHeldIndex) {
  const prefix::BlockKey full = 0xabcd000000000005ULL;
  OriginStore w("a", 1, 100);
  ASSERT_TRUE(w.PutCache(full, 32, true));
  EXPECT_TRUE(w.Contains(full));
  EXPECT_TRUE(w.Contains(SummaryKey(full)));
  EXPECT_FALSE(w.PutCache(SummaryKey(full), 32, true));  // the same summary key: no change
  EXPECT_EQ(LiveMap(w), (std::map<prefix::BlockKey, uint32_t>{{SummaryKey(full), 32}}));
  OriginStore r("a", 1, 100);
  ASSERT_EQ(r.Apply(*w.BuildDelta(0, 1 << 20), nullptr), OriginStore::ApplyResult::kApplied);
  ASSERT_TRUE(w.PutCache(full, 32, false));
  OriginDelta removal = *w.BuildDelta(1, 1 << 20);
  ASSERT_EQ(removal.entries.size(), 1u);
  EXPECT_EQ(removal.entries[0].block_index, 0u);  // not sent
  std::vector<BlockEvent> ev;
  ASSERT_EQ(r.Apply(removal, &ev), OriginStore::ApplyResult::kApplied);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, BlockEvent::Kind::kRemoved);
  EXPECT_EQ(ev[0].key, SummaryKey(full));
  EXPECT_EQ(ev[0].block_index, 32u);  // the index the replica knew it at
  EXPECT_FALSE(r.Contains(full));
}

// The shared-replica mode builds the same deltas as a private replica that applied the same
// deltas (runs from any version it can serve, and snapshots).
TEST(OriginStoreTest, SharedAndPrivateReplicasBuildTheSameDeltas) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Rng rng(seed);
    auto history = std::make_shared<SharedHistory>();
    OriginStore w("o", 3, 8, history, /*writer=*/true);
    OriginStore priv("o", 3, 8);
    OriginStore shared("o", 3, 8, history);
    for (int step = 0; step < 300; ++step) {
      const prefix::BlockKey key = rng.Below(40);
      w.PutCache(key, static_cast<uint32_t>(key % 5) * 16, rng.Bernoulli(0.6));
      if (rng.Bernoulli(0.1)) w.PutLoad(LoadReport{}, static_cast<uint64_t>(step));
      if (rng.Bernoulli(0.2)) {
        // Both catch up fully with the same (budget-cut) deltas.
        while (auto d = w.BuildDelta(priv.max_version(), 60 + rng.Below(300))) {
          ASSERT_EQ(priv.Apply(*d, nullptr), OriginStore::ApplyResult::kApplied);
          ASSERT_EQ(shared.Apply(*d, nullptr), OriginStore::ApplyResult::kApplied);
        }
        ASSERT_EQ(priv.max_version(), shared.max_version());
        for (uint64_t known = 0; known <= priv.max_version(); ++known) {
          const size_t budget = 60 + rng.Below(1000);
          std::optional<OriginDelta> a = priv.BuildDelta(known, budget);
          std::optional<OriginDelta> b = shared.BuildDelta(known, budget);
          ASSERT_EQ(a.has_value(), b.has_value()) << "seed " << seed << " known " << known;
          if (!a) continue;
          if (a->snapshot) {
            ASSERT_TRUE(b->snapshot);
            auto by_key = [](const CacheEntry& x, const CacheEntry& y) { return x.key < y.key; };
            std::sort(a->entries.begin(), a->entries.end(), by_key);
            std::sort(b->entries.begin(), b->entries.end(), by_key);
          }
          ASSERT_EQ(*a, *b) << "seed " << seed << " known " << known;
        }
      }
    }
  }
}

// Property: a writer making random changes and replicas exchanging random, budget-cut deltas over
// a lossy, duplicating, reordering channel (also relaying through each other) never regress,
// never apply across a gap, emit events that reproduce their state, and converge to the writer's
// state once the channel is drained.
TEST(OriginStoreTest, ReplicasConvergeUnderLossDupAndReorder) {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    Rng rng(seed);
    const size_t min_tomb = 1 + rng.Below(16);
    OriginStore w("o", 7, min_tomb);
    std::vector<OriginStore> replicas;
    for (int i = 0; i < 3; ++i) replicas.emplace_back("o", 7, min_tomb);
    std::vector<std::map<prefix::BlockKey, uint32_t>> models(3);
    std::deque<std::pair<int, OriginDelta>> wire;  // (destination, delta)
    std::set<prefix::BlockKey> truth;
    const int steps = 400;
    for (int step = 0; step < steps + 200; ++step) {
      if (step < steps) {
        // Writer changes.
        for (int k = 0, n = static_cast<int>(rng.Below(4)); k < n; ++k) {
          // Full 64-bit block keys: the store keeps (and sends) their summary keys.
          const prefix::BlockKey low = rng.Below(60);
          const prefix::BlockKey key = low | (prefix::BlockKey{1 + low % 3} << 60);
          const bool live = rng.Bernoulli(0.55);
          w.PutCache(key, static_cast<uint32_t>(low % 7) * 16, live);
          if (live) {
            truth.insert(low);
          } else {
            truth.erase(low);
          }
        }
        if (rng.Bernoulli(0.1)) {
          w.PutLoad(LoadReport{static_cast<uint32_t>(step), 0, 0, 0, 0, false},
                    static_cast<uint64_t>(step));
        }
      }
      // Someone (writer or a replica) sends what it believes a replica lacks.
      const int to = static_cast<int>(rng.Below(3));
      const int from = static_cast<int>(rng.Below(4));  // 3 = writer
      if (from != to) {
        const OriginStore& src = from == 3 ? w : replicas[from];
        const uint64_t known = rng.Bernoulli(0.2) ? rng.Below(replicas[to].max_version() + 1)
                                                  : replicas[to].max_version();
        auto d = src.BuildDelta(known, 40 + rng.Below(400));
        if (d && rng.Bernoulli(0.5)) {
          // Half of them through the wire encoding (which drops a removal's block index).
          Message m;
          m.type = MsgType::kDeltas;
          m.header.sender = "x";
          m.deltas = {*d};
          Result<Message> back = Decode(Encode(m));
          ASSERT_TRUE(back.ok()) << "seed " << seed;
          d = back->deltas[0];
        }
        if (d && !rng.Bernoulli(step < steps ? 0.3 : 0.0)) {
          wire.emplace_back(to, *d);
          if (rng.Bernoulli(0.2)) wire.emplace_back(to, *d);
        }
      }
      // Deliver one in random order.
      if (!wire.empty()) {
        const size_t i = rng.Below(wire.size());
        auto [dst, d] = wire[i];
        wire.erase(wire.begin() + static_cast<std::ptrdiff_t>(i));
        OriginStore& r = replicas[dst];
        const uint64_t before = r.max_version();
        std::vector<BlockEvent> ev;
        const auto res = r.Apply(d, &ev);
        ASSERT_GE(r.max_version(), before) << "seed " << seed;
        if (!d.snapshot && d.from_version > before && d.to_version > before) {
          ASSERT_EQ(res, OriginStore::ApplyResult::kGap) << "seed " << seed;
        }
        if (res != OriginStore::ApplyResult::kApplied) {
          ASSERT_TRUE(ev.empty());
        }
        for (const auto& e : ev) {
          if (e.kind == BlockEvent::Kind::kAdded) {
            ASSERT_FALSE(models[dst].contains(e.key)) << "seed " << seed;
            models[dst][e.key] = e.block_index;
          } else {
            ASSERT_EQ(models[dst].erase(e.key), 1u) << "seed " << seed;
          }
        }
        ASSERT_EQ(models[dst], LiveMap(r)) << "seed " << seed;
      }
    }
    // Drain: a few reliable rounds from the writer.
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < 3; ++i) {
        while (auto d = w.BuildDelta(replicas[i].max_version(), 300 + rng.Below(1 << 16))) {
          ASSERT_EQ(replicas[i].Apply(*d, nullptr), OriginStore::ApplyResult::kApplied);
        }
      }
    }
    std::map<prefix::BlockKey, uint32_t> expected;
    for (auto k : truth) expected[k] = static_cast<uint32_t>(k % 7) * 16;
    ASSERT_EQ(LiveMap(w), expected) << "seed " << seed;
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(replicas[i].max_version(), w.max_version()) << "seed " << seed;
      EXPECT_EQ(LiveMap(replicas[i]), expected) << "seed " << seed << " replica " << i;
      EXPECT_EQ(replicas[i].load(), w.load()) << "seed " << seed;
    }
  }
}

}  // namespace
}  // namespace hearsay::gossip

namespace hearsay::gossip {
namespace {

// The origin's blocks 0..n-1 (keys 100 + index) whose index is a multiple of `stride`.
std::vector<BlockEvent> Landmarks(uint32_t n, uint32_t stride) {
  std::vector<BlockEvent> out;
  for (uint32_t i = 0; i < n; i += stride) out.push_back({BlockEvent::Kind::kAdded, 100 + i, i});
  return out;
}

std::map<prefix::BlockKey, uint32_t> AsMap(const std::vector<BlockEvent>& events) {
  std::map<prefix::BlockKey, uint32_t> out;
  for (const auto& e : events) out[e.key] = e.block_index;
  return out;
}

// Session 7: an origin that changes its landmark stride makes every peer behind it take a
// snapshot at the new stride; no replica ever holds keys of two strides.
TEST(OriginStoreTest, RestrideSendsEveryPeerBehindASnapshotAndNeverMixesStrides) {
  OriginStore w("a", 1, 4, nullptr, true, 2);
  w.PutLoad(LoadReport{}, 1);
  for (const auto& e : Landmarks(40, 2)) ASSERT_TRUE(w.PutCache(e.key, e.block_index, true));
  ASSERT_TRUE(w.PutCache(100 + 38, 38, false));  // a tombstone
  OriginStore caught_up("a", 1, 4);
  OriginStore behind("a", 1, 4);
  ASSERT_EQ(caught_up.Apply(*w.BuildDelta(0, 1 << 20), nullptr),
            OriginStore::ApplyResult::kApplied);
  ASSERT_EQ(behind.Apply(*w.BuildDelta(0, 1 << 20), nullptr), OriginStore::ApplyResult::kApplied);
  EXPECT_EQ(caught_up.stride(), 2u);
  // A write that `behind` misses.
  ASSERT_TRUE(w.PutCache(100 + 38, 38, true));
  ASSERT_EQ(caught_up.Apply(*w.BuildDelta(caught_up.max_version(), 1 << 20), nullptr),
            OriginStore::ApplyResult::kApplied);
  const OriginDelta old_run = *w.BuildDelta(behind.max_version(), 1 << 20);
  EXPECT_EQ(old_run.stride, 2u);

  // Coarser: 2 -> 8. Keys not at a multiple of 8 are removed, and every peer is behind.
  const uint64_t before = w.max_version();
  w.Restride(8, Landmarks(40, 8));
  EXPECT_EQ(w.stride(), 8u);
  EXPECT_GT(w.max_version(), before);
  EXPECT_EQ(w.gc_floor(), w.max_version());
  EXPECT_EQ(w.tombstone_count(), 0u);
  EXPECT_EQ(LiveMap(w), AsMap(Landmarks(40, 8)));
  for (OriginStore* r : {&caught_up, &behind}) {
    auto d = w.BuildDelta(r->max_version(), 1 << 20);
    ASSERT_TRUE(d);
    EXPECT_TRUE(d->snapshot);
    EXPECT_EQ(d->stride, 8u);
    std::vector<BlockEvent> ev;
    ASSERT_EQ(r->Apply(*d, &ev), OriginStore::ApplyResult::kApplied);
    EXPECT_EQ(r->stride(), 8u);
    EXPECT_EQ(LiveMap(*r), AsMap(Landmarks(40, 8)));
  }
  // A late run at the old stride never lands on a replica at the new one.
  OriginDelta late = old_run;
  late.to_version = w.max_version() + 5;
  late.from_version = behind.max_version();
  EXPECT_EQ(behind.Apply(late, nullptr), OriginStore::ApplyResult::kStrideMismatch);
  EXPECT_EQ(LiveMap(behind), AsMap(Landmarks(40, 8)));

  // Finer again: 8 -> 4 (the in-between landmarks come from the caller, i.e. the radix tree).
  w.Restride(4, Landmarks(40, 4));
  auto d = w.BuildDelta(behind.max_version(), 1 << 20);
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->snapshot);
  ASSERT_EQ(behind.Apply(*d, nullptr), OriginStore::ApplyResult::kApplied);
  EXPECT_EQ(behind.stride(), 4u);
  EXPECT_EQ(LiveMap(behind), AsMap(Landmarks(40, 4)));
  // After the change, fresh writes are runs at the new stride again.
  ASSERT_TRUE(w.PutCache(100 + 40, 40, true));
  auto run = w.BuildDelta(behind.max_version(), 1 << 20);
  ASSERT_TRUE(run);
  EXPECT_FALSE(run->snapshot);
  EXPECT_EQ(run->stride, 4u);
  ASSERT_EQ(behind.Apply(*run, nullptr), OriginStore::ApplyResult::kApplied);
  EXPECT_TRUE(behind.Contains(100 + 40));
}

TEST(OriginStoreTest, RestrideWithNoKeyChangeStillTakesAVersion) {
  OriginStore w("a", 1, 4, nullptr, true, 16);
  w.PutLoad(LoadReport{}, 3);
  OriginStore r("a", 1, 4);
  ASSERT_EQ(r.Apply(*w.BuildDelta(0, 1 << 20), nullptr), OriginStore::ApplyResult::kApplied);
  EXPECT_EQ(w.Restride(32, {}), 0u);
  auto d = w.BuildDelta(r.max_version(), 1 << 20);
  ASSERT_TRUE(d);  // without a new version the peer would never learn the stride
  EXPECT_TRUE(d->snapshot);
  ASSERT_EQ(r.Apply(*d, nullptr), OriginStore::ApplyResult::kApplied);
  EXPECT_EQ(r.stride(), 32u);
  EXPECT_EQ(r.load().heartbeat, 3u);
}

}  // namespace
}  // namespace hearsay::gossip

namespace hearsay::gossip {
namespace {

TEST(OriginStoreTest, DeclineBehindSnapshotLeavesPeersAtTheCurrentStrideToOthers) {
  for (const bool on : {false, true}) {
    SCOPED_TRACE(on ? "on" : "off");
    OriginStore w("a", 1, 4, nullptr, true, 2);
    w.set_decline_behind_snapshot(on);
    w.PutLoad(LoadReport{}, 1);
    for (uint32_t i = 0; i < 20; i += 2) ASSERT_TRUE(w.PutCache(100 + i, i, true));
    OriginStore old_stride("a", 1, 4);  // never saw the change
    ASSERT_EQ(old_stride.Apply(*w.BuildDelta(0, 1 << 20), nullptr),
              OriginStore::ApplyResult::kApplied);
    w.Restride(4, {});
    const uint64_t epoch = w.max_version();
    // `early` takes the snapshot at the epoch, then a write later `late` takes one.
    OriginStore early("a", 1, 4), late("a", 1, 4);
    early.set_decline_behind_snapshot(on);
    late.set_decline_behind_snapshot(on);
    auto snap = w.BuildDelta(0, 1 << 20);
    ASSERT_TRUE(snap && snap->snapshot);
    EXPECT_EQ(snap->from_version, on ? epoch : 0u);
    ASSERT_EQ(early.Apply(*snap, nullptr), OriginStore::ApplyResult::kApplied);
    ASSERT_TRUE(w.PutCache(100 + 20, 20, true));
    ASSERT_EQ(late.Apply(*w.BuildDelta(0, 1 << 20), nullptr), OriginStore::ApplyResult::kApplied);
    // `late` cannot give `early` a run; with the option it gives nothing, else a snapshot.
    auto d = late.BuildDelta(early.max_version(), 1 << 20);
    if (on) {
      EXPECT_FALSE(d.has_value());
    } else {
      ASSERT_TRUE(d);
      EXPECT_TRUE(d->snapshot);
    }
    // A peer still at the old stride always gets the snapshot, and the origin serves everyone.
    auto for_old = late.BuildDelta(old_stride.max_version(), 1 << 20);
    ASSERT_TRUE(for_old);
    EXPECT_TRUE(for_old->snapshot);
    auto from_origin = w.BuildDelta(early.max_version(), 1 << 20);
    ASSERT_TRUE(from_origin);
    EXPECT_FALSE(from_origin->snapshot);
    ASSERT_EQ(early.Apply(*from_origin, nullptr), OriginStore::ApplyResult::kApplied);
    EXPECT_TRUE(early.Contains(100 + 20));
  }
}

}  // namespace
}  // namespace hearsay::gossip
