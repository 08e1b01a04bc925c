#include "hearsay/gossip/broadcast_queue.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hearsay::gossip {
namespace {

using namespace std::chrono_literals;

MemberUpdate Suspect(const std::string& id) {
  MemberUpdate u;
  u.state = MemberState::kSuspect;
  u.id = id;
  u.address = id;
  u.generation = 1;
  u.accuser = "n0";
  return u;
}

TimePoint At(Duration d) { return TimePoint{} + d; }

MemberUpdate Alive(const std::string& id, uint64_t incarnation) {
  MemberUpdate u = Suspect(id);
  u.state = MemberState::kAlive;
  u.incarnation = incarnation;
  u.accuser.clear();
  return u;
}

// In a signed cluster's queue a refutation goes ahead of everything else, even of newer and
// less-sent updates: during a cluster-wide join the announcements (first incarnations) fill every
// message for many seconds. An unsigned cluster's queue keeps least-sent, newest first.
TEST(BroadcastQueueTest, RefutationsGoFirstWhenAsked) {
  BroadcastQueue plain;
  plain.Push(Alive("n1", 1));
  plain.Push(Alive("n2", 0));
  EXPECT_EQ(plain.Take(400, 10, "", "n60", At(0ms)).front().id, "n2");

  BroadcastQueue q(/*refutations_first=*/true);
  q.Push(Alive("n1", 1));
  for (int i = 2; i < 40; ++i) q.Push(Alive("n" + std::to_string(i), 0));
  q.Push(Suspect("n50"));
  // A message with room for a few: the refutation first though it was queued first and sent
  // already, then the newest of the rest.
  ASSERT_EQ(q.Take(400, 10, "", "n60", At(0ms)).front().id, "n1");
  const std::vector<MemberUpdate> next = q.Take(120, 10, "", "n61", At(1s));
  ASSERT_FALSE(next.empty());
  EXPECT_EQ(next.front().id, "n1");
}

TEST(BroadcastQueueTest, UpdateLeavesAfterTransmitLimitToDistinctRecipients) {
  BroadcastQueue q;
  q.Push(Suspect("n5"));
  const std::vector<Address> peers = {"n10", "n11", "n12"};
  for (size_t i = 0; i < peers.size(); ++i) {
    ASSERT_EQ(q.Take(400, 3, "", peers[i], At(i * 100ms)).size(), 1u);
  }
  EXPECT_EQ(q.size(), 0u);
  EXPECT_TRUE(q.Take(400, 3, "", "n20", At(1s)).empty());
}

// The datagrams of one exchange go to one peer at once: they all carry the update, but count
// one transmission, so the quota still reaches transmit_limit distinct peers.
TEST(BroadcastQueueTest, BurstToOneRecipientCountsOnce) {
  BroadcastQueue q;
  q.Push(Suspect("n5"));
  for (int datagram = 0; datagram < 12; ++datagram) {
    ASSERT_EQ(q.Take(400, 3, "", "n10", At(1s)).size(), 1u) << datagram;
  }
  ASSERT_NE(q.Find("n5"), nullptr);
  // Two more recipients use up the quota of 3.
  EXPECT_EQ(q.Take(400, 3, "", "n11", At(1s)).size(), 1u);
  EXPECT_EQ(q.Take(400, 3, "", "n12", At(1s)).size(), 1u);
  EXPECT_EQ(q.Find("n5"), nullptr);
}

// The same recipient later (beyond the burst window) is a new transmission, so an update does
// not ride forever in a cluster where one peer is all there is.
TEST(BroadcastQueueTest, SameRecipientAfterTheBurstCountsAgain) {
  BroadcastQueue q;
  q.Push(Suspect("n5"));
  EXPECT_EQ(q.Take(400, 2, "", "n10", At(0ms)).size(), 1u);
  EXPECT_EQ(q.Take(400, 2, "", "n10", At(BroadcastQueue::kBurst / 2)).size(), 1u);
  ASSERT_NE(q.Find("n5"), nullptr);
  EXPECT_EQ(q.Take(400, 2, "", "n10", At(BroadcastQueue::kBurst * 2)).size(), 1u);
  EXPECT_EQ(q.Find("n5"), nullptr);
}

TEST(BroadcastQueueTest, LeastSentFirstAndPreferredFirst) {
  BroadcastQueue q;
  q.Push(Suspect("n1"));
  q.Push(Suspect("n2"));
  const size_t one = EncodedSize(Suspect("n1"));
  // Newest first among the unsent.
  std::vector<MemberUpdate> a = q.Take(one, 10, "", "n10", At(0ms));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].id, "n2");
  // n1 has been sent less often now.
  std::vector<MemberUpdate> b = q.Take(one, 10, "", "n11", At(0ms));
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].id, "n1");
  // A preferred update goes first whatever its count.
  std::vector<MemberUpdate> c = q.Take(one, 10, "n2", "n12", At(0ms));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].id, "n2");
}

TEST(BroadcastQueueTest, NewerUpdateReplacesAndResetsTheCount) {
  BroadcastQueue q;
  q.Push(Suspect("n5"));
  EXPECT_EQ(q.Take(400, 2, "", "n10", At(0ms)).size(), 1u);
  MemberUpdate dead = Suspect("n5");
  dead.state = MemberState::kDead;
  q.Push(dead);
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.Take(400, 2, "", "n11", At(0ms)).at(0).state, MemberState::kDead);
  EXPECT_EQ(q.Take(400, 2, "", "n12", At(0ms)).size(), 1u);
  EXPECT_EQ(q.size(), 0u);
}

}  // namespace
}  // namespace hearsay::gossip
