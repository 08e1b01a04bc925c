#include "hearsay/gossip/key_table.h"

#include <gtest/gtest.h>

#include <unordered_map>

#include "hearsay/env/rng.h"

namespace hearsay::gossip {
namespace {

struct Value {
  uint64_t a = 0;
  uint32_t b = 0;
};

// Checks the table against std::unordered_map after every operation: same size, same
// membership and values, and ForEach visits each entry exactly once.
void CheckSame(const KeyTable<Value>& t, const std::unordered_map<uint64_t, Value>& model) {
  ASSERT_EQ(t.size(), model.size());
  for (const auto& [k, v] : model) {
    const Value* got = t.Find(k);
    ASSERT_NE(got, nullptr) << k;
    EXPECT_EQ(got->a, v.a);
    EXPECT_EQ(got->b, v.b);
  }
  size_t visited = 0;
  t.ForEach([&](uint64_t k, const Value& v) {
    ++visited;
    auto it = model.find(k);
    ASSERT_NE(it, model.end()) << k;
    EXPECT_EQ(v.a, it->second.a);
  });
  EXPECT_EQ(visited, model.size());
}

TEST(KeyTableTest, MatchesUnorderedMapUnderRandomOperations) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Rng rng(seed);
    KeyTable<Value> t;
    std::unordered_map<uint64_t, Value> model;
    // A small key space (with 0 and the extremes) forces collisions, long probe runs, wrap-around
    // at the array's end and erase-then-reinsert.
    const uint64_t space = 8 + rng.Below(200);
    for (int op = 0; op < 2000; ++op) {
      uint64_t key = rng.Below(space);
      if (key == 1) key = UINT64_MAX;
      const uint64_t kind = rng.Below(10);
      if (kind < 5) {
        const Value v{rng.NextU64(), static_cast<uint32_t>(op)};
        auto [slot, inserted] = t.TryEmplace(key, v);
        auto [it, model_inserted] = model.try_emplace(key, v);
        ASSERT_EQ(inserted, model_inserted);
        if (!inserted) {
          *slot = v;
          it->second = v;
        }
      } else if (kind < 8) {
        t.Erase(key);
        model.erase(key);
      } else {
        EXPECT_EQ(t.Contains(key), model.contains(key));
      }
      if (op % 50 == 0) CheckSame(t, model);
    }
    CheckSame(t, model);
  }
}

TEST(KeyTableTest, EmptyTableFindsNothing) {
  KeyTable<Value> t;
  EXPECT_EQ(t.Find(0), nullptr);
  EXPECT_TRUE(t.empty());
  t.Erase(7);  // no-op
  t.TryEmplace(7, Value{1, 2});
  t.Erase(7);
  EXPECT_EQ(t.Find(7), nullptr);
  EXPECT_TRUE(t.empty());
}

TEST(KeyTableTest, ReserveKeepsEntries) {
  KeyTable<Value> t;
  for (uint64_t k = 0; k < 100; ++k) t.TryEmplace(k * 0x9e3779b97f4a7c15ULL, Value{k, 0});
  t.Reserve(10000);
  for (uint64_t k = 0; k < 100; ++k) {
    const Value* v = t.Find(k * 0x9e3779b97f4a7c15ULL);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->a, k);
  }
  EXPECT_EQ(t.size(), 100u);
}

}  // namespace
}  // namespace hearsay::gossip
