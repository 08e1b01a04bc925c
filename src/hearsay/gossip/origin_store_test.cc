#include "hearsay/gossip/origin_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "hearsay/env/rng.h"

namespace hearsay::gossip {
namespace {

using prefix::BlockEvent;

// `d` as a peer decodes it from a Deltas message (the encoding drops a removal's block index);
// nullopt if it does not decode.
std::optional<OriginDelta> ThroughWire(const OriginDelta& d) {
  Message m;
  m.type = MsgType::kDeltas;
  m.header.sender = "x";
  m.deltas = {d};
  Result<Message> back = Decode(Encode(m));
  if (!back.ok() || back->deltas.size() != 1) return std::nullopt;
  return back->deltas[0];
}

// The property tests' lossy, duplicating, reordering channel: (destination, delta) in flight.
template <typename Dst>
using Wire = std::deque<std::pair<Dst, OriginDelta>>;

// `src` sends what a peer that knows `known` lacks, cut to a random budget below
// 40 + max_extra_budget, half of the time through the wire encoding; it is lost with probability
// `loss` and sent twice with probability 0.2. False if a delta did not survive the encoding.
template <typename Dst>
bool SendLossy(Rng& rng, const OriginStore& src, uint64_t known, uint64_t max_extra_budget,
               double loss, Dst dst, Wire<Dst>* wire) {
  auto d = src.BuildDelta(known, 40 + rng.Below(max_extra_budget));
  if (d && rng.Bernoulli(0.5)) {
    d = ThroughWire(*d);
    if (!d) return false;
  }
  if (d && !rng.Bernoulli(loss)) {
    wire->emplace_back(dst, *d);
    if (rng.Bernoulli(0.2)) wire->emplace_back(dst, *d);
  }
  return true;
}

// Takes any one delta off a non-empty wire (so deliveries are reordered).
template <typename Dst>
std::pair<Dst, OriginDelta> TakeAny(Rng& rng, Wire<Dst>* wire) {
  const size_t i = rng.Below(wire->size());
  std::pair<Dst, OriginDelta> out = std::move((*wire)[i]);
  wire->erase(wire->begin() + static_cast<std::ptrdiff_t>(i));
  return out;
}

// A service record small enough for the property tests' budgets, different at each step.
Service SmallService(int step) {
  return Service{{{"sim", "m" + std::to_string(step), {}, 0, {}, 1, 16}}};
}

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

TEST(OriginStoreTest, ServiceRecordTravelsInVersionOrderAndInSnapshots) {
  OriginStore w("o", 1, 4, nullptr, true, 1);
  const Service s1{{{"sim", "m1", {}, 0, {}, 1, 16}}};
  const Service s2{{{"sim", "m2", {"two"}, 0, {}, 1, 16}}};
  w.PutCache(1, 0, true);           // v1
  EXPECT_EQ(w.PutService(s1), 2u);  // v2
  w.PutCache(2, 1, true);           // v3
  w.PutLoad(LoadReport{}, 1);       // v4
  OriginStore r("o", 1, 4);
  std::optional<OriginDelta> d = w.BuildDelta(0, 1 << 16);
  ASSERT_TRUE(d && d->service && d->load);
  EXPECT_EQ(d->service->version, 2u);
  d = ThroughWire(*d);
  ASSERT_TRUE(d);
  EXPECT_EQ(r.Apply(*d, nullptr), OriginStore::ApplyResult::kApplied);
  EXPECT_EQ(r.service().service, s1);
  // A later change reaches a replica that knows the earlier one, alone in its run.
  EXPECT_EQ(w.PutService(s2), 5u);
  d = w.BuildDelta(r.max_version(), 1 << 16);
  ASSERT_TRUE(d && d->service);
  EXPECT_TRUE(d->entries.empty());
  EXPECT_FALSE(d->load.has_value());
  EXPECT_EQ(r.Apply(*ThroughWire(*d), nullptr), OriginStore::ApplyResult::kApplied);
  EXPECT_EQ(r.service(), w.service());
  // A run cut before the record leaves it out and ends below its version.
  for (size_t budget = 8; budget < 400; ++budget) {
    std::optional<OriginDelta> cut = w.BuildDelta(0, budget);
    if (!cut) continue;
    if (cut->service) {
      EXPECT_GE(cut->to_version, cut->service->version) << budget;
    } else {
      EXPECT_LT(cut->to_version, w.service().version) << budget;
    }
  }
  // A snapshot carries the record too (collected removals send a new peer one).
  for (prefix::BlockKey k = 100; k < 120; ++k) w.PutCache(k, 0, true);
  for (prefix::BlockKey k = 100; k < 120; ++k) w.PutCache(k, 0, false);
  ASSERT_GT(w.gc_floor(), 0u);
  const std::optional<OriginDelta> snap = w.BuildDelta(0, 1 << 16);
  OriginStore fresh("o", 1, 4);
  ASSERT_TRUE(snap && snap->snapshot && snap->service);
  EXPECT_EQ(fresh.Apply(*snap, nullptr), OriginStore::ApplyResult::kApplied);
  EXPECT_EQ(fresh.service(), w.service());
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
      if (rng.Bernoulli(0.05)) w.PutService(SmallService(step));
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
    Wire<int> wire;
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
          w.PutLoad(LoadReport{.queue_depth = static_cast<uint32_t>(step)},
                    static_cast<uint64_t>(step));
        }
        if (rng.Bernoulli(0.03)) w.PutService(SmallService(step));
      }
      // Someone (writer or a replica) sends what it believes a replica lacks.
      const int to = static_cast<int>(rng.Below(3));
      const int from = static_cast<int>(rng.Below(4));  // 3 = writer
      if (from != to) {
        const OriginStore& src = from == 3 ? w : replicas[from];
        const uint64_t known = rng.Bernoulli(0.2) ? rng.Below(replicas[to].max_version() + 1)
                                                  : replicas[to].max_version();
        ASSERT_TRUE(SendLossy(rng, src, known, 400, step < steps ? 0.3 : 0.0, to, &wire))
            << "seed " << seed;
      }
      // Deliver one in random order.
      if (!wire.empty()) {
        auto [dst, d] = TakeAny(rng, &wire);
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
      EXPECT_EQ(replicas[i].service(), w.service()) << "seed " << seed;
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

// The run from `from` for a replica, applied there; the run must not be a snapshot.
void ApplyRun(const OriginStore& from, OriginStore& to, std::vector<BlockEvent>* ev = nullptr) {
  auto d = from.BuildDelta(to.max_version(), 1 << 20);
  ASSERT_TRUE(d);
  ASSERT_FALSE(d->snapshot);
  ASSERT_EQ(to.Apply(*d, ev), OriginStore::ApplyResult::kApplied);
}

// A change of stride reaches every peer behind it as one run, applied whole: no
// snapshot, no raised floor. A replica that applied it serves the same run to a third peer.
TEST(OriginStoreTest, RestrideReachesPeersBehindAsOneWholeRun) {
  for (const bool shared : {false, true}) {
    SCOPED_TRACE(shared ? "shared replicas" : "private replicas");
    auto history = shared ? std::make_shared<SharedHistory>() : nullptr;
    OriginStore w("a", 1, 64, history, true, 2);
    w.PutLoad(LoadReport{}, 1);
    for (const auto& e : Landmarks(40, 2)) ASSERT_TRUE(w.PutCache(e.key, e.block_index, true));
    ASSERT_TRUE(w.PutCache(100 + 38, 38, false));  // a tombstone
    OriginStore caught_up("a", 1, 64, history), behind("a", 1, 64, history),
        third("a", 1, 64, history);
    ASSERT_NO_FATAL_FAILURE(ApplyRun(w, behind));
    ASSERT_NO_FATAL_FAILURE(ApplyRun(w, third));
    ASSERT_TRUE(w.PutCache(100 + 38, 38, true));  // a write `behind` and `third` miss
    ASSERT_NO_FATAL_FAILURE(ApplyRun(w, caught_up));
    EXPECT_EQ(caught_up.stride(), 2u);

    // Coarser: 2 -> 8. The keys not at a multiple of 8 are removed, by ordinary writes.
    const uint64_t before = w.max_version();
    w.Restride(8, Landmarks(40, 8));
    EXPECT_EQ(w.stride(), 8u);
    EXPECT_EQ(w.stride_start(), w.max_version());
    EXPECT_GT(w.max_version(), before);
    EXPECT_EQ(w.gc_floor(), 0u);
    EXPECT_EQ(LiveMap(w), AsMap(Landmarks(40, 8)));
    for (OriginStore* r : {&caught_up, &behind}) {
      auto d = w.BuildDelta(r->max_version(), 1 << 20);
      ASSERT_TRUE(d);
      EXPECT_FALSE(d->snapshot);
      EXPECT_EQ(d->stride, 8u);
      EXPECT_EQ(d->stride_start, w.stride_start());
      EXPECT_EQ(d->to_version, w.max_version());
      std::vector<BlockEvent> ev;
      ASSERT_EQ(r->Apply(*d, &ev), OriginStore::ApplyResult::kApplied);
      EXPECT_EQ(r->stride(), 8u);
      EXPECT_EQ(r->stride_start(), w.stride_start());
      EXPECT_EQ(r->max_version(), w.max_version());
      EXPECT_EQ(LiveMap(*r), AsMap(Landmarks(40, 8)));
      for (const auto& e : ev) EXPECT_EQ(e.kind, BlockEvent::Kind::kRemoved);
    }
    // `behind` holds the change's writes: it serves `third`, still at the old stride, a run.
    std::vector<BlockEvent> ev;
    ASSERT_NO_FATAL_FAILURE(ApplyRun(behind, third, &ev));
    EXPECT_EQ(third.stride(), 8u);
    EXPECT_EQ(LiveMap(third), AsMap(Landmarks(40, 8)));
    EXPECT_EQ(ev.size(), 19u - 5u);  // it never held block 38

    // Finer again: 8 -> 4 (the in-between landmarks come from the caller, i.e. the radix tree):
    // additions, in one run as well.
    w.Restride(4, Landmarks(40, 4));
    ev.clear();
    ASSERT_NO_FATAL_FAILURE(ApplyRun(w, third, &ev));
    EXPECT_EQ(third.stride(), 4u);
    EXPECT_EQ(LiveMap(third), AsMap(Landmarks(40, 4)));
    for (const auto& e : ev) EXPECT_EQ(e.kind, BlockEvent::Kind::kAdded);
    // After the change, fresh writes are runs at the new stride that do not name it.
    ASSERT_TRUE(w.PutCache(100 + 40, 40, true));
    auto run = w.BuildDelta(third.max_version(), 1 << 20);
    ASSERT_TRUE(run);
    EXPECT_FALSE(run->snapshot);
    EXPECT_EQ(run->stride, 4u);
    EXPECT_EQ(run->stride_start, 0u);
    ASSERT_EQ(third.Apply(*run, nullptr), OriginStore::ApplyResult::kApplied);
    EXPECT_TRUE(third.Contains(100 + 40));
  }
}

// A run across the change is never cut: too large for the budget, it becomes a snapshot (or
// nothing). And a replica refuses a run at another stride unless it holds the whole change.
TEST(OriginStoreTest, ACrossingRunIsWholeOrRefused) {
  OriginStore w("a", 1, 64, nullptr, true, 2);
  w.PutLoad(LoadReport{}, 1);
  for (const auto& e : Landmarks(40, 2)) ASSERT_TRUE(w.PutCache(e.key, e.block_index, true));
  OriginStore r("a", 1, 64);
  ASSERT_NO_FATAL_FAILURE(ApplyRun(w, r));
  w.Restride(8, Landmarks(40, 8));
  const auto whole = w.BuildDelta(r.max_version(), 1 << 20);
  ASSERT_TRUE(whole && !whole->snapshot);
  ASSERT_EQ(whole->entries.size(), 15u);  // 20 keys at stride 2, 5 of them at stride 8
  // Smaller budgets give nothing, then a snapshot of the 5 keys (too small for the 15 removals
  // and the load record), then the whole run: never a part of it.
  int snapshots = 0, runs = 0;
  for (size_t budget = 30; budget < 300; budget += 5) {
    SCOPED_TRACE(budget);
    auto d = w.BuildDelta(r.max_version(), budget);
    if (!d) {
      EXPECT_EQ(snapshots + runs, 0);
      continue;
    }
    if (d->snapshot) {
      EXPECT_EQ(runs, 0);
      EXPECT_EQ(d->entries.size(), 5u);
      ++snapshots;
    } else {
      EXPECT_EQ(*d, *whole);
      ++runs;
    }
  }
  EXPECT_GT(snapshots, 0);
  EXPECT_GT(runs, 0);

  const auto before = LiveMap(r);
  const uint64_t version = r.max_version();
  auto expect_refused = [&](const OriginDelta& d) {
    EXPECT_EQ(r.Apply(d, nullptr), OriginStore::ApplyResult::kStrideMismatch);
    EXPECT_EQ(r.max_version(), version);
    EXPECT_EQ(r.stride(), 2u);
    EXPECT_EQ(LiveMap(r), before);
  };
  // Cut before the stride start (what an older sender's budget would have made of it).
  OriginDelta cut = *whole;
  cut.entries.resize(7);
  cut.load.reset();
  cut.to_version = cut.entries.back().version;
  expect_refused(cut);
  // Not naming the stride start, or naming one it does not reach.
  OriginDelta unnamed = *whole;
  unnamed.stride_start = 0;
  expect_refused(unnamed);
  cut.stride_start = w.stride_start();
  expect_refused(cut);
  // The whole run is applied.
  ASSERT_EQ(r.Apply(*whole, nullptr), OriginStore::ApplyResult::kApplied);
  EXPECT_EQ(r.stride(), 8u);
  EXPECT_EQ(LiveMap(r), AsMap(Landmarks(40, 8)));
}

// The change's removals are kept as tombstones (the allowance doubles after a change), so a peer
// that knew the state just before the change still gets a run, not a snapshot.
TEST(OriginStoreTest, RestrideKeepsItsRemovalsForPeersBehind) {
  OriginStore w("a", 1, 8, nullptr, true, 2);
  for (const auto& e : Landmarks(40, 2)) ASSERT_TRUE(w.PutCache(e.key, e.block_index, true));
  ASSERT_TRUE(w.PutCache(100 + 38, 38, false));  // 19 live, 1 tombstone
  OriginStore r("a", 1, 8);
  ASSERT_NO_FATAL_FAILURE(ApplyRun(w, r));
  w.Restride(8, Landmarks(40, 8));  // 14 more tombstones, 5 live: over max(8, 5), not twice it
  EXPECT_EQ(w.tombstone_count(), 15u);
  EXPECT_EQ(w.gc_floor(), 0u);
  ASSERT_NO_FATAL_FAILURE(ApplyRun(w, r));
  EXPECT_EQ(r.stride(), 8u);
  EXPECT_EQ(LiveMap(r), AsMap(Landmarks(40, 8)));
}

TEST(OriginStoreTest, RestrideWithNoKeyChangeStillTakesAVersion) {
  OriginStore w("a", 1, 4, nullptr, true, 16);
  w.PutLoad(LoadReport{}, 3);
  OriginStore r("a", 1, 4);
  ASSERT_EQ(r.Apply(*w.BuildDelta(0, 1 << 20), nullptr), OriginStore::ApplyResult::kApplied);
  EXPECT_EQ(w.Restride(32, {}), 0u);
  auto d = w.BuildDelta(r.max_version(), 1 << 20);
  ASSERT_TRUE(d);  // without a new version the peer would never learn the stride
  EXPECT_FALSE(d->snapshot);
  EXPECT_EQ(d->stride_start, w.max_version());
  ASSERT_EQ(r.Apply(*d, nullptr), OriginStore::ApplyResult::kApplied);
  EXPECT_EQ(r.stride(), 32u);
  EXPECT_EQ(r.load().heartbeat, 3u);
}

// Property: an origin that changes stride at random while replicas exchange random, budget-cut
// deltas over a lossy, duplicating, reordering channel (relaying through each other, private and
// shared): no replica ever holds a key off its stride, events reproduce each replica, and all
// converge to the writer once the channel is drained.
TEST(OriginStoreTest, RestridesUnderLossNeverMixStrides) {
  const uint32_t strides[] = {1, 2, 4, 8};
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    Rng rng(seed);
    const size_t min_tomb = 1 + rng.Below(32);
    auto history = std::make_shared<SharedHistory>();
    OriginStore w("o", 7, min_tomb, history, true, 1);
    std::vector<OriginStore> replicas;
    for (int i = 0; i < 4; ++i) replicas.emplace_back("o", 7, min_tomb, i < 2 ? nullptr : history);
    std::vector<std::map<prefix::BlockKey, uint32_t>> models(replicas.size());
    Wire<size_t> wire;
    std::map<prefix::BlockKey, uint32_t> held;  // every block the origin holds
    auto landmarks = [&](uint32_t stride) {
      std::vector<BlockEvent> out;
      for (const auto& [k, i] : held) {
        if (i % stride == 0) out.push_back({BlockEvent::Kind::kAdded, k, i});
      }
      return out;
    };
    const int steps = 500;
    for (int step = 0; step < steps + 300; ++step) {
      if (step < steps) {
        for (int k = 0, n = static_cast<int>(rng.Below(4)); k < n; ++k) {
          const prefix::BlockKey key = rng.Below(80);
          const auto index = static_cast<uint32_t>(key % 9);
          const bool live = rng.Bernoulli(0.55);
          if (live) {
            held[key] = index;
          } else {
            held.erase(key);
          }
          if (index % w.stride() == 0) w.PutCache(key, index, live);
        }
        if (rng.Bernoulli(0.1)) w.PutLoad(LoadReport{}, static_cast<uint64_t>(step));
        if (rng.Bernoulli(0.03)) {
          const uint32_t next = strides[rng.Below(4)];
          if (next != w.stride()) w.Restride(next, landmarks(next));
        }
      }
      const size_t to = rng.Below(replicas.size());
      const size_t from = rng.Below(replicas.size() + 1);  // the last: the writer
      if (from != to) {
        const OriginStore& src = from == replicas.size() ? w : replicas[from];
        const uint64_t known = rng.Bernoulli(0.2) ? rng.Below(replicas[to].max_version() + 1)
                                                  : replicas[to].max_version();
        ASSERT_TRUE(SendLossy(rng, src, known, 600, step < steps ? 0.3 : 0.0, to, &wire));
      }
      if (!wire.empty()) {
        auto [dst, d] = TakeAny(rng, &wire);
        OriginStore& r = replicas[dst];
        std::vector<BlockEvent> ev;
        if (r.Apply(d, &ev) != OriginStore::ApplyResult::kApplied) {
          ASSERT_TRUE(ev.empty());
        }
        if (d.snapshot) {
          models[dst].clear();
          for (const auto& e : r.LiveKeys()) models[dst][e.key] = e.block_index;
        }
        for (const auto& e : ev) {
          if (d.snapshot) break;
          if (e.kind == BlockEvent::Kind::kAdded) {
            models[dst][e.key] = e.block_index;
          } else {
            ASSERT_EQ(models[dst].erase(e.key), 1u);
          }
        }
        ASSERT_EQ(models[dst], LiveMap(r));
        for (const auto& [k, index] : models[dst]) {
          ASSERT_EQ(index % r.stride(), 0u) << "replica " << dst << " key " << k;
        }
      }
    }
    for (int round = 0; round < 3; ++round) {
      for (auto& r : replicas) {
        while (auto d = w.BuildDelta(r.max_version(), 300 + rng.Below(1 << 16))) {
          ASSERT_EQ(r.Apply(*d, nullptr), OriginStore::ApplyResult::kApplied);
        }
      }
    }
    for (size_t i = 0; i < replicas.size(); ++i) {
      EXPECT_EQ(replicas[i].max_version(), w.max_version()) << "replica " << i;
      EXPECT_EQ(replicas[i].stride(), w.stride()) << "replica " << i;
      EXPECT_EQ(LiveMap(replicas[i]), LiveMap(w)) << "replica " << i;
    }
  }
}

}  // namespace
}  // namespace hearsay::gossip
