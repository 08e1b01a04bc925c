// CacheTracker tests: predictions with leases, evidence that confirms and that cuts stale
// entries, reconciliation, capacity, and events that replay to the held set.
#include "hearsay/upstream/cache_tracker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <numeric>
#include <set>

namespace hearsay::upstream {
namespace {

using namespace std::chrono_literals;
using prefix::BlockEvent;
using prefix::TokenId;

prefix::BlockKeyer Keyer() {
  return prefix::BlockKeyer::Create("upstream-test-secret-0123456789", "m", "t",
                                    {.tokens_per_block = 4, .bytes_per_block = 64})
      .value();
}

// A prompt: `shared` tokens of a common prefix (ids from 1), then `own` tokens unique to `tag`.
std::vector<TokenId> Prompt(size_t shared, size_t own, TokenId tag) {
  std::vector<TokenId> p(shared);
  std::iota(p.begin(), p.end(), 1);
  for (size_t i = 0; i < own; ++i) p.push_back(1000 * tag + static_cast<TokenId>(i));
  return p;
}

TimePoint At(Duration d) { return TimePoint(d); }

// Replays events into a set and checks it equals the snapshot; a tracker of shared blocks uses
// exactly the held blocks.
void ExpectEventsMatchSnapshot(CacheTracker& t, std::set<prefix::BlockKey>& held,
                               PromptStorage storage = PromptStorage::kSharedBlocks) {
  std::vector<BlockEvent> ev;
  t.DrainEvents(ev);
  for (const BlockEvent& e : ev) {
    if (e.kind == BlockEvent::Kind::kAdded) {
      EXPECT_TRUE(held.insert(e.key).second) << "added twice";
    } else {
      EXPECT_EQ(held.erase(e.key), 1u) << "removed unheld";
    }
  }
  std::vector<BlockEvent> snap;
  t.AppendSnapshot(snap);
  std::set<prefix::BlockKey> snap_keys;
  for (const BlockEvent& e : snap) snap_keys.insert(e.key);
  EXPECT_EQ(held, snap_keys);
  if (storage == PromptStorage::kSharedBlocks) {
    EXPECT_EQ(t.used_tokens(), held.size() * t.block_tokens());
  }
}

TEST(CacheTrackerTest, ANamespacedRequestIsKeyedAsTheNodeKeysIt) {
  // The node routes and gossips a namespaced request (a model, a tenant) with keys chained from
  // the namespace's header block, one per prompt block; the tracker must hold and report exactly
  // those keys, the prompt's first block at index 0 (never the header's key).
  CacheTracker t(Keyer(), {.capacity_tokens = 1000, .prediction_lease = 5s});
  const uint64_t ns = 0x5eed;
  auto p = Prompt(16, 0, 1);
  EXPECT_EQ(t.Predict(1, p, "", At(0s), ns), 0u);
  EXPECT_EQ(t.ApplyEvidence(1, 0, 0).overestimated, false);
  EXPECT_EQ(t.CachedPrefixTokens(p, ns), 16u);
  EXPECT_EQ(t.CachedPrefixTokens(p), 0u);          // the shared namespace holds nothing
  EXPECT_EQ(t.CachedPrefixTokens(p, ns + 1), 0u);  // nor does another
  std::vector<prefix::BlockKey> node_keys;
  prefix::AppendNamespacedKeys(Keyer(), ns, p, &node_keys);
  std::vector<BlockEvent> ev;
  t.DrainEvents(ev);
  std::set<prefix::BlockKey> held;
  for (const BlockEvent& e : ev) {
    held.insert(e.key);
    const auto at = std::find(node_keys.begin(), node_keys.end(), e.key);
    ASSERT_NE(at, node_keys.end());
    EXPECT_EQ(e.block_index, uint32_t(at - node_keys.begin()));
  }
  EXPECT_EQ(held, std::set<prefix::BlockKey>(node_keys.begin(), node_keys.end()));
  // Evidence counts prompt tokens: a repeat reported 8 cached keeps 8 (2 blocks) of the 16.
  EXPECT_EQ(t.Predict(2, p, "", At(1s), ns), 16u);
  EXPECT_TRUE(t.ApplyEvidence(2, 8, 0).overestimated);
  EXPECT_EQ(t.CachedPrefixTokens(p, ns), 16u);  // the whole prompt was computed again
  auto q = Prompt(8, 0, 1);
  EXPECT_EQ(t.CachedPrefixTokens(q, ns), 8u);
}

TEST(CacheTrackerTest, PredictionCountsUntilItsLeaseEnds) {
  CacheTracker t(Keyer(), {.capacity_tokens = 1000, .prediction_lease = 5s});
  auto p = Prompt(16, 0, 1);
  EXPECT_EQ(t.Predict(1, p, "", At(0s)), 0u);
  EXPECT_EQ(t.CachedPrefixTokens(p), 16u);
  t.Abandon(1);  // failed without evidence: the lease still runs
  t.ExpireLeases(At(4s));
  EXPECT_EQ(t.CachedPrefixTokens(p), 16u);
  t.ExpireLeases(At(5s));
  EXPECT_EQ(t.CachedPrefixTokens(p), 0u);
  EXPECT_EQ(t.entries(), 0u);
}

TEST(CacheTrackerTest, InflightPredictionDoesNotExpire) {
  CacheTracker t(Keyer(), {.capacity_tokens = 1000, .prediction_lease = 1s});
  auto p = Prompt(8, 0, 1);
  t.Predict(1, p, "", At(0s));
  t.ExpireLeases(At(10s));
  EXPECT_EQ(t.CachedPrefixTokens(p), 8u);
  t.ApplyEvidence(1, 0, 0);
  t.ExpireLeases(At(20s));  // confirmed: leases no longer apply
  EXPECT_EQ(t.CachedPrefixTokens(p), 8u);
}

TEST(CacheTrackerTest, EstimateIsWhatWasHeldBeforeTheSend) {
  CacheTracker t(Keyer(), {.capacity_tokens = 1000});
  auto a = Prompt(12, 4, 1);
  auto b = Prompt(12, 4, 2);
  EXPECT_EQ(t.Predict(1, a, "", At(0s)), 0u);
  EXPECT_FALSE(t.ApplyEvidence(1, 0, 0).overestimated);
  EXPECT_EQ(t.Predict(2, b, "", At(1s)), 12u);  // shares 3 blocks with a
  EvidenceOutcome o = t.ApplyEvidence(2, 12, 0);
  EXPECT_FALSE(o.overestimated);
  EXPECT_FALSE(o.underestimated);
}

TEST(CacheTrackerTest, ReportedMissCutsEveryStaleChainAtTheMissingBlock) {
  CacheTracker t(Keyer(), {.capacity_tokens = 1000});
  std::set<prefix::BlockKey> held;
  auto a = Prompt(12, 8, 1);
  auto b = Prompt(12, 8, 2);
  auto c = Prompt(12, 8, 3);
  t.Predict(1, a, "", At(0s));
  t.ApplyEvidence(1, 0, 0);
  t.Predict(2, b, "", At(0s));
  t.ApplyEvidence(2, 12, 0);
  ExpectEventsMatchSnapshot(t, held);
  EXPECT_EQ(t.CachedPrefixTokens(a), 20u);
  // The engine evicted everything past block 1 of the shared prefix: c hit only 4 tokens.
  EXPECT_EQ(t.Predict(3, c, "", At(1s)), 12u);
  EvidenceOutcome o = t.ApplyEvidence(3, 4, 0);
  EXPECT_TRUE(o.overestimated);
  EXPECT_EQ(o.stale_entries_cut, 3u);  // a, b, and c's own prediction
  // a's and b's own blocks are gone (they were cut at block 1); the shared prefix is held again
  // only because c has just been computed whole.
  EXPECT_EQ(t.CachedPrefixTokens(a), 12u);
  EXPECT_EQ(t.CachedPrefixTokens(b), 12u);
  EXPECT_EQ(t.CachedPrefixTokens(c), 20u);
  EXPECT_EQ(t.used_tokens(), 20u);  // exactly c's five blocks
  ExpectEventsMatchSnapshot(t, held);
}

TEST(CacheTrackerTest, ToleranceAbsorbsTheRecomputedLastToken) {
  CacheTracker t(Keyer(), {.capacity_tokens = 1000});
  auto p = Prompt(16, 0, 1);
  t.Predict(1, p, "", At(0s));
  t.ApplyEvidence(1, 0, 0);
  t.Predict(2, p, "", At(0s));
  // The engine reports 15 of 16: it always recomputes the last token.
  EXPECT_FALSE(t.ApplyEvidence(2, 15, 1).overestimated);
  EXPECT_EQ(t.CachedPrefixTokens(p), 16u);
}

TEST(CacheTrackerTest, CapacityEvictsLeastRecentlyUsedPrompts) {
  CacheTracker t(Keyer(), {.capacity_tokens = 16});
  std::set<prefix::BlockKey> held;
  auto a = Prompt(0, 8, 1);
  auto b = Prompt(0, 8, 2);
  auto c = Prompt(0, 8, 3);
  for (auto [id, p] : {std::pair{1, &a}, {2, &b}}) {
    t.Predict(id, *p, "", At(0s));
    t.ApplyEvidence(id, 0, 0);
  }
  t.Predict(10, a, "", At(1s));  // touch a
  t.ApplyEvidence(10, 8, 0);
  t.Predict(3, c, "", At(2s));
  t.ApplyEvidence(3, 0, 0);
  EXPECT_EQ(t.CachedPrefixTokens(b), 0u);  // b was least recently used
  EXPECT_EQ(t.CachedPrefixTokens(a), 8u);
  EXPECT_EQ(t.CachedPrefixTokens(c), 8u);
  EXPECT_LE(t.used_tokens(), 16u);
  ExpectEventsMatchSnapshot(t, held);
}

// Sends Prompt(shared, own, tag) for each tag, one after another, each answered with the shared
// prefix cached (but the first prompt of an empty tracker).
void SendFamily(CacheTracker& t, size_t shared, size_t own, std::initializer_list<TokenId> tags) {
  for (TokenId tag : tags) {
    const size_t reported = t.entries() == 0 ? 0 : shared;
    t.Predict(1, Prompt(shared, own, tag), "", At(0s));
    t.ApplyEvidence(1, reported, 0);
  }
}

// llama.cpp keeps each prompt's whole state, so three prompts sharing a prefix fill a cache that
// would hold them all as shared blocks: the oldest goes, and only its own tail is lost.
TEST(CacheTrackerTest, WholePromptsCountEachPromptInFull) {
  for (PromptStorage storage : {PromptStorage::kSharedBlocks, PromptStorage::kWholePrompts}) {
    CacheTracker t(Keyer(), {.capacity_tokens = 24, .storage = storage});
    std::set<prefix::BlockKey> held;
    SendFamily(t, 8, 4, {1, 2, 3});
    const auto a = Prompt(8, 4, 1);
    const auto b = Prompt(8, 4, 2);
    const auto c = Prompt(8, 4, 3);
    const bool whole = storage == PromptStorage::kWholePrompts;
    EXPECT_EQ(t.CachedPrefixTokens(a), whole ? 8u : 12u);
    EXPECT_EQ(t.CachedPrefixTokens(b), 12u);
    EXPECT_EQ(t.CachedPrefixTokens(c), 12u);
    EXPECT_EQ(t.used_tokens(), whole ? 24u : 20u);
    ExpectEventsMatchSnapshot(t, held, storage);
  }
}

// llama.cpp's slots hold the latest prompts beside its prompt cache: with one slot, three
// prompts of 12 tokens fit in 24.
TEST(CacheTrackerTest, WholePromptsInSlotsUseNoCapacity) {
  CacheTracker t(
      Keyer(), {.capacity_tokens = 24, .storage = PromptStorage::kWholePrompts, .slot_prompts = 1});
  std::set<prefix::BlockKey> held;
  SendFamily(t, 4, 8, {1, 2, 3});
  const auto a = Prompt(4, 8, 1);
  const auto b = Prompt(4, 8, 2);
  const auto c = Prompt(4, 8, 3);
  EXPECT_EQ(t.CachedPrefixTokens(a), 12u);
  EXPECT_EQ(t.used_tokens(), 24u);
  t.SetSlotPrompts(0);  // the next insertion evicts down to the capacity again
  SendFamily(t, 4, 8, {4});
  EXPECT_EQ(t.CachedPrefixTokens(a), 4u);
  EXPECT_EQ(t.CachedPrefixTokens(b), 4u);
  EXPECT_EQ(t.CachedPrefixTokens(c), 12u);
  EXPECT_EQ(t.used_tokens(), 24u);
  ExpectEventsMatchSnapshot(t, held, PromptStorage::kWholePrompts);
}

// A prompt that the next one extends (a conversation's next turn) is dropped: llama.cpp keeps the
// longer one only, so the shorter costs no capacity twice.
TEST(CacheTrackerTest, WholePromptsDropAPromptANewerOneExtends) {
  CacheTracker t(Keyer(), {.capacity_tokens = 1000, .storage = PromptStorage::kWholePrompts});
  std::set<prefix::BlockKey> held;
  const auto turn1 = Prompt(8, 0, 1);
  const auto turn2 = Prompt(16, 0, 1);
  t.Predict(1, turn1, "", At(0s));
  t.ApplyEvidence(1, 0, 0);
  t.Predict(2, turn2, "", At(1s));
  EXPECT_EQ(t.entries(), 1u);
  EXPECT_EQ(t.used_tokens(), 16u);
  EXPECT_EQ(t.CachedPrefixTokens(turn1), 8u);
  ExpectEventsMatchSnapshot(t, held, PromptStorage::kWholePrompts);
}

TEST(CacheTrackerTest, ReconcileConfirmsAndAuthoritativeListingPrunes) {
  CacheTracker t(Keyer(), {.capacity_tokens = 1000, .prediction_lease = 1s});
  auto a = Prompt(0, 8, 1);
  auto b = Prompt(0, 8, 2);
  t.Predict(1, a, "alpha", At(0s));
  t.ApplyEvidence(1, 0, 0);
  t.Predict(2, b, "beta", At(0s));
  t.ApplyEvidence(2, 0, 0);
  auto only_alpha = [](const std::string& text) { return text == "alpha"; };
  ReconcileOutcome o = t.Reconcile(only_alpha, /*authoritative=*/false, At(2s));
  EXPECT_EQ(o.confirmed, 1u);
  EXPECT_EQ(o.removed, 0u);
  EXPECT_EQ(t.CachedPrefixTokens(b), 8u);
  o = t.Reconcile(only_alpha, /*authoritative=*/true, At(2s));
  EXPECT_EQ(o.removed, 1u);
  EXPECT_EQ(t.CachedPrefixTokens(b), 0u);
  EXPECT_EQ(t.CachedPrefixTokens(a), 8u);
}

TEST(CacheTrackerTest, FreshPredictionsAndInflightRequestsSurviveReconcile) {
  CacheTracker t(Keyer(), {.capacity_tokens = 1000, .prediction_lease = 5s});
  auto a = Prompt(0, 8, 1);
  t.Predict(1, a, "alpha", At(0s));
  auto none = [](const std::string&) { return false; };
  EXPECT_EQ(t.Reconcile(none, true, At(1s)).removed, 0u);
  t.Abandon(1);
  EXPECT_EQ(t.Reconcile(none, true, At(1s)).removed, 0u);  // lease still running
  EXPECT_EQ(t.Reconcile(none, true, At(6s)).removed, 1u);
}

TEST(CacheTrackerTest, ClearRemovesEverythingWithEvents) {
  CacheTracker t(Keyer(), {.capacity_tokens = 1000});
  std::set<prefix::BlockKey> held;
  t.Predict(1, Prompt(8, 8, 1), "", At(0s));
  t.Predict(2, Prompt(8, 8, 2), "", At(0s));
  ExpectEventsMatchSnapshot(t, held);
  t.Clear();
  ExpectEventsMatchSnapshot(t, held);
  EXPECT_TRUE(held.empty());
  // Evidence for a request pending across the clear still works.
  t.ApplyEvidence(1, 0, 0);
  EXPECT_EQ(t.CachedPrefixTokens(Prompt(8, 8, 1)), 16u);
}

TEST(CacheTrackerTest, RandomOperationsKeepEventsConsistent) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const PromptStorage storage =
        seed % 2 == 0 ? PromptStorage::kSharedBlocks : PromptStorage::kWholePrompts;
    CacheTracker t(Keyer(), {.capacity_tokens = 64,
                             .prediction_lease = 2s,
                             .storage = storage,
                             .slot_prompts = uint32_t(seed % 4)});
    std::set<prefix::BlockKey> held;
    uint64_t x = seed * 0x9E3779B97F4A7C15ull;
    auto next = [&x] {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      return x;
    };
    std::vector<uint64_t> pending;
    for (int step = 0; step < 300; ++step) {
      const TimePoint now = At(std::chrono::milliseconds(step * 100));
      switch (next() % 6) {
        case 0:
        case 1: {
          const uint64_t id = 1000 + step;
          t.Predict(id, Prompt(next() % 24, next() % 12, next() % 6), "", now);
          pending.push_back(id);
          break;
        }
        case 2:
          if (!pending.empty()) {
            const size_t i = next() % pending.size();
            t.ApplyEvidence(pending[i], next() % 30, next() % 3);
            pending.erase(pending.begin() + i);
          }
          break;
        case 3:
          if (!pending.empty()) {
            t.Abandon(pending.back());
            pending.pop_back();
          }
          break;
        case 4:
          t.ExpireLeases(now);
          break;
        case 5: {
          std::vector<BlockEvent> snap;
          t.AppendSnapshot(snap);
          if (!snap.empty()) t.ForgetBlock(snap[next() % snap.size()].key);
          break;
        }
      }
      ExpectEventsMatchSnapshot(t, held, storage);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

// A big tracker (thousands of prompts sharing prefixes in a tree) loses many blocks one by one;
// after each, what it holds and each cut count agree with a naive model: a set of chains, each
// cut before the forgotten block.
TEST(CacheTrackerTest, ForgettingManyBlocksOfABigTrackerMatchesANaiveModel) {
  const prefix::BlockKeyer keyer = Keyer();
  CacheTracker t(Keyer(), {.capacity_tokens = uint64_t{1} << 30, .prediction_lease = 5s});
  std::set<std::vector<prefix::BlockKey>> chains;  // the model
  std::vector<std::vector<TokenId>> prompts;
  uint64_t x = 0x2545F4914F6CDD1Dull;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  // Prompts of 1-3 levels of 8 shared segments each (2 blocks of 4 tokens), then an own tail.
  for (uint64_t id = 1; id <= 3000; ++id) {
    std::vector<TokenId> p;
    const uint64_t levels = 1 + next() % 3;
    TokenId path = 0;
    for (uint64_t l = 0; l < levels; ++l) {
      path = path * 8 + 1 + static_cast<TokenId>(next() % 8);
      for (TokenId i = 0; i < 8; ++i) p.push_back(path * 100 + i);
    }
    for (uint64_t i = 0, own = next() % 10; i < own; ++i) {
      p.push_back(1000000 + static_cast<TokenId>(id * 16 + i));
    }
    t.Predict(id, p, "", At(0s));
    t.ApplyEvidence(id, p.size(), 0);
    std::vector<prefix::BlockKey> keys = keyer.Keys(p);
    if (!keys.empty()) chains.insert(std::move(keys));
    prompts.push_back(std::move(p));
  }
  ASSERT_EQ(t.entries(), chains.size());
  std::set<prefix::BlockKey> held;
  ExpectEventsMatchSnapshot(t, held);
  const size_t held_at_start = held.size();

  for (int round = 0; round < 400 && !held.empty(); ++round) {
    // Any held block, deep or shallow.
    auto pick = held.begin();
    std::advance(pick, next() % held.size());
    const prefix::BlockKey key = *pick;
    std::set<std::vector<prefix::BlockKey>> cut_chains;
    size_t through = 0;
    for (const auto& c : chains) {
      const auto at = std::find(c.begin(), c.end(), key);
      if (at == c.end()) {
        cut_chains.insert(c);
        continue;
      }
      ++through;
      if (at != c.begin()) cut_chains.insert(std::vector<prefix::BlockKey>(c.begin(), at));
    }
    chains = std::move(cut_chains);
    ASSERT_EQ(t.ForgetBlock(key), through) << "round " << round;
    ASSERT_EQ(t.ForgetBlock(key), 0u) << "forgotten twice";
    ASSERT_EQ(t.entries(), chains.size()) << "round " << round;
    ExpectEventsMatchSnapshot(t, held);
    std::set<prefix::BlockKey> model_held;
    for (const auto& c : chains) model_held.insert(c.begin(), c.end());
    ASSERT_EQ(held, model_held) << "round " << round;
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_LT(held.size(), held_at_start / 2) << "the test should forget most of the tracker";
  // Lookups agree with the model too.
  std::set<prefix::BlockKey> model_held;
  for (const auto& c : chains) model_held.insert(c.begin(), c.end());
  for (const auto& p : prompts) {
    const std::vector<prefix::BlockKey> keys = keyer.Keys(p);
    size_t n = 0;
    while (n < keys.size() && model_held.contains(keys[n])) ++n;
    ASSERT_EQ(t.CachedPrefixTokens(p), n * t.block_tokens());
  }
}

}  // namespace
}  // namespace hearsay::upstream
