#include "hearsay/node/shared_backlog.h"

#include <gtest/gtest.h>

namespace hearsay::node {
namespace {

BacklogSource Source(const NodeId& member, size_t sent_before_report, size_t reported,
                     double work_ms) {
  return BacklogSource{.member = member,
                       .requests = sent_before_report + 1,
                       .sent_before_report = sent_before_report,
                       .work_ms = work_ms,
                       .reported_requests = reported};
}

TEST(SharedBacklogTest, ListsOnlyMembersWhoseReportsLeaveItsRequestsOut) {
  const std::vector<BacklogSource> sources = {
      Source("liar", 2, 0, 3000),    // claims an idle engine under two of this node's requests
      Source("honest", 2, 5, 3000),  // counts them, and others' too
      Source("fresh", 0, 0, 3000),   // sent since its last report: nothing to tell yet
      Source("done", 1, 0, 0.5),     // worked off
  };
  const std::vector<gossip::BacklogEntry> list = ListBacklog(sources, {});
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].member, "liar");
  EXPECT_EQ(list[0].requests, 3u);
  EXPECT_EQ(list[0].work_ms, 3072u);  // rounded up to an eighth of 2048
  EXPECT_TRUE(ListBacklog(sources, {.enabled = false}).empty());
}

TEST(SharedBacklogTest, AFigureMovesInStepsOfAnEighthOfItsSize) {
  const auto listed = [](double work_ms) {
    const std::vector<BacklogSource> s = {Source("m", 1, 0, work_ms)};
    return ListBacklog(s, {})[0].work_ms;
  };
  EXPECT_EQ(listed(10), 64u);  // at least 64 ms
  EXPECT_EQ(listed(1000), 1024u);
  EXPECT_EQ(listed(4000), 4096u);
  EXPECT_EQ(listed(4100), 4608u);
  EXPECT_EQ(listed(100'000'000), gossip::kMaxBacklogWorkMs);
}

TEST(SharedBacklogTest, KeepsTheMostWorkWhenItMustDropSomeAndSortsByMember) {
  std::vector<BacklogSource> sources;
  for (int i = 0; i < 20; ++i)
    sources.push_back(Source("m" + std::to_string(10 + i), 1, 0, 100 * (i + 1)));
  const std::vector<gossip::BacklogEntry> list = ListBacklog(sources, {.max_entries = 3});
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].member, "m27");
  EXPECT_EQ(list[1].member, "m28");
  EXPECT_EQ(list[2].member, "m29");
  EXPECT_EQ(ListBacklog(sources, {.max_entries = 100}).size(), gossip::kMaxBacklogEntries);
}

TEST(SharedBacklogTest, SumsReportersAgedAndWeighted) {
  SharedBacklog sum;
  sum.set_trimmed(0);  // every list in full (the next tests trim)
  const std::vector<gossip::BacklogEntry> a = {{"liar", 2, 3000}, {"other", 1, 500}};
  const std::vector<gossip::BacklogEntry> b = {{"b", 1, 9999}, {"liar", 1, 1000}};
  sum.Add("a", a, FromMillis(1000), 1.0);  // a second old: 2,000 ms left
  sum.Add("b", b, Duration{0}, 0.5);       // a reporter this node half believes
  EXPECT_DOUBLE_EQ(sum.WorkMs("liar"), 2000 + 500);
  EXPECT_DOUBLE_EQ(sum.WorkMs("other"), 0);  // worked off by now
  EXPECT_DOUBLE_EQ(sum.WorkMs("b"), 0);      // a reporter's claim about itself is not counted
  EXPECT_DOUBLE_EQ(sum.WorkMs("nobody"), 0);
  sum.Clear();
  EXPECT_TRUE(sum.empty());
}

TEST(SharedBacklogTest, ALoneListerMovesNothingAtAMemberThisNodeHasNoEvidenceAgainst) {
  SharedBacklog sum;  // trims one lister by default
  const std::vector<gossip::BacklogEntry> slander = {{"honest", 1, gossip::kMaxBacklogWorkMs}};
  sum.Add("slanderer", slander, Duration{0}, 1.0);
  EXPECT_DOUBLE_EQ(sum.WorkMs("honest"), 0);
  sum.Clear();
  sum.set_trimmed(0);
  sum.Add("slanderer", slander, Duration{0}, 1.0);
  EXPECT_DOUBLE_EQ(sum.WorkMs("honest"), gossip::kMaxBacklogWorkMs);
}

TEST(SharedBacklogTest, TheLargestSharesCountUpToTheNextLargest) {
  SharedBacklog sum;
  sum.Add("a", std::vector<gossip::BacklogEntry>{{"m", 1, 5000}}, Duration{0}, 1.0);
  sum.Add("b", std::vector<gossip::BacklogEntry>{{"m", 1, 2000}}, Duration{0}, 1.0);
  sum.Add("c", std::vector<gossip::BacklogEntry>{{"m", 1, 1000}}, Duration{0}, 1.0);
  EXPECT_DOUBLE_EQ(sum.WorkMs("m"), 2000 + 2000 + 1000);
  sum.Clear();
  sum.set_trimmed(2);  // two colluding listers alone move nothing either
  sum.Add("a", std::vector<gossip::BacklogEntry>{{"m", 1, 5000}}, Duration{0}, 1.0);
  sum.Add("b", std::vector<gossip::BacklogEntry>{{"m", 1, 2000}}, Duration{0}, 1.0);
  EXPECT_DOUBLE_EQ(sum.WorkMs("m"), 0);
  sum.Add("c", std::vector<gossip::BacklogEntry>{{"m", 1, 1000}}, Duration{0}, 1.0);
  EXPECT_DOUBLE_EQ(sum.WorkMs("m"), 3 * 1000);
}

TEST(SharedBacklogTest, ThisNodesOwnListProvesTheMemberHidesWorkAndEveryShareCounts) {
  SharedBacklog sum;
  sum.AddOwn("self", std::vector<gossip::BacklogEntry>{{"liar", 1, 1000}, {"self", 1, 99}},
             FromMillis(200));
  sum.Add("a", std::vector<gossip::BacklogEntry>{{"liar", 3, 4000}}, Duration{0}, 1.0);
  EXPECT_DOUBLE_EQ(sum.WorkMs("liar"), 800 + 4000);
  EXPECT_DOUBLE_EQ(sum.WorkMs("self"), 0);
}

TEST(SharedBacklogTest, AMemberThisNodeDoubtsCountsEveryShare) {
  SharedBacklog sum;
  sum.Doubt("late");  // its answers here fell short of its claims
  sum.Add("a", std::vector<gossip::BacklogEntry>{{"late", 2, 3000}, {"m", 1, 3000}}, Duration{0},
          1.0);
  EXPECT_DOUBLE_EQ(sum.WorkMs("late"), 3000);
  EXPECT_DOUBLE_EQ(sum.WorkMs("m"), 0);
}

}  // namespace
}  // namespace hearsay::node
