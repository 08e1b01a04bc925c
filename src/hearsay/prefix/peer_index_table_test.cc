#include "hearsay/prefix/peer_index_table.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "hearsay/env/rng.h"

namespace hearsay::prefix {
namespace {

TEST(HolderTableTest, InlineToBitsetAndBack) {
  HolderTable t(100, 1);
  std::vector<Column> cols;
  for (int i = 0; i < 70; ++i) cols.push_back(*t.AllocateColumn());
  for (Column c : cols) EXPECT_TRUE(t.Add(42, c));
  for (Column c : cols) EXPECT_FALSE(t.Add(42, c));
  const HolderTable::Bucket* b = t.Find(42);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->count, 70);
  for (Column c : cols) EXPECT_TRUE(t.Contains(42, c));
  for (size_t i = 0; i + 2 < cols.size(); ++i) EXPECT_TRUE(t.Remove(42, cols[i]));
  b = t.Find(42);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->count, 2);
  EXPECT_FALSE(t.Contains(42, cols[0]));
  EXPECT_TRUE(t.Contains(42, cols[69]));
  EXPECT_TRUE(t.Remove(42, cols[68]));
  EXPECT_TRUE(t.Remove(42, cols[69]));
  EXPECT_EQ(t.Find(42), nullptr);
  EXPECT_EQ(t.size(), 0u);
}

TEST(HolderTableTest, AllocateForcesACleanWhenNoColumnIsFree) {
  HolderTable t(3, 2);
  const Column a = *t.AllocateColumn();
  const Column b = *t.AllocateColumn();
  const Column c = *t.AllocateColumn();
  EXPECT_EQ(t.AllocateColumn(), std::nullopt);
  for (BlockKey k = 0; k < 100; ++k) {
    t.Add(k, a);
    t.Add(k, b);
  }
  t.RetireColumn(a);
  EXPECT_FALSE(t.Contains(5, a));
  EXPECT_EQ(t.retired_columns(), 1u);
  // No sweep ran, so the only way to a column is a full clean.
  const std::optional<Column> d = t.AllocateColumn();
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(*d, a);
  EXPECT_EQ(t.retired_columns(), 0u);
  for (BlockKey k = 0; k < 100; ++k) {
    EXPECT_FALSE(t.Contains(k, *d));
    EXPECT_TRUE(t.Contains(k, b));
  }
  EXPECT_FALSE(t.Remove(5, c));
}

TEST(HolderTableTest, SweepFreesRetiredColumnsAndGarbage) {
  HolderTable t(4, 3);
  const Column a = *t.AllocateColumn();
  for (BlockKey k = 0; k < 5000; ++k) t.Add(k, a);
  t.RetireColumn(a);
  EXPECT_EQ(t.size(), 5000u);
  while (t.retired_columns() > 0) t.Sweep(100);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_FALSE(t.Remove(1, a));  // retired and freed: not live
}

// Property test: random operations against a model of live columns' key sets, with tiny sweep
// budgets so sweeps interleave with erasures, growth and shrinking.
void RunTableProperty(uint64_t seed, size_t max_columns, size_t universe, int steps,
                      int check_every) {
  Rng rng(seed);
  HolderTable t(max_columns, seed);
  std::map<Column, std::set<BlockKey>> model;  // live columns
  const auto key = [&] {
    return static_cast<BlockKey>(rng.Below(universe)) * 0x9e3779b97f4a7c15ULL;
  };
  const auto live_column = [&]() -> std::optional<Column> {
    if (model.empty()) return std::nullopt;
    auto it = model.begin();
    std::advance(it, rng.Below(model.size()));
    return it->first;
  };
  for (int step = 0; step < steps; ++step) {
    const uint64_t op = rng.Below(100);
    if (op < 5) {
      const std::optional<Column> c = t.AllocateColumn();
      if (model.size() == max_columns) {
        ASSERT_FALSE(c.has_value());
      } else {
        ASSERT_TRUE(c.has_value());
        ASSERT_FALSE(model.count(*c));
        model[*c];
      }
    } else if (op < 9) {
      if (auto c = live_column()) {
        t.RetireColumn(*c);
        model.erase(*c);
      }
    } else if (op < 55) {
      if (auto c = live_column()) {
        const BlockKey k = key();
        ASSERT_EQ(t.Add(k, *c), model[*c].insert(k).second) << "step " << step;
      }
    } else if (op < 90) {
      if (auto c = live_column()) {
        const BlockKey k = key();
        ASSERT_EQ(t.Remove(k, *c), model[*c].erase(k) == 1) << "step " << step;
      }
    } else if (op < 97) {
      t.Sweep(rng.Below(6));
    } else if (op < 99) {
      t.Reserve(rng.Below(50));
    } else {
      t.MaybeShrink();
    }
    if (step % check_every != 0) continue;
    // Check every key of the universe against every column.
    for (size_t u = 0; u < universe; ++u) {
      const BlockKey k = static_cast<BlockKey>(u) * 0x9e3779b97f4a7c15ULL;
      bool any = false;
      for (size_t c = 0; c < max_columns; ++c) {
        auto it = model.find(static_cast<Column>(c));
        const bool want = it != model.end() && it->second.count(k);
        any |= want;
        ASSERT_EQ(t.Contains(k, static_cast<Column>(c)), want) << "step " << step;
      }
      if (any) {
        ASSERT_NE(t.Find(k), nullptr);
      }
    }
    for (const auto& [c, keys] : model) {
      std::set<BlockKey> got;
      t.ForEachKeyOf(c, [&](BlockKey k) { ASSERT_TRUE(got.insert(k).second); });
      ASSERT_EQ(got, keys) << "step " << step;
    }
  }
  // Enough sweeping reclaims every retired column and all garbage.
  for (int i = 0; i < 100 && t.retired_columns() > 0; ++i) t.Sweep(1000);
  EXPECT_EQ(t.retired_columns(), 0u);
  std::set<BlockKey> held;
  for (const auto& [c, keys] : model) held.insert(keys.begin(), keys.end());
  EXPECT_EQ(t.size(), held.size());
}

TEST(HolderTablePropertyTest, FewColumns) {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE(seed);
    ASSERT_NO_FATAL_FAILURE(RunTableProperty(seed, 4, 40, 400, 1));
  }
}

TEST(HolderTablePropertyTest, ManyColumnsManyKeys) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(seed);
    ASSERT_NO_FATAL_FAILURE(RunTableProperty(seed, 130, 150, 2000, 25));
  }
}

}  // namespace
}  // namespace hearsay::prefix
