#include "hearsay/node/peer_trust.h"

#include <gtest/gtest.h>

namespace hearsay::node {
namespace {

TimePoint At(double seconds) { return TimePoint{} + FromSeconds(seconds); }

// Honest members deliver about what they claim and answer within their expected time, with the
// noise of a gossiped view (a few evictions, a queue that moved).
void RecordHonest(PeerTrust& t, const NodeId& m, double at, int i) {
  const uint32_t claimed = 512;
  const uint32_t actual = i % 4 == 0 ? 384 : 512;
  const double expected = 40;
  const double actual_ms = i % 3 == 0 ? 60 : 44;
  t.Record(m, At(at), claimed, actual, expected, actual_ms);
}

// A liar claims every prefix and an idle engine: it holds a fraction of what it claims and its
// queue makes every answer several times slower than its claims promise.
void RecordLiar(PeerTrust& t, const NodeId& m, double at) {
  t.Record(m, At(at), 1024, 128, 20, 200);
}

TEST(PeerTrustTest, AnUnknownMemberIsTrusted) {
  PeerTrust t;
  const PeerTrustView v = t.Of("nobody");
  EXPECT_EQ(v.trust(), 1.0);
  EXPECT_EQ(v.samples, 0u);
}

TEST(PeerTrustTest, AnHonestMemberIsNotDiscounted) {
  PeerTrust t;
  for (int i = 0; i < 40; ++i) {
    RecordHonest(t, "self", i * 0.1, i);
    RecordHonest(t, "a", i * 0.1, i + 1);
    RecordHonest(t, "b", i * 0.1, i + 2);
  }
  for (const char* m : {"self", "a", "b"}) {
    EXPECT_EQ(t.Of(m).cache_trust, 1.0) << m;
    EXPECT_EQ(t.Of(m).time_trust, 1.0) << m;
  }
}

TEST(PeerTrustTest, ALiarIsDiscountedInProportionToItsOverclaim) {
  PeerTrust t;
  for (int i = 0; i < 40; ++i) {
    RecordHonest(t, "self", i * 0.1, i);
    RecordHonest(t, "honest", i * 0.1, i + 1);
    RecordLiar(t, "liar", i * 0.1);
  }
  const PeerTrustView liar = t.Of("liar");
  EXPECT_NEAR(liar.delivery, 0.125, 1e-9);
  EXPECT_NEAR(liar.ttft_ratio, 10, 1e-9);
  // Judged against the typical member: the median of three (the honest ones).
  EXPECT_LT(liar.cache_trust, 0.25);
  EXPECT_LT(liar.time_trust, 0.25);
  EXPECT_LT(liar.trust(), 0.05);
  EXPECT_EQ(t.Of("honest").trust(), 1.0);

  // A liar that claims only twice what it delivers loses less than one that claims eight times.
  PeerTrust mild;
  for (int i = 0; i < 40; ++i) {
    RecordHonest(mild, "self", i * 0.1, i);
    RecordHonest(mild, "honest", i * 0.1, i + 1);
    mild.Record("liar", At(i * 0.1), 1024, 512, 20, 200);
  }
  EXPECT_GT(mild.Of("liar").cache_trust, liar.cache_trust);
}

TEST(PeerTrustTest, OneLateAnswerCostsALittleARunOfThemCostsAll) {
  PeerTrust t;
  for (int i = 0; i < 20; ++i) {
    RecordHonest(t, "self", i * 0.1, i);
    RecordHonest(t, "honest", i * 0.1, i);
  }
  RecordLiar(t, "liar", 2);
  const double after_one = t.Of("liar").trust();
  EXPECT_GT(after_one, 0.1);
  EXPECT_LT(after_one, 0.5);
  for (size_t i = 1; i < t.options().full_samples; ++i) RecordLiar(t, "liar", 2);
  EXPECT_LT(t.Of("liar").trust(), 0.05);
}

TEST(PeerTrustTest, AnOverdueForwardCountsBeforeItsAnswer) {
  PeerTrust t;
  for (int i = 0; i < 20; ++i) {
    RecordHonest(t, "self", i * 0.1, i);
    RecordHonest(t, "honest", i * 0.1, i);
  }
  // Four forwards promised in 20 ms; 10 ms later none is overdue, 200 ms later all are.
  for (uint64_t r = 1; r <= 4; ++r) t.Sent("liar", r, At(2), 20);
  t.Expire(At(2.01));
  EXPECT_EQ(t.Of("liar").trust(), 1.0);
  t.Expire(At(2.2));
  EXPECT_LT(t.Of("liar").time_trust, 0.2);
  // Answered (or abandoned), they are no longer outstanding; the answers are the evidence now.
  for (uint64_t r = 1; r <= 3; ++r) t.Record("liar", At(2.2), 0, 0, 20, 20, r);
  t.Abandon("liar", 4);
  t.Expire(At(2.3));
  EXPECT_EQ(t.Of("liar").samples, 3u);
  EXPECT_EQ(t.Of("liar").time_trust, 1.0);
}

TEST(PeerTrustTest, AReformedLiarRecovers) {
  PeerTrust t;
  double now = 0;
  for (int i = 0; i < 40; ++i, now += 0.1) {
    RecordHonest(t, "self", now, i);
    RecordHonest(t, "honest", now, i + 1);
    RecordLiar(t, "liar", now);
  }
  ASSERT_LT(t.Of("liar").trust(), 0.1);
  // It stops lying: its honest answers replace the lies in its window.
  for (int i = 0; i < 80; ++i, now += 0.1) {
    RecordHonest(t, "self", now, i);
    RecordHonest(t, "honest", now, i + 1);
    RecordHonest(t, "liar", now, i + 2);
  }
  EXPECT_EQ(t.Of("liar").trust(), 1.0);
}

TEST(PeerTrustTest, ADiscountedMemberIsForgivenWhenItsSamplesLeaveTheWindow) {
  PeerTrust t;
  for (int i = 0; i < 40; ++i) {
    RecordHonest(t, "self", i * 0.1, i);
    RecordHonest(t, "honest", i * 0.1, i + 1);
    RecordLiar(t, "liar", i * 0.1);
  }
  ASSERT_LT(t.Of("liar").trust(), 0.1);
  // Discounted, it got no traffic (so no new samples); once its lies are older than the window it
  // is on probation again, trusted until it has been judged anew.
  t.Expire(At(0) + t.options().window - FromSeconds(1));
  EXPECT_LT(t.Of("liar").trust(), 0.1);
  t.Expire(At(4) + t.options().window + FromSeconds(1));
  EXPECT_EQ(t.Of("liar").trust(), 1.0);
  EXPECT_EQ(t.Of("liar").samples, 0u);
}

TEST(PeerTrustTest, AMinorityOfLiarsCannotMoveTheBaseline) {
  PeerTrust t;
  for (int i = 0; i < 40; ++i) {
    for (const char* m : {"self", "a", "b", "c", "d"}) RecordHonest(t, m, i * 0.1, i);
    for (const char* m : {"x", "y", "z"}) RecordLiar(t, m, i * 0.1);
  }
  for (const char* m : {"self", "a", "b", "c", "d"}) EXPECT_EQ(t.Of(m).trust(), 1.0) << m;
  for (const char* m : {"x", "y", "z"}) EXPECT_LT(t.Of(m).trust(), 0.1) << m;
}

TEST(PeerTrustTest, TheHiddenWaitIsFirstThisNodesOwnWorkQueuedThere) {
  // A member that claims an idle engine hides every request queued there, this node's included:
  // three forwards expected to take 100 ms each leave 300 ms of work, worked off as time passes.
  PeerTrust t;
  for (uint64_t r = 1; r <= 3; ++r) t.Sent("liar", r, At(1), 100);
  EXPECT_NEAR(t.Of("liar").hidden_wait_ms, 300, 1e-9);
  t.Expire(At(1.1));
  EXPECT_NEAR(t.Of("liar").hidden_wait_ms, 200, 1e-6);
  // Answered as promised, nothing is left.
  for (uint64_t r = 1; r <= 3; ++r) t.Record("liar", At(1.1), 0, 0, 100, 100, r);
  EXPECT_EQ(t.Of("liar").hidden_wait_ms, 0);
}

TEST(PeerTrustTest, UnansweredWorkCountsWhatEachForwardPutsThereWhateverItsClaims) {
  // Two forwards whose claims promised 20 ms each (the member claimed their prompts cached) but
  // whose whole prefills are 900 and 600 ms, and a third sent later.
  PeerTrust t;
  t.Sent("liar", 1, At(1), 20, 900);
  t.Sent("liar", 2, At(1), 20, 600);
  t.Sent("liar", 3, At(2), 20, 500);
  t.Expire(At(2.2));
  PeerTrust::OutstandingWork w = t.Unanswered("liar", At(1.5));
  EXPECT_EQ(w.requests, 3u);
  EXPECT_EQ(w.sent_by, 2u);                   // the third was sent after
  EXPECT_NEAR(w.work_ms, 2000 - 1200, 1e-6);  // 1.2 s worked off since the oldest was sent
  t.Record("liar", At(2.3), 0, 0, 20, 1300, 1);
  t.Abandon("liar", 2);
  t.Expire(At(2.4));
  w = t.Unanswered("liar", At(3));
  EXPECT_EQ(w.requests, 1u);
  EXPECT_NEAR(w.work_ms, 500 - 400, 1e-6);
  EXPECT_EQ(t.Unanswered("nobody", At(3)).requests, 0u);
}

TEST(PeerTrustTest, AnswersSlowerThanClaimedAndOverdueForwardsShowAsHiddenWait) {
  PeerTrust t;
  // Answers 500 and 300 ms later than their claims promised: a queue of ~400 ms nobody reported.
  t.Record("liar", At(1), 0, 0, 20, 520);
  t.Record("liar", At(1.1), 0, 0, 20, 320);
  EXPECT_NEAR(t.Of("liar").hidden_wait_ms, 400, 1e-9);
  // A forward overdue by 980 ms says the queue is at least that long now.
  t.Sent("liar", 7, At(2), 20);
  t.Expire(At(3));
  EXPECT_NEAR(t.Of("liar").hidden_wait_ms, 980, 1e-6);
  // Answers faster than expected hide nothing.
  t.Record("honest", At(3), 0, 0, 50, 30);
  EXPECT_EQ(t.Of("honest").hidden_wait_ms, 0);
  // Judgement off: every claim is believed.
  PeerTrust off(PeerTrustOptions{.enabled = false});
  off.Record("liar", At(1), 0, 0, 20, 520);
  off.Sent("liar", 7, At(2), 20);
  off.Expire(At(3));
  EXPECT_EQ(off.Of("liar").hidden_wait_ms, 0);
}

TEST(PeerTrustTest, KeepsAtMostMaxMembers) {
  PeerTrust t(PeerTrustOptions{.max_members = 3});
  for (int i = 0; i < 10; ++i)
    t.Record(std::string("m").append(std::to_string(i)), At(i), 10, 10, 10, 10);
  const std::vector<PeerTrustView> all = t.All();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].member, "m7");
  EXPECT_EQ(all[2].member, "m9");
}

}  // namespace
}  // namespace hearsay::node
