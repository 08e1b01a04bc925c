#include "hearsay/engine/slot_cache.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "hearsay/engine/sim_engine_test_util.h"
#include "hearsay/env/rng.h"

namespace hearsay::engine {
namespace {

using prefix::BlockEvent;

class SlotCacheTest : public ::testing::Test {
 protected:
  void Make(uint32_t slots, uint64_t capacity) {
    cache_ = std::make_unique<SlotCache>(Keyer(), SlotCacheOptions{slots, capacity});
  }
  // Runs one request for `prompt` to its end (prompt and one output token kept), as the engine
  // does; returns its cache hit.
  size_t Serve(const std::vector<TokenId>& prompt) {
    const SlotCache::Take t = cache_->Acquire(prompt, &events_);
    std::vector<TokenId> seq = prompt;
    seq.push_back(7);
    cache_->Extend(t.slot, seq, &events_);
    cache_->Release(t.slot, ++tick_);
    last_slot_ = t.slot;
    EXPECT_TRUE(cache_->CheckInvariants().ok()) << cache_->CheckInvariants().ToString();
    return t.cached;
  }
  // The held set that replaying every event so far gives.
  std::set<prefix::BlockKey> Replayed() const {
    std::set<prefix::BlockKey> held;
    for (const BlockEvent& e : events_) {
      if (e.kind == BlockEvent::Kind::kAdded) {
        EXPECT_TRUE(held.insert(e.key).second);
      } else {
        EXPECT_EQ(held.erase(e.key), 1u);
      }
    }
    return held;
  }
  std::set<prefix::BlockKey> Snapshot() const {
    std::vector<BlockEvent> out;
    cache_->AppendHeldBlocks(&out);
    std::set<prefix::BlockKey> held;
    for (const BlockEvent& e : out) held.insert(e.key);
    return held;
  }

  std::unique_ptr<SlotCache> cache_;
  std::vector<BlockEvent> events_;
  uint64_t tick_ = 0;
  uint32_t last_slot_ = 0;
};

TEST_F(SlotCacheTest, APromptReturnsToTheSlotThatHoldsItsPrefix) {
  Make(2, 4096);
  const auto a = Tokens(1, 300);
  const auto b = Tokens(2, 300);
  EXPECT_EQ(Serve(a), 0u);
  const uint32_t slot_a = last_slot_;
  EXPECT_EQ(Serve(b), 0u);
  EXPECT_NE(last_slot_, slot_a);  // the least recent slot: the one never used
  // A question after a's prefix finds a's slot by similarity.
  EXPECT_EQ(Serve(Concat(Tokens(1, 250), Tokens(3, 40))), 250u);
  EXPECT_EQ(last_slot_, slot_a);
  // The same prompt again: all but its last token.
  const auto again = Concat(Tokens(1, 250), Tokens(3, 40));
  EXPECT_EQ(Serve(again), again.size() - 1);
}

TEST_F(SlotCacheTest, ASlotTakenForAnotherPromptSavesItsSequenceAndLoadsTheBestCachedOne) {
  Make(1, 4096);
  const auto a = Tokens(1, 300);
  const auto b = Tokens(2, 300);
  EXPECT_EQ(Serve(a), 0u);
  // b shares nothing with the slot: a is saved in the host cache, the slot starts over.
  EXPECT_EQ(Serve(b), 0u);
  EXPECT_EQ(cache_->cached_sequences(), 1u);
  EXPECT_EQ(cache_->cached_tokens(), 301u);
  // A prompt after a's first 280 tokens: b is saved, a is loaded back into the slot.
  EXPECT_EQ(Serve(Concat(Tokens(1, 280), Tokens(4, 20))), 280u);
  EXPECT_EQ(cache_->cached_sequences(), 1u);
  EXPECT_EQ(cache_->Peek(b), 300u);
  EXPECT_EQ(Replayed(), Snapshot());
}

TEST_F(SlotCacheTest, AQuestionAfterTheSlotsPrefixOverwritesTheLastQuestionUnsaved) {
  Make(1, 4096);
  const auto prefix = Tokens(1, 400);
  const auto q1 = Concat(prefix, Tokens(2, 20));
  const auto q2 = Concat(prefix, Tokens(3, 20));
  EXPECT_EQ(Serve(q1), 0u);
  // The slot keeps over half of its sequence: nothing is saved, q1's question is gone.
  EXPECT_EQ(Serve(q2), 400u);
  EXPECT_EQ(cache_->cached_sequences(), 0u);
  EXPECT_EQ(cache_->Peek(q1), 400u);
  EXPECT_EQ(Replayed(), Snapshot());
}

TEST_F(SlotCacheTest, IdleSlotsAreSavedWheneverARequestStarts) {
  Make(2, 4096);
  const auto prefix = Tokens(1, 400);
  const auto q1 = Concat(prefix, Tokens(2, 20));
  Serve(q1);
  EXPECT_EQ(cache_->cached_sequences(), 0u);
  // Another request starts in the other slot: q1's idle slot is copied into the host cache...
  Serve(Tokens(5, 300));
  EXPECT_EQ(cache_->cached_sequences(), 1u);
  EXPECT_EQ(cache_->cached_tokens(), 421u);
  // ... so the next question after the prefix overwrites q1 in its slot, but q1 stays cached.
  EXPECT_EQ(Serve(Concat(prefix, Tokens(3, 20))), 400u);
  EXPECT_EQ(cache_->Peek(q1), 420u);
  EXPECT_EQ(Replayed(), Snapshot());
}

TEST_F(SlotCacheTest, WithoutIdleSavesTheSlotsAddRoomOfTheirOwn) {
  cache_ = std::make_unique<SlotCache>(
      Keyer(), SlotCacheOptions{.slots = 2, .capacity_tokens = 4096, .save_idle_slots = false});
  Serve(Concat(Tokens(1, 400), Tokens(2, 20)));
  Serve(Tokens(5, 300));
  EXPECT_EQ(cache_->cached_sequences(), 0u);
  EXPECT_EQ(cache_->slot_tokens(), 421u + 301u);
}

TEST_F(SlotCacheTest, ACachedSequenceThatWouldKeepUnderAQuarterOfItselfIsNotLoaded) {
  Make(1, 4096);
  const auto long_one = Tokens(1, 1000);
  Serve(long_one);
  Serve(Tokens(2, 300));  // the long sequence saved
  // 200 shared tokens keep a fifth of it: llama-server does not trash a large prompt for that.
  EXPECT_EQ(Serve(Concat(Tokens(1, 200), Tokens(3, 50))), 0u);
  EXPECT_EQ(cache_->Peek(long_one), 1000u);
  // A slot similar enough is taken without a look at the host cache, which holds 300 tokens of
  // this prompt: the slot's 200 are the hit.
  EXPECT_EQ(Serve(Concat(Tokens(1, 300), Tokens(4, 50))), 200u);
}

TEST_F(SlotCacheTest, TheOldestSavedSequenceLeavesFirst) {
  Make(1, 700);
  const auto a = Tokens(1, 300);
  const auto b = Tokens(2, 300);
  const auto c = Tokens(3, 300);
  Serve(a);
  Serve(b);  // a saved (301 tokens)
  Serve(c);  // b saved: 602 tokens cached
  EXPECT_EQ(cache_->cached_sequences(), 2u);
  Serve(Tokens(4, 300));  // c saved: a, saved first, leaves
  EXPECT_EQ(cache_->cached_sequences(), 2u);
  EXPECT_EQ(cache_->Peek(a), 0u);
  EXPECT_EQ(cache_->Peek(b), 300u);
  EXPECT_EQ(cache_->Peek(c), 300u);
  EXPECT_EQ(Replayed(), Snapshot());
}

TEST_F(SlotCacheTest, ASequenceContainedInACachedOneIsNotSavedTwice) {
  Make(2, 4096);
  const auto a = Tokens(1, 300);
  Serve(a);
  // A prompt that keeps under half of a's slot: a is saved, the slot is cut to 100 tokens.
  EXPECT_EQ(Serve(Concat(Tokens(1, 100), Tokens(2, 200))), 100u);
  EXPECT_EQ(cache_->cached_sequences(), 1u);
  EXPECT_EQ(cache_->cached_tokens(), 301u);
  EXPECT_EQ(cache_->Peek(a), 300u);
  EXPECT_EQ(Replayed(), Snapshot());
}

TEST_F(SlotCacheTest, ANamespaceBlockIsHeldButNotReported) {
  Make(1, 4096);
  const auto ns = prefix::NamespaceBlock(42, Keyer().tokens_per_block());
  const auto prompt = Concat(ns, Tokens(1, 64));
  Serve(prompt);
  std::vector<BlockEvent> out;
  cache_->AppendHeldBlocks(&out);
  ASSERT_EQ(out.size(), 65u / 16);  // 64 prompt tokens and the output token: 4 full blocks
  EXPECT_EQ(out.front().block_index, 0u);
  std::vector<prefix::BlockKey> keys = Keyer().Keys(Concat(prompt, {7}));
  EXPECT_EQ(out.front().key, keys[1]);
  EXPECT_EQ(Replayed(), Snapshot());
}

TEST_F(SlotCacheTest, RandomRequestsKeepTheEventsAndCountsExact) {
  Rng rng(5);
  Make(3, 1500);
  std::vector<std::pair<uint32_t, std::vector<TokenId>>> running;  // slot, sequence
  for (int step = 0; step < 2000; ++step) {
    if (cache_->idle_slots() > 0 && (running.empty() || rng.Below(2) == 0)) {
      // A prompt after one of 6 prefixes, or none; sometimes longer than the host cache.
      std::vector<TokenId> prompt =
          Tokens(static_cast<uint32_t>(rng.Below(6)), 16 * rng.Below(40) + rng.Below(16));
      prompt = Concat(prompt, Tokens(100 + step, 1 + rng.Below(rng.Below(4) == 0 ? 1600 : 60)));
      const SlotCache::Take t = cache_->Acquire(prompt, &events_);
      ASSERT_LT(t.cached, prompt.size());
      ASSERT_GE(cache_->Peek(prompt), t.cached);
      running.push_back({t.slot, prompt});
    } else {
      const size_t i = rng.Below(running.size());
      auto [slot, seq] = running[i];
      seq.push_back(static_cast<TokenId>(step));
      cache_->Extend(slot, seq, &events_);
      cache_->Release(slot, ++tick_);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    }
    ASSERT_TRUE(cache_->CheckInvariants().ok()) << cache_->CheckInvariants().ToString();
  }
  EXPECT_EQ(Replayed(), Snapshot());
}

}  // namespace
}  // namespace hearsay::engine
