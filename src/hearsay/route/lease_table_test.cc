#include "hearsay/route/lease_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "hearsay/env/rng.h"
#include "hearsay/route/route_test_util.h"

namespace hearsay::route {
namespace {

using testing::At;
using testing::MakeChain;

TEST(LeaseTable, GridIsDenseBelowSixteenThenEightPerOctave) {
  std::vector<size_t> want;
  for (size_t p = 0; p < 16; ++p) want.push_back(p);
  for (size_t p = 16; p < 32; p += 2) want.push_back(p);
  for (size_t p = 32; p < 64; p += 4) want.push_back(p);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(LeaseTable::GridPosition(i), want[i]);
  for (size_t n = 0; n <= 64; ++n) {
    const size_t below = std::count_if(want.begin(), want.end(), [&](size_t p) { return p < n; });
    EXPECT_EQ(LeaseTable::GridCount(n), below) << n;
  }
  EXPECT_EQ(LeaseTable::GridCount(512), 16u + 8 * 5);
}

TEST(LeaseTable, FindsTheSharedPrefixOfASibling) {
  LeaseTable leases;
  const auto first = MakeChain(7, 0, 120, 128);
  const auto sibling = MakeChain(7, 1, 120, 128);
  const auto stranger = MakeChain(8, 0, 0, 128);
  leases.Grant(first, 5, At(0), At(100));
  EXPECT_EQ(leases.Find(first, At(1)).slot, 5u);
  EXPECT_EQ(leases.Find(first, At(1)).blocks, 128u);
  const auto m = leases.Find(sibling, At(1));
  EXPECT_EQ(m.slot, 5u);
  // 120 shared blocks; the grid step at 64..127 is 8, so the last grid key shared is block 112.
  EXPECT_EQ(m.blocks, 113u);
  EXPECT_EQ(leases.Find(stranger, At(1)).blocks, 0u);
  EXPECT_EQ(leases.Find(stranger, At(1)).slot, kNoSlot);
  // A strict prefix of the leased prompt matches too, to its last grid key (block 36 of 40).
  EXPECT_EQ(leases.Find(std::span(first).first(40), At(1)).blocks, 37u);
  EXPECT_EQ(leases.Find(std::span(first).first(41), At(1)).blocks, 41u);
}

TEST(LeaseTable, ExpiresRevokesAndTheNewestLeaseWins) {
  LeaseTable leases;
  const auto chain = MakeChain(1, 0, 64, 64);
  leases.Grant(chain, 2, At(0), At(100));
  EXPECT_EQ(leases.Find(chain, At(99)).slot, 2u);
  EXPECT_EQ(leases.Find(chain, At(100)).slot, kNoSlot);
  leases.Grant(chain, 2, At(100), At(200));
  leases.Grant(chain, 3, At(110), At(210));
  EXPECT_EQ(leases.Find(chain, At(120)).slot, 3u);
  leases.Revoke(3);
  EXPECT_EQ(leases.Find(chain, At(120)).slot, kNoSlot);
  leases.Grant({}, 4, At(0), At(100));  // an empty chain leases nothing
  EXPECT_EQ(leases.Find({}, At(1)).slot, kNoSlot);
}

TEST(LeaseTable, RevokeDropsOnlyTheSlotsLeasesAndStillWorksAfterARegrant) {
  LeaseTable leases;
  const auto a = MakeChain(1, 0, 64, 64);
  const auto b = MakeChain(2, 0, 64, 64);
  leases.Revoke(5);  // never leased: nothing to drop
  leases.Grant(a, 5, At(0), At(100));
  leases.Grant(b, 6, At(0), At(100));
  leases.Revoke(7);
  EXPECT_EQ(leases.Find(a, At(1)).slot, 5u);
  leases.Revoke(5);
  EXPECT_EQ(leases.Find(a, At(1)).slot, kNoSlot);
  EXPECT_EQ(leases.Find(b, At(1)).slot, 6u);
  leases.Grant(a, 5, At(2), At(100));  // leased again after its revoke
  EXPECT_EQ(leases.Find(a, At(3)).slot, 5u);
  leases.Revoke(5);
  EXPECT_EQ(leases.Find(a, At(3)).slot, kNoSlot);
  leases.Grant(a, kMaxTrackedSlots + 1, At(4), At(100));  // untracked slots always scan
  leases.Revoke(kMaxTrackedSlots + 1);
  EXPECT_EQ(leases.Find(a, At(5)).slot, kNoSlot);
}

TEST(LeaseTable, SmallTableForgetsButNeverLies) {
  LeaseTable leases(4);  // 16 entries: far too small for the traffic
  for (uint64_t f = 0; f < 50; ++f) leases.Grant(MakeChain(f, 0, 64, 64), Slot(f), At(0), At(1e6));
  for (uint64_t f = 0; f < 50; ++f) {
    const auto chain = MakeChain(f, 0, 64, 64);
    const auto m = leases.Find(chain, At(1));
    if (m.blocks > 0) {
      EXPECT_EQ(m.slot, Slot(f));  // whatever survives is true
    }
  }
}

// Property: with a large table and one TTL, Find() equals a naive model over every live lease.
TEST(LeaseTable, MatchesNaiveModel) {
  struct Lease {
    std::vector<prefix::BlockKey> chain;
    Slot slot;
    TimePoint expiry;
  };
  const auto shared_blocks = [](const std::vector<prefix::BlockKey>& a,
                                std::span<const prefix::BlockKey> b) {
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    return n;
  };
  const auto on_grid = [](size_t p) {
    for (size_t i = 0;; ++i) {
      const size_t g = LeaseTable::GridPosition(i);
      if (g >= p) return g == p;
    }
  };
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    Rng rng(seed);
    LeaseTable leases(16);
    std::vector<Lease> model;
    double t = 0;
    const Duration ttl = FromMillis(100);
    for (int step = 0; step < 150; ++step) {
      t += rng.Uniform(0, 10);
      const auto chain = MakeChain(rng.Below(3), rng.Below(6), rng.Below(200), 1 + rng.Below(300));
      if (rng.Bernoulli(0.5)) {
        const Slot slot = static_cast<Slot>(rng.Below(8));
        leases.Grant(chain, slot, At(t), At(t) + ttl);
        model.push_back({chain, slot, At(t) + ttl});
        continue;
      }
      // Deepest shared depth over live leases, and who holds each stored key.
      size_t deepest = 0;
      for (const Lease& l : model) {
        if (l.expiry > At(t)) deepest = std::max(deepest, shared_blocks(l.chain, chain));
      }
      const auto holder = [&](size_t blocks) {
        Slot s = kNoSlot;
        for (const Lease& l : model) {  // newest last
          if (l.expiry > At(t) && shared_blocks(l.chain, chain) >= blocks &&
              (on_grid(blocks - 1) || l.chain.size() == blocks)) {
            s = l.slot;
          }
        }
        return s;
      };
      size_t want = 0;
      if (deepest == chain.size() && holder(deepest) != kNoSlot) {
        want = deepest;
      } else {
        for (size_t b = deepest; b > 0; --b) {
          if (on_grid(b - 1)) {
            want = b;
            break;
          }
        }
      }
      const auto got = leases.Find(chain, At(t));
      ASSERT_EQ(got.blocks, want) << "seed " << seed << " step " << step;
      if (want > 0) {
        ASSERT_EQ(got.slot, holder(want)) << "seed " << seed << " step " << step;
      }
    }
  }
}

}  // namespace
}  // namespace hearsay::route
