#include "hearsay/upstream/kv_event_view.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "hearsay/upstream/kv_events_test_util.h"

namespace hearsay::upstream::kv_event_view_test {
namespace {

using prefix::BlockEvent;
using prefix::BlockKey;
using testing::EncodeBatch;
using testing::TokenRun;
using testing::WireCleared;
using testing::WireEvent;
using testing::WireForm;
using testing::WireRemoved;
using testing::WireStored;

constexpr uint32_t kBlock = 4;

prefix::BlockKeyer Keyer(size_t block = kBlock) {
  return *prefix::BlockKeyer::Create("0123456789abcdef-secret", "m", "",
                                     {.tokens_per_block = block});
}

class KvEventViewTest : public ::testing::Test {
 protected:
  // Decodes the events as the subscriber would and applies them.
  void Apply(const std::vector<WireEvent>& events) {
    Result<KvEventBatch> b =
        DecodeKvEventBatch(EncodeKvSeq(seq_++), EncodeBatch(WireForm::kArray, 1.0, events));
    ASSERT_TRUE(b.ok()) << b.status().message();
    removed_.clear();
    cleared_ = false;
    view_.Apply(*b, &removed_, &cleared_);
  }
  size_t Cached(const std::vector<uint32_t>& prompt) const {
    return view_.CachedPrefixTokens(keyer_.Keys(prompt));
  }

  prefix::BlockKeyer keyer_ = Keyer();
  KvEventView view_{Keyer(), {}};
  uint64_t seq_ = 0;
  std::vector<BlockKey> removed_;
  bool cleared_ = false;
};

TEST_F(KvEventViewTest, StoredBlocksGetTheRoutersKeysThroughTheParentChain) {
  const std::vector<uint32_t> prompt = TokenRun(100, 4 * kBlock);  // 4 blocks
  // The engine stores the prompt in two steps: blocks 0-1, then 2-3 chained to block 1.
  Apply({WireStored{{11, 12}, std::nullopt, TokenRun(100, 2 * kBlock), kBlock}});
  EXPECT_EQ(Cached(prompt), 2 * kBlock);
  Apply({WireStored{{13, 14}, int64_t{12}, TokenRun(100 + 2 * kBlock, 2 * kBlock), kBlock}});
  EXPECT_EQ(Cached(prompt), 4 * kBlock);
  EXPECT_EQ(view_.blocks(), 4u);

  // The events it emitted are exactly the router's keys for the prompt, in chain order.
  std::vector<BlockEvent> events;
  view_.DrainEvents(events);
  const std::vector<BlockKey> keys = keyer_.Keys(prompt);
  ASSERT_EQ(events.size(), 4u);
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(events[i], (BlockEvent{BlockEvent::Kind::kAdded, keys[i], i}));
  }
  // A prompt that diverges in block 1 shares only block 0.
  std::vector<uint32_t> other = prompt;
  other[kBlock + 1] = 9999;
  EXPECT_EQ(Cached(other), kBlock);
}

TEST_F(KvEventViewTest, RemovedAndClearedDropBlocks) {
  const std::vector<uint32_t> prompt = TokenRun(1, 3 * kBlock);
  Apply({WireStored{{1, 2, 3}, std::nullopt, prompt, kBlock}});
  EXPECT_EQ(Cached(prompt), 3 * kBlock);
  Apply({WireRemoved{{3}}});
  EXPECT_EQ(Cached(prompt), 2 * kBlock);
  EXPECT_EQ(removed_, std::vector<BlockKey>{keyer_.Keys(prompt)[2]});
  Apply({WireRemoved{{999}}});  // never stored: counted, harmless
  EXPECT_EQ(view_.stats().unknown_removed, 1u);
  Apply({WireCleared{}});
  EXPECT_TRUE(cleared_);
  EXPECT_EQ(Cached(prompt), 0u);
  EXPECT_EQ(view_.blocks(), 0u);
  EXPECT_EQ(view_.held_keys(), 0u);
  std::vector<BlockEvent> events;
  view_.DrainEvents(events);
  // 3 added, 1 removed, then the 2 left removed children first.
  ASSERT_EQ(events.size(), 6u);
  EXPECT_EQ(events[4].block_index, 1u);
  EXPECT_EQ(events[5].block_index, 0u);
}

TEST_F(KvEventViewTest, SkipsBlocksItCannotKey) {
  const std::vector<uint32_t> prompt = TokenRun(1, 2 * kBlock);
  // Parent never seen (stored before the view started).
  Apply({WireStored{{5}, int64_t{4}, TokenRun(1, kBlock), kBlock}});
  EXPECT_EQ(view_.stats().unknown_parent, 1u);
  // Another block size: keys could not match the router's.
  Apply({WireStored{{6}, std::nullopt, TokenRun(1, 8), 8}});
  EXPECT_EQ(view_.stats().block_size_mismatch, 1u);
  // LoRA blocks and CPU-tier blocks.
  Apply({WireStored{{7}, std::nullopt, TokenRun(1, kBlock), kBlock, 2}});
  Apply({WireStored{{8}, std::nullopt, TokenRun(1, kBlock), kBlock, std::nullopt, "CPU"}});
  EXPECT_EQ(view_.stats().unkeyable, 2u);
  EXPECT_EQ(view_.blocks(), 0u);
  EXPECT_EQ(Cached(prompt), 0u);
}

TEST_F(KvEventViewTest, RepeatedStoreIsIdempotentAndSharedKeysAreCounted) {
  const std::vector<uint32_t> prompt = TokenRun(1, kBlock);
  Apply({WireStored{{1}, std::nullopt, prompt, kBlock}});
  Apply({WireStored{{1}, std::nullopt, prompt, kBlock}});  // redelivered
  // Another engine block with the same tokens (e.g. another cache salt): same node key.
  Apply({WireStored{{2}, std::nullopt, prompt, kBlock}});
  EXPECT_EQ(view_.blocks(), 2u);
  EXPECT_EQ(view_.held_keys(), 1u);
  Apply({WireRemoved{{1}}});
  EXPECT_EQ(Cached(prompt), kBlock);  // still held through block 2
  Apply({WireRemoved{{2}}});
  EXPECT_EQ(Cached(prompt), 0u);
}

TEST_F(KvEventViewTest, BoundDropsOldestBlocks) {
  KvEventView view(Keyer(), {.max_blocks = 3});
  for (int64_t i = 0; i < 5; ++i) {
    Result<KvEventBatch> b = DecodeKvEventBatch(
        EncodeKvSeq(0),
        EncodeBatch(WireForm::kArray, 1.0,
                    {WireStored{{i}, std::nullopt, TokenRun(10 * i, kBlock), kBlock}}));
    ASSERT_TRUE(b.ok());
    view.Apply(*b, nullptr, nullptr);
  }
  EXPECT_EQ(view.blocks(), 3u);
  EXPECT_EQ(view.stats().evicted_over_bound, 2u);
  EXPECT_EQ(view.CachedPrefixTokens(keyer_.Keys(TokenRun(0, kBlock))), 0u);
  EXPECT_EQ(view.CachedPrefixTokens(keyer_.Keys(TokenRun(40, kBlock))), kBlock);
}

TEST_F(KvEventViewTest, ResetForgetsAndSnapshotListsParentsFirst) {
  Apply({WireStored{{1, 2}, std::nullopt, TokenRun(1, 2 * kBlock), kBlock}});
  std::vector<BlockEvent> snap;
  view_.AppendSnapshot(snap);
  ASSERT_EQ(snap.size(), 2u);
  EXPECT_EQ(snap[0].block_index, 0u);
  view_.Reset();
  EXPECT_EQ(view_.blocks(), 0u);
  EXPECT_EQ(view_.stats().resets, 1u);
  // After a reset, a child of a forgotten block cannot be keyed.
  Apply({WireStored{{3}, int64_t{2}, TokenRun(1 + 2 * kBlock, kBlock), kBlock}});
  EXPECT_EQ(view_.stats().unknown_parent, 1u);
}

}  // namespace
}  // namespace hearsay::upstream::kv_event_view_test
