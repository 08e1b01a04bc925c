#include "hearsay/prefix/radix_tree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "hearsay/env/rng.h"

namespace hearsay::prefix {
namespace {

using Tokens = std::vector<TokenId>;

BlockKeyer Keyer(size_t block = 16) {
  return *BlockKeyer::Create("radix-test-secret-0123456789", "m", "t", {.tokens_per_block = block});
}

Tokens Range(TokenId from, size_t n) {
  Tokens t(n);
  std::iota(t.begin(), t.end(), from);
  return t;
}

Tokens Concat(Tokens a, const Tokens& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(RadixTreeTest, EmptyTree) {
  RadixTree tree(Keyer(), {.capacity_tokens = 100});
  EXPECT_EQ(tree.Peek(Range(0, 10)), 0u);
  EXPECT_EQ(tree.Match(Range(0, 10), 1), 0u);
  EXPECT_EQ(tree.size_tokens(), 0u);
  EXPECT_EQ(tree.held_blocks(), 0u);
  EXPECT_EQ(tree.node_count(), 0u);
  EXPECT_TRUE(tree.HeldKeys().empty());
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

TEST(RadixTreeTest, InsertThenLongestPrefix) {
  RadixTree tree(Keyer(), {.capacity_tokens = 1000});
  const Tokens a = Range(100, 40);
  std::vector<BlockEvent> events;
  const InsertResult r = tree.Insert(a, 1, &events);
  EXPECT_EQ(r.matched_tokens, 0u);
  EXPECT_EQ(r.inserted_tokens, 40u);
  EXPECT_EQ(r.cached_tokens, 40u);
  EXPECT_EQ(r.evicted_tokens, 0u);
  EXPECT_FALSE(r.pin.valid());
  EXPECT_EQ(tree.Peek(a), 40u);
  EXPECT_EQ(tree.Peek(Concat(a, {1, 2, 3})), 40u);
  EXPECT_EQ(tree.Peek(Tokens(a.begin(), a.begin() + 17)), 17u);
  Tokens diverge = a;
  diverge[23] = 7;
  EXPECT_EQ(tree.Peek(diverge), 23u);
  EXPECT_EQ(tree.Peek(Tokens{5}), 0u);
  EXPECT_EQ(tree.Peek({}), 0u);
  // Peek never splits; Match at a mid-edge point does (without changing what is cached).
  EXPECT_EQ(tree.node_count(), 1u);
  EXPECT_EQ(tree.Match(diverge, 2), 23u);
  EXPECT_EQ(tree.node_count(), 2u);
  EXPECT_EQ(tree.size_tokens(), 40u);
  EXPECT_TRUE(tree.CheckInvariants().ok());
  // Two full blocks of 16, the partial third ignored; keys as the keyer computes them.
  ASSERT_EQ(events.size(), 2u);
  const auto keys = tree.keyer().Keys(a);
  for (uint32_t i = 0; i < 2; ++i) {
    EXPECT_EQ(events[i], (BlockEvent{BlockEvent::Kind::kAdded, keys[i], i}));
  }
}

TEST(RadixTreeTest, SharedPrefixStoredOnceAndBlocksCompletedByBranch) {
  RadixTree tree(Keyer(), {.capacity_tokens = 1000});
  const Tokens a = Range(0, 24);
  Tokens b = Range(0, 10);
  b = Concat(b, Range(500, 30));
  std::vector<BlockEvent> events;
  (void)tree.Insert(a, 1, &events);
  events.clear();
  const InsertResult r = tree.Insert(b, 2, &events);
  EXPECT_EQ(r.matched_tokens, 10u);
  EXPECT_EQ(r.inserted_tokens, 30u);
  EXPECT_EQ(tree.size_tokens(), 54u);
  EXPECT_EQ(tree.node_count(), 3u);
  // b's blocks 0 and 1 are new (block 0 of a differs from b's after token 10).
  const auto kb = tree.keyer().Keys(b);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], (BlockEvent{BlockEvent::Kind::kAdded, kb[0], 0}));
  EXPECT_EQ(events[1], (BlockEvent{BlockEvent::Kind::kAdded, kb[1], 1}));
  EXPECT_EQ(tree.held_blocks(), 3u);
  EXPECT_TRUE(tree.CheckInvariants().ok());
  // Inserting a cached prefix stores nothing.
  events.clear();
  const InsertResult again = tree.Insert(Tokens(b.begin(), b.begin() + 20), 3, &events);
  EXPECT_EQ(again.matched_tokens, 20u);
  EXPECT_EQ(again.inserted_tokens, 0u);
  EXPECT_TRUE(events.empty());
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

TEST(RadixTreeTest, ExtendingAPromptCompletesTheStraddlingBlock) {
  RadixTree tree(Keyer(), {.capacity_tokens = 1000});
  const Tokens full = Range(0, 48);
  std::vector<BlockEvent> events;
  (void)tree.Insert(Tokens(full.begin(), full.begin() + 20), 1, &events);
  ASSERT_EQ(events.size(), 1u);
  events.clear();
  (void)tree.Insert(full, 2, &events);
  const auto keys = tree.keyer().Keys(full);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], (BlockEvent{BlockEvent::Kind::kAdded, keys[1], 1}));
  EXPECT_EQ(events[1], (BlockEvent{BlockEvent::Kind::kAdded, keys[2], 2}));
  EXPECT_EQ(tree.HeldKeys(), keys);
}

TEST(RadixTreeTest, EvictsLeastRecentlyUsedFirst) {
  RadixTree tree(Keyer(), {.capacity_tokens = 100});
  const Tokens a = Range(0, 50);
  const Tokens b = Range(1000, 50);
  const Tokens c = Range(2000, 30);
  std::vector<BlockEvent> events;
  (void)tree.Insert(a, 1, &events);
  (void)tree.Insert(b, 2, &events);
  EXPECT_EQ(tree.Match(a, 3), 50u);  // a is now the most recent
  events.clear();
  const InsertResult r = tree.Insert(c, 4, &events);
  EXPECT_EQ(r.evicted_tokens, 30u);
  EXPECT_EQ(r.cached_tokens, 30u);
  EXPECT_EQ(tree.size_tokens(), 100u);
  EXPECT_EQ(tree.Peek(a), 50u);
  EXPECT_EQ(tree.Peek(b), 20u);  // trimmed from its tail
  EXPECT_EQ(tree.Peek(c), 30u);
  // b lost blocks 2 and 1 (tokens 16..47), deepest first; c gained block 0.
  const auto kb = tree.keyer().Keys(b);
  const auto kc = tree.keyer().Keys(c);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0], (BlockEvent{BlockEvent::Kind::kRemoved, kb[2], 2}));
  EXPECT_EQ(events[1], (BlockEvent{BlockEvent::Kind::kRemoved, kb[1], 1}));
  EXPECT_EQ(events[2], (BlockEvent{BlockEvent::Kind::kAdded, kc[0], 0}));
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

TEST(RadixTreeTest, PeekDoesNotRefreshRecency) {
  RadixTree tree(Keyer(), {.capacity_tokens = 100});
  (void)tree.Insert(Range(0, 50), 1, nullptr);
  (void)tree.Insert(Range(1000, 50), 2, nullptr);
  EXPECT_EQ(tree.Peek(Range(0, 50)), 50u);
  EXPECT_EQ(tree.Evict(50, nullptr), 50u);
  EXPECT_EQ(tree.Peek(Range(0, 50)), 0u);
  EXPECT_EQ(tree.Peek(Range(1000, 50)), 50u);
}

TEST(RadixTreeTest, PinnedTokensAreNeverEvicted) {
  RadixTree tree(Keyer(), {.capacity_tokens = 100});
  const Tokens a = Range(0, 60);
  const Tokens b = Range(1000, 40);
  (void)tree.Insert(a, 1, nullptr);
  (void)tree.Insert(b, 2, nullptr);
  const PinResult pin = tree.Pin(Tokens(a.begin(), a.begin() + 45), 3);
  EXPECT_EQ(pin.tokens, 45u);
  EXPECT_TRUE(pin.handle.valid());
  EXPECT_EQ(tree.pinned_tokens(), 45u);  // exact: the edge was split at 45
  EXPECT_EQ(tree.evictable_tokens(), 55u);
  // Wants 80; can free 55 (a's unpinned tail and all of b); stores what fits.
  const InsertResult r = tree.Insert(Range(5000, 80), 4, nullptr);
  EXPECT_EQ(r.evicted_tokens, 55u);
  EXPECT_EQ(r.cached_tokens, 55u);
  EXPECT_EQ(tree.Peek(a), 45u);
  EXPECT_EQ(tree.Peek(b), 0u);
  EXPECT_EQ(tree.size_tokens(), 100u);
  EXPECT_TRUE(tree.CheckInvariants().ok());
  // Everything is pinned or freshly inserted; an explicit evict may not touch the pin.
  EXPECT_EQ(tree.Evict(1000, nullptr), 55u);
  EXPECT_EQ(tree.Peek(a), 45u);
  EXPECT_TRUE(tree.Unpin(pin.handle).ok());
  EXPECT_EQ(tree.pinned_tokens(), 0u);
  EXPECT_EQ(tree.Evict(1000, nullptr), 45u);
  EXPECT_EQ(tree.size_tokens(), 0u);
  EXPECT_EQ(tree.node_count(), 0u);
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

TEST(RadixTreeTest, EverythingPinnedInsertStoresNothing) {
  RadixTree tree(Keyer(), {.capacity_tokens = 32});
  const InsertResult first = tree.Insert(Range(0, 32), 1, nullptr, /*pin=*/true);
  ASSERT_TRUE(first.pin.valid());
  EXPECT_EQ(tree.pinned_tokens(), 32u);
  std::vector<BlockEvent> events;
  const InsertResult r = tree.Insert(Range(100, 16), 2, &events);
  EXPECT_EQ(r.cached_tokens, 0u);
  EXPECT_EQ(r.inserted_tokens, 0u);
  EXPECT_TRUE(events.empty());
  EXPECT_EQ(tree.Peek(Range(0, 32)), 32u);
}

TEST(RadixTreeTest, InsertWithPinPinsTheCachedPrefix) {
  RadixTree tree(Keyer(), {.capacity_tokens = 100});
  (void)tree.Insert(Range(0, 20), 1, nullptr);
  const InsertResult r = tree.Insert(Range(0, 50), 2, nullptr, /*pin=*/true);
  EXPECT_EQ(r.matched_tokens, 20u);
  EXPECT_EQ(r.cached_tokens, 50u);
  ASSERT_TRUE(r.pin.valid());
  EXPECT_EQ(tree.pinned_tokens(), 50u);
  EXPECT_EQ(tree.pin_count(), 1u);
  EXPECT_TRUE(tree.Unpin(r.pin).ok());
  EXPECT_EQ(tree.pinned_tokens(), 0u);
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

TEST(RadixTreeTest, OverlappingPinsCountTokensOnce) {
  RadixTree tree(Keyer(), {.capacity_tokens = 100});
  (void)tree.Insert(Range(0, 40), 1, nullptr);
  const PinResult p1 = tree.Pin(Range(0, 40), 2);
  const PinResult p2 = tree.Pin(Range(0, 10), 3);
  EXPECT_EQ(tree.pinned_tokens(), 40u);
  EXPECT_TRUE(tree.Unpin(p1.handle).ok());
  EXPECT_EQ(tree.pinned_tokens(), 10u);
  EXPECT_TRUE(tree.Unpin(p2.handle).ok());
  EXPECT_EQ(tree.pinned_tokens(), 0u);
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

TEST(RadixTreeTest, PinHandleSurvivesSplitsAboveIt) {
  RadixTree tree(Keyer(), {.capacity_tokens = 100});
  (void)tree.Insert(Range(0, 40), 1, nullptr);
  const PinResult pin = tree.Pin(Range(0, 40), 2);
  Tokens b = Range(0, 15);
  b.push_back(999);
  (void)tree.Insert(b, 3, nullptr);  // splits the pinned edge at 15
  EXPECT_EQ(tree.pinned_tokens(), 40u);
  EXPECT_TRUE(tree.CheckInvariants().ok());
  EXPECT_EQ(tree.Evict(100, nullptr), 1u);  // only b's own token is evictable
  EXPECT_TRUE(tree.Unpin(pin.handle).ok());
  EXPECT_EQ(tree.Evict(100, nullptr), 40u);
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

TEST(RadixTreeTest, BadPinHandles) {
  RadixTree tree(Keyer(), {.capacity_tokens = 100});
  EXPECT_EQ(tree.Unpin(PinHandle{}).code(), StatusCode::kNotFound);
  EXPECT_EQ(tree.Unpin(PinHandle{12345}).code(), StatusCode::kNotFound);
  (void)tree.Insert(Range(0, 20), 1, nullptr);
  const PinResult pin = tree.Pin(Range(0, 20), 2);
  EXPECT_TRUE(tree.Unpin(pin.handle).ok());
  EXPECT_EQ(tree.Unpin(pin.handle).code(), StatusCode::kNotFound);  // double unpin
  EXPECT_EQ(tree.pinned_tokens(), 0u);
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

TEST(RadixTreeTest, PinOfUncachedPromptPinsNothing) {
  RadixTree tree(Keyer(), {.capacity_tokens = 100});
  const PinResult pin = tree.Pin(Range(0, 20), 1);
  EXPECT_EQ(pin.tokens, 0u);
  EXPECT_TRUE(pin.handle.valid());
  EXPECT_EQ(tree.pinned_tokens(), 0u);
  EXPECT_TRUE(tree.Unpin(pin.handle).ok());
}

TEST(RadixTreeTest, ZeroCapacityCachesNothing) {
  RadixTree tree(Keyer(), {.capacity_tokens = 0});
  std::vector<BlockEvent> events;
  const InsertResult r = tree.Insert(Range(0, 64), 1, &events, /*pin=*/true);
  EXPECT_EQ(r.cached_tokens, 0u);
  EXPECT_EQ(r.inserted_tokens, 0u);
  EXPECT_TRUE(events.empty());
  EXPECT_EQ(tree.Peek(Range(0, 64)), 0u);
  EXPECT_EQ(tree.size_tokens(), 0u);
  EXPECT_EQ(tree.free_tokens(), 0u);
  EXPECT_TRUE(tree.Unpin(r.pin).ok());
  EXPECT_EQ(tree.Evict(10, &events), 0u);
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

TEST(RadixTreeTest, EmptyAndShortPrompts) {
  RadixTree tree(Keyer(), {.capacity_tokens = 100});
  std::vector<BlockEvent> events;
  const InsertResult empty = tree.Insert({}, 1, &events);
  EXPECT_EQ(empty.cached_tokens, 0u);
  const InsertResult shorter = tree.Insert(Range(0, 15), 2, &events);
  EXPECT_EQ(shorter.cached_tokens, 15u);
  EXPECT_TRUE(events.empty());  // no full block yet
  EXPECT_EQ(tree.held_blocks(), 0u);
  (void)tree.Insert(Range(0, 16), 3, &events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].block_index, 0u);
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

TEST(RadixTreeTest, MillionTokenPrompt) {
  RadixTree tree(Keyer(), {.capacity_tokens = 2'000'000});
  Rng rng(1);
  Tokens big(1'000'000);
  for (auto& t : big) t = static_cast<TokenId>(rng.Below(50000));
  std::vector<BlockEvent> events;
  const InsertResult r = tree.Insert(big, 1, &events);
  EXPECT_EQ(r.cached_tokens, 1'000'000u);
  EXPECT_EQ(events.size(), 62'500u);
  EXPECT_EQ(tree.held_blocks(), 62'500u);
  EXPECT_EQ(tree.Peek(big), 1'000'000u);
  EXPECT_EQ(tree.Match(big, 2), 1'000'000u);
  events.clear();
  EXPECT_EQ(tree.Evict(1'000'000, &events), 1'000'000u);
  EXPECT_EQ(events.size(), 62'500u);
  EXPECT_EQ(tree.held_blocks(), 0u);

  // Into a smaller cache: the prefix that fits is stored.
  RadixTree small(Keyer(), {.capacity_tokens = 100'000});
  const InsertResult s = small.Insert(big, 1, nullptr);
  EXPECT_EQ(s.cached_tokens, 100'000u);
  EXPECT_EQ(small.Peek(big), 100'000u);
  EXPECT_EQ(small.held_blocks(), 100'000u / 16);
}

TEST(RadixTreeTest, DeepChainOfNodes) {
  // Every insert extends the previous prompt by one token: a chain of 3000 single-token nodes.
  RadixTree tree(Keyer(4), {.capacity_tokens = 10'000});
  Tokens t;
  for (int i = 0; i < 3000; ++i) {
    t.push_back(static_cast<TokenId>(i % 3));
    ASSERT_EQ(tree.Insert(t, static_cast<uint64_t>(i), nullptr).inserted_tokens, 1u);
  }
  EXPECT_EQ(tree.node_count(), 3000u);
  EXPECT_EQ(tree.held_blocks(), 750u);
  EXPECT_EQ(tree.HeldKeys(), tree.keyer().Keys(t));
}

TEST(RadixTreeTest, MoveKeepsContentsAndPins) {
  RadixTree tree(Keyer(), {.capacity_tokens = 100});
  (void)tree.Insert(Range(0, 40), 1, nullptr);
  const PinResult pin = tree.Pin(Range(0, 40), 2);
  RadixTree moved(std::move(tree));
  EXPECT_EQ(moved.Peek(Range(0, 40)), 40u);
  RadixTree other(Keyer(), {.capacity_tokens = 10});
  (void)other.Insert(Range(7, 5), 1, nullptr);
  other = std::move(moved);
  EXPECT_EQ(other.capacity_tokens(), 100u);
  EXPECT_EQ(other.Peek(Range(0, 40)), 40u);
  EXPECT_TRUE(other.Unpin(pin.handle).ok());
  EXPECT_TRUE(other.CheckInvariants().ok());
}

TEST(RadixTreeTest, SnapshotListsHeldBlocksParentsFirst) {
  RadixTree tree(Keyer(4), {.capacity_tokens = 1000});
  (void)tree.Insert(Range(0, 20), 1, nullptr);
  Tokens b = Range(0, 9);
  b = Concat(b, Range(100, 12));
  (void)tree.Insert(b, 2, nullptr);
  std::vector<BlockEvent> snap;
  tree.AppendHeldBlocks(&snap);
  EXPECT_EQ(snap.size(), tree.held_blocks());
  std::map<BlockKey, uint32_t> index;
  for (const auto& e : snap) {
    EXPECT_EQ(e.kind, BlockEvent::Kind::kAdded);
    // Block i-1 of the same prompt appears before block i.
    index[e.key] = e.block_index;
  }
  for (const Tokens& p : {Range(0, 20), b}) {
    const auto keys = tree.keyer().Keys(p);
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(index.count(keys[i]), 1u);
      EXPECT_EQ(index[keys[i]], i);
      if (i > 0) {
        auto pos = [&](BlockKey k) {
          return std::find_if(snap.begin(), snap.end(), [&](auto& e) { return e.key == k; });
        };
        EXPECT_LT(pos(keys[i - 1]), pos(keys[i]));
      }
    }
  }
}

// A namespaced prompt is cached behind its namespace block, which no event names: the events
// carry the keys the node routes with (AppendNamespacedKeys), the prompt's first block at index 0.
TEST(RadixTreeTest, NamespaceHeaderIsNeverReported) {
  const BlockKeyer keyer = Keyer(4);
  RadixTree tree(keyer, {.capacity_tokens = 1000, .namespace_headers = true});
  const Tokens prompt = Range(0, 20);  // 5 blocks
  const uint64_t ns = 77;
  std::vector<BlockKey> want;
  AppendNamespacedKeys(keyer, ns, prompt, &want);
  ASSERT_EQ(want.size(), 5u);
  const BlockKey header_key = keyer.Keys(NamespaceBlock(ns, 4)).front();

  // Cached in two steps, so the header and the prompt's first block are split across nodes.
  std::vector<BlockEvent> events;
  (void)tree.Insert(Concat(NamespaceBlock(ns, 4), Range(0, 6)), 1, &events);
  (void)tree.Insert(Concat(NamespaceBlock(ns, 4), prompt), 2, &events);
  ASSERT_TRUE(tree.CheckInvariants().ok());
  ASSERT_EQ(events.size(), want.size());
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i], (BlockEvent{BlockEvent::Kind::kAdded, want[i], uint32_t(i)}));
  }
  EXPECT_EQ(tree.held_blocks(), 5u);
  // The same prompt in namespace 0 is another chain, reported from index 0 as well.
  events.clear();
  (void)tree.Insert(prompt, 3, &events);
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0], (BlockEvent{BlockEvent::Kind::kAdded, keyer.Keys(prompt)[0], 0}));
  EXPECT_EQ(tree.held_blocks(), 10u);
  std::vector<BlockEvent> snap;
  tree.AppendHeldBlocks(&snap);
  EXPECT_EQ(snap.size(), 10u);
  for (const BlockEvent& e : snap) EXPECT_NE(e.key, header_key);
  // Evicting everything removes exactly what was added, the header silently.
  events.clear();
  EXPECT_EQ(tree.Evict(1000, &events), 44u);
  EXPECT_EQ(events.size(), 10u);
  for (const BlockEvent& e : events) {
    EXPECT_EQ(e.kind, BlockEvent::Kind::kRemoved);
    EXPECT_NE(e.key, header_key);
  }
  EXPECT_EQ(tree.held_blocks(), 0u);
  ASSERT_TRUE(tree.CheckInvariants().ok());
}

// ---------------------------------------------------------------------------------------------
// Property test: the tree against a naive token-level model.
//
// The model keeps every cached prefix (as a token vector) with its last-use tick. Eviction removes
// one token at a time: the unpinned, unprotected cached prefix with no cached extension and the
// smallest tick. The tree's contract (LRU by tick, token-granular tail trimming) must produce the
// very same set of cached prefixes. Ticks strictly increase per operation, which makes the
// least-recent leaf unique (the model asserts it). With `headers` the model reports blocks as a
// tree with RadixTreeOptions::namespace_headers must: a prefix that starts with a namespace token
// has its first block as a header, never held, and its other blocks indexed from the next one.
class NaiveCache {
 public:
  explicit NaiveCache(size_t capacity, bool headers = false)
      : capacity_(capacity), headers_(headers) {}

  size_t Longest(const Tokens& t) const {
    size_t n = 0;
    while (n < t.size() && prefixes_.count(Tokens(t.begin(), t.begin() + n + 1))) ++n;
    return n;
  }
  void Touch(const Tokens& t, size_t m, uint64_t tick) {
    for (size_t i = 1; i <= m; ++i) prefixes_[Tokens(t.begin(), t.begin() + i)] = tick;
  }
  size_t Match(const Tokens& t, uint64_t tick) {
    const size_t m = Longest(t);
    Touch(t, m, tick);
    return m;
  }
  // Returns the pinned length.
  size_t Pin(uint64_t id, const Tokens& t, uint64_t tick) {
    const size_t m = Match(t, tick);
    pins_[id] = Tokens(t.begin(), t.begin() + m);
    return m;
  }
  bool Unpin(uint64_t id) { return pins_.erase(id) == 1; }

  // Evicts up to n tokens; prefixes of `protect` (a path being extended) are kept.
  size_t Evict(size_t n, const Tokens& protect = {}) {
    size_t evicted = 0;
    while (evicted < n) {
      const Tokens* best = nullptr;
      uint64_t best_tick = 0;
      bool tie = false;
      for (auto it = prefixes_.begin(); it != prefixes_.end(); ++it) {
        auto next = std::next(it);
        const Tokens& p = it->first;
        const bool leaf = next == prefixes_.end() || next->first.size() <= p.size() ||
                          !std::equal(p.begin(), p.end(), next->first.begin());
        if (!leaf || Pinned(p) || IsPrefix(p, protect)) continue;
        if (best == nullptr || it->second < best_tick) {
          best = &p;
          best_tick = it->second;
          tie = false;
        } else if (it->second == best_tick) {
          tie = true;
        }
      }
      if (best == nullptr) break;
      EXPECT_FALSE(tie) << "model: two least-recent leaves";
      prefixes_.erase(*best);
      ++evicted;
    }
    return evicted;
  }

  InsertResult Insert(const Tokens& t, uint64_t tick, bool pin, uint64_t pin_id) {
    InsertResult r;
    r.matched_tokens = Match(t, tick);
    const size_t want = t.size() - r.matched_tokens;
    if (want > capacity_ - prefixes_.size()) {
      r.evicted_tokens = Evict(want - (capacity_ - prefixes_.size()),
                               Tokens(t.begin(), t.begin() + r.matched_tokens));
    }
    r.inserted_tokens = std::min(want, capacity_ - prefixes_.size());
    r.cached_tokens = r.matched_tokens + r.inserted_tokens;
    for (size_t i = r.matched_tokens + 1; i <= r.cached_tokens; ++i) {
      prefixes_[Tokens(t.begin(), t.begin() + i)] = tick;
    }
    if (pin) pins_[pin_id] = Tokens(t.begin(), t.begin() + r.cached_tokens);
    return r;
  }

  size_t size() const { return prefixes_.size(); }
  size_t PinnedTokens() const {
    size_t n = 0;
    for (const auto& [p, tick] : prefixes_) n += Pinned(p);
    return n;
  }
  const std::map<uint64_t, Tokens>& pins() const { return pins_; }
  // Held blocks recomputed from scratch: key -> block index.
  std::map<BlockKey, uint32_t> HeldBlocks(const BlockKeyer& keyer) {
    std::map<BlockKey, uint32_t> held;
    const size_t b = keyer.tokens_per_block();
    for (const auto& [p, tick] : prefixes_) {
      if (p.size() % b != 0) continue;
      const size_t header = headers_ && IsNamespaceToken(p.front()) ? 1 : 0;
      if (p.size() / b <= header) continue;
      auto [it, added] = key_memo_.try_emplace(p, 0);
      if (added) it->second = keyer.Keys(p).back();  // a prefix's key never changes
      held[it->second] = static_cast<uint32_t>(p.size() / b - 1 - header);
    }
    return held;
  }

 private:
  static bool IsPrefix(const Tokens& p, const Tokens& of) {
    return p.size() <= of.size() && std::equal(p.begin(), p.end(), of.begin());
  }
  bool Pinned(const Tokens& p) const {
    for (const auto& [id, s] : pins_) {
      if (IsPrefix(p, s)) return true;
    }
    return false;
  }

  size_t capacity_;
  bool headers_;
  std::map<Tokens, uint64_t> prefixes_;
  std::map<uint64_t, Tokens> pins_;
  std::map<Tokens, BlockKey> key_memo_;
};

void ExpectSameInsert(const InsertResult& got, const InsertResult& want) {
  EXPECT_EQ(got.matched_tokens, want.matched_tokens);
  EXPECT_EQ(got.inserted_tokens, want.inserted_tokens);
  EXPECT_EQ(got.cached_tokens, want.cached_tokens);
  EXPECT_EQ(got.evicted_tokens, want.evicted_tokens);
}

// What a run exercised, so a test can prove its random operations reach the interesting cases.
struct Coverage {
  size_t evicted_tokens = 0;
  size_t truncated_inserts = 0;
  size_t pins = 0;
  size_t refused_unpins = 0;
  size_t removed_events = 0;
  size_t namespaced_inserts = 0;
};

// With `namespaces`, the tree has namespace headers and half the fresh prompts begin with one of
// two namespace blocks.
void RunRandomOps(uint64_t seed, int ops, Coverage* cov, bool namespaces) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  Rng rng(seed);
  const size_t block = 1 + rng.Below(4);
  const size_t capacity = rng.Bernoulli(0.05) ? 0 : rng.Below(80) + 1;
  const uint64_t alphabet = 2 + rng.Below(3);
  RadixTree tree(Keyer(block), {.capacity_tokens = capacity, .namespace_headers = namespaces});
  NaiveCache model(capacity, namespaces);
  std::vector<Tokens> pool;
  std::vector<PinHandle> live;
  std::vector<PinHandle> dead;
  std::vector<BlockEvent> events;
  std::map<BlockKey, uint32_t> replayed;

  auto random_tokens = [&]() {
    Tokens t;
    if (!pool.empty() && rng.Bernoulli(0.7)) {
      const Tokens& base = pool[rng.Below(pool.size())];
      t.assign(base.begin(), base.begin() + static_cast<ptrdiff_t>(rng.Below(base.size() + 1)));
    }
    if (namespaces && t.empty() && rng.Bernoulli(0.5)) t = NamespaceBlock(1 + rng.Below(2), block);
    const size_t extra = rng.Below(25);
    for (size_t i = 0; i < extra; ++i) t.push_back(static_cast<TokenId>(rng.Below(alphabet)));
    return t;
  };

  for (int op = 0; op < ops; ++op) {
    const uint64_t tick = static_cast<uint64_t>(op) + 1;
    const Tokens t = random_tokens();
    const uint64_t kind = rng.Below(100);
    if (kind < 40) {
      const bool pin = rng.Bernoulli(0.3);
      const InsertResult got = tree.Insert(t, tick, &events, pin);
      const InsertResult want = model.Insert(t, tick, pin, got.pin.id);
      ExpectSameInsert(got, want);
      cov->evicted_tokens += got.evicted_tokens;
      cov->truncated_inserts += got.cached_tokens < t.size();
      cov->pins += pin;
      cov->namespaced_inserts += !t.empty() && IsNamespaceToken(t.front());
      EXPECT_EQ(got.pin.valid(), pin);
      if (pin) live.push_back(got.pin);
      pool.push_back(t);
      if (pool.size() > 12) pool.erase(pool.begin());
    } else if (kind < 55) {
      EXPECT_EQ(tree.Match(t, tick), model.Match(t, tick));
    } else if (kind < 65) {
      EXPECT_EQ(tree.Peek(t), model.Longest(t));
    } else if (kind < 75) {
      const PinResult got = tree.Pin(t, tick);
      EXPECT_EQ(got.tokens, model.Pin(got.handle.id, t, tick));
      live.push_back(got.handle);
      ++cov->pins;
    } else if (kind < 88) {
      if (!live.empty() && rng.Bernoulli(0.85)) {
        const size_t i = rng.Below(live.size());
        EXPECT_TRUE(tree.Unpin(live[i]).ok());
        EXPECT_TRUE(model.Unpin(live[i].id));
        dead.push_back(live[i]);
        live.erase(live.begin() + static_cast<ptrdiff_t>(i));
      } else {
        // Stale or never-issued handles are refused and change nothing.
        const PinHandle bad = !dead.empty() && rng.Bernoulli(0.5) ? dead[rng.Below(dead.size())]
                                                                  : PinHandle{1000000 + tick};
        EXPECT_EQ(tree.Unpin(bad).code(), StatusCode::kNotFound);
        ++cov->refused_unpins;
      }
    } else {
      const size_t n = rng.Below(30);
      const size_t evicted = tree.Evict(n, &events);
      EXPECT_EQ(evicted, model.Evict(n));
      cov->evicted_tokens += evicted;
    }

    // Invariants after every step.
    const Status inv = tree.CheckInvariants();
    ASSERT_TRUE(inv.ok()) << "op " << op << ": " << inv.ToString();
    ASSERT_EQ(tree.size_tokens(), model.size()) << "op " << op;
    ASSERT_LE(tree.size_tokens(), capacity);
    EXPECT_EQ(tree.pinned_tokens(), model.PinnedTokens());
    EXPECT_EQ(tree.pin_count(), model.pins().size());
    for (const auto& [id, p] : model.pins()) EXPECT_EQ(tree.Peek(p), p.size()) << "pin evicted";
    EXPECT_EQ(tree.Peek(t), model.Longest(t));

    for (const BlockEvent& e : events) {
      if (e.kind == BlockEvent::Kind::kAdded) {
        EXPECT_TRUE(replayed.emplace(e.key, e.block_index).second) << "added twice";
      } else {
        ++cov->removed_events;
        auto it = replayed.find(e.key);
        ASSERT_NE(it, replayed.end()) << "removed a block that was not held";
        EXPECT_EQ(it->second, e.block_index);
        replayed.erase(it);
      }
    }
    events.clear();
    const auto held = model.HeldBlocks(tree.keyer());
    ASSERT_EQ(replayed, held) << "op " << op;
    std::vector<BlockEvent> snap;
    tree.AppendHeldBlocks(&snap);
    std::map<BlockKey, uint32_t> from_snap;
    for (const auto& e : snap) from_snap[e.key] = e.block_index;
    EXPECT_EQ(from_snap, held);
    EXPECT_EQ(tree.held_blocks(), held.size());
  }
}

// 200 seeds x 200 operations, in four shards so ctest can spread them.
void RunSeeds(uint64_t first, uint64_t last, bool namespaces = false) {
  Coverage cov;
  for (uint64_t seed = first; seed <= last; ++seed) {
    RunRandomOps(seed, 200, &cov, namespaces);
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(cov.evicted_tokens, 1000u);
  EXPECT_GT(cov.truncated_inserts, 50u);
  EXPECT_GT(cov.pins, 1000u);
  EXPECT_GT(cov.refused_unpins, 100u);
  EXPECT_GT(cov.removed_events, 500u);
  if (namespaces) {
    EXPECT_GT(cov.namespaced_inserts, 1000u);
  }
}
TEST(RadixTreePropertyTest, MatchesNaiveModelSeeds1To50) { RunSeeds(1, 50); }
TEST(RadixTreePropertyTest, MatchesNaiveModelSeeds51To100) { RunSeeds(51, 100); }
TEST(RadixTreePropertyTest, MatchesNaiveModelSeeds101To150) { RunSeeds(101, 150); }
TEST(RadixTreePropertyTest, MatchesNaiveModelSeeds151To200) { RunSeeds(151, 200); }
TEST(RadixTreePropertyTest, NamespaceHeadersMatchNaiveModelSeeds1To50) { RunSeeds(1, 50, true); }

}  // namespace
}  // namespace hearsay::prefix
