#include "hearsay/upstream/held_blocks.h"

#include <gtest/gtest.h>

#include <vector>

namespace hearsay::upstream {
namespace {

using prefix::BlockEvent;
using prefix::BlockKey;

std::vector<BlockEvent> Drain(HeldBlocks& h) {
  std::vector<BlockEvent> out;
  h.DrainEvents(out);
  return out;
}

TEST(HeldBlocksTest, FirstReferenceAddsAndLastReleaseRemoves) {
  HeldBlocks h;
  EXPECT_TRUE(h.Add(10, 0));
  EXPECT_TRUE(h.Add(11, 1, 10));
  EXPECT_FALSE(h.Add(11, 1, 10));  // a second chain through the same block
  EXPECT_EQ(h.size(), 2u);
  std::vector<BlockEvent> ev = Drain(h);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[1].kind, BlockEvent::Kind::kAdded);
  EXPECT_EQ(ev[1].key, 11u);
  EXPECT_EQ(ev[1].block_index, 1u);

  EXPECT_FALSE(h.Release(11).has_value());  // one reference left
  EXPECT_TRUE(Drain(h).empty());
  const auto gone = h.Release(11);
  ASSERT_TRUE(gone.has_value());
  EXPECT_EQ(gone->index, 1u);
  EXPECT_EQ(gone->parent, 10u);
  ev = Drain(h);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, BlockEvent::Kind::kRemoved);
  EXPECT_EQ(ev[0].block_index, 1u);
  EXPECT_FALSE(h.Release(99).has_value());  // never held
  EXPECT_TRUE(h.Holds(10));
  EXPECT_FALSE(h.Holds(11));
}

TEST(HeldBlocksTest, PrefixSnapshotAndReleaseAllFollowTheChainOrder) {
  HeldBlocks h;
  const std::vector<BlockKey> chain = {7, 5, 9};
  for (uint32_t i = 0; i < chain.size(); ++i) h.Add(chain[i], i, i > 0 ? chain[i - 1] : 0);
  h.Add(3, 1, 7);
  Drain(h);
  const std::vector<BlockKey> probe = {7, 5, 4};
  EXPECT_EQ(h.PrefixBlocks(probe), 2u);

  std::vector<BlockEvent> snap;
  h.AppendSnapshot(snap);
  ASSERT_EQ(snap.size(), 4u);
  EXPECT_EQ(snap[0].key, 7u);  // parents first, then by key within an index
  EXPECT_EQ(snap[1].key, 3u);
  EXPECT_EQ(snap[2].key, 5u);
  EXPECT_EQ(snap[3].key, 9u);

  std::vector<BlockKey> removed;
  h.ReleaseAll(&removed);
  EXPECT_EQ(removed, (std::vector<BlockKey>{9, 3, 5, 7}));  // children first
  EXPECT_TRUE(h.empty());
  EXPECT_EQ(Drain(h).size(), 4u);
}

}  // namespace
}  // namespace hearsay::upstream
