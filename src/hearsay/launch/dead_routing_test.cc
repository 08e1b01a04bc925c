#include "hearsay/launch/dead_routing.h"

#include <gtest/gtest.h>

namespace hearsay::launch {
namespace {

MemberInfo Member(const std::string& id, const std::string& state, bool is_self = false) {
  MemberInfo m;
  m.node_id = id;
  m.state = state;
  m.is_self = is_self;
  return m;
}

// The view of `self`: every member of `states` (id -> state), and itself alive.
ClusterView View(const std::string& self, std::map<std::string, std::string> states) {
  ClusterView v;
  v.self_id = self;
  v.members.push_back(Member(self, "alive", /*is_self=*/true));
  for (const auto& [id, state] : states) v.members.push_back(Member(id, state));
  return v;
}

// Three nodes; node-2 is seen dead by both others from the sample at 1000-1010 ms to the one at
// 5000-5010 ms, alive again at 6000.
DeadRoutingChecker NodeTwoDeadFromOneToFiveSeconds(double grace_ms) {
  DeadRoutingChecker c(grace_ms);
  c.AddSample(0, 10,
              {View("node-0", {{"node-1", "alive"}, {"node-2", "alive"}}),
               View("node-1", {{"node-0", "alive"}, {"node-2", "suspect"}}),
               View("node-2", {{"node-0", "alive"}, {"node-1", "alive"}})});
  for (double t = 1000; t <= 5000; t += 1000) {
    c.AddSample(t, t + 10,
                {View("node-0", {{"node-1", "alive"}, {"node-2", "dead"}}),
                 View("node-1", {{"node-0", "alive"}, {"node-2", "left"}})});
  }
  c.AddSample(6000, 6010,
              {View("node-0", {{"node-1", "alive"}, {"node-2", "alive"}}),
               View("node-1", {{"node-0", "alive"}, {"node-2", "dead"}})});
  return c;
}

TEST(DeadRoutingTest, ASpanRunsFromTheFirstToTheLastSampleWhereAllOthersSeeItDead) {
  const DeadRoutingChecker c = NodeTwoDeadFromOneToFiveSeconds(500);
  const std::vector<DeadSpan> spans = c.Spans();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].member, "node-2");
  EXPECT_EQ(spans[0].from_ms, 1010);  // the end of the first all-dead sample
  EXPECT_EQ(spans[0].to_ms, 5000);    // the start of the last one
  EXPECT_EQ(c.samples(), 7u);
}

TEST(DeadRoutingTest, RoutingInsideTheSpanAfterTheGraceIsAViolation) {
  DeadRoutingChecker c = NodeTwoDeadFromOneToFiveSeconds(500);
  c.AddRouting({"node-0", "node-2", 3000, 3000, "record"});
  const std::vector<std::string> v = c.Violations();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0].find("node-0 routed a request to node-2 1990 ms after"), std::string::npos)
      << v[0];
}

TEST(DeadRoutingTest, RoutingWithinTheGraceOrOutsideTheSpanIsNot) {
  DeadRoutingChecker c = NodeTwoDeadFromOneToFiveSeconds(500);
  c.AddRouting({"node-0", "node-2", 1200, 1200, "within the grace"});
  c.AddRouting({"node-0", "node-2", 500, 500, "before the span"});
  c.AddRouting({"node-1", "node-2", 5500, 5500, "after the last all-dead sample"});
  c.AddRouting({"node-0", "node-2", 3000, 5500, "a window that leaves the span"});
  c.AddRouting({"node-0", "node-1", 3000, 3000, "to a live member"});
  c.AddRouting({"node-2", "node-2", 3000, 3000, "to itself"});
  EXPECT_TRUE(c.Violations().empty()) << c.Violations()[0];
  EXPECT_EQ(c.routings(), 6u);
}

TEST(DeadRoutingTest, OneOtherNodeSeeingItAliveKeepsItOutOfTheSpan) {
  DeadRoutingChecker c(0);
  // A partition {0, 1} | {1, 2} (node-1 reaches both): node-0 and node-2 see each other dead,
  // node-1 sees both alive.
  c.AddSample(0, 10,
              {View("node-0", {{"node-1", "alive"}, {"node-2", "dead"}}),
               View("node-1", {{"node-0", "alive"}, {"node-2", "alive"}}),
               View("node-2", {{"node-0", "dead"}, {"node-1", "alive"}})});
  // node-1 does not list node-2 at all: not a declaration of death either.
  c.AddSample(100, 110, {View("node-0", {{"node-2", "dead"}}), View("node-1", {})});
  c.AddRouting({"node-0", "node-2", 50, 50, "record"});
  EXPECT_TRUE(c.Spans().empty());
  EXPECT_TRUE(c.Violations().empty());
}

TEST(DeadRoutingTest, ASampleWhereOnlyTheMemberAnsweredChangesNothing) {
  DeadRoutingChecker c(0);
  c.AddSample(0, 10, {View("node-0", {{"node-1", "dead"}})});
  c.AddSample(100, 110, {View("node-1", {{"node-0", "alive"}})});  // node-0 silent
  c.AddSample(200, 210, {View("node-0", {{"node-1", "dead"}})});
  const std::vector<DeadSpan> spans = c.Spans();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].member, "node-1");
  EXPECT_EQ(spans[0].from_ms, 10);
  EXPECT_EQ(spans[0].to_ms, 200);
}

TEST(DeadRoutingTest, ReadsEveryAttemptOfARouteRecord) {
  Result<std::vector<Routing>> r = RoutingsOfRecordLine(
      R"({"kind":"route","entry":"node-0","request":7,"arrived_ms":1000.5,)"
      R"("attempts":[{"at_ms":0.5,"chosen":"node-3","result":"failed"},)"
      R"({"at_ms":1200,"chosen":"node-1","result":"served"}],"served_by":"node-1"})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].entry, "node-0");
  EXPECT_EQ((*r)[0].member, "node-3");
  EXPECT_EQ((*r)[0].earliest_ms, 1001);
  EXPECT_EQ((*r)[1].member, "node-1");
  EXPECT_EQ((*r)[1].latest_ms, 2200.5);
}

TEST(DeadRoutingTest, ServeRecordsHaveNoRoutingsAndGarbageIsRefused) {
  Result<std::vector<Routing>> serve =
      RoutingsOfRecordLine(R"({"kind":"serve","node":"node-1","entry":"node-0","request":7})");
  ASSERT_TRUE(serve.ok());
  EXPECT_TRUE(serve->empty());
  EXPECT_FALSE(RoutingsOfRecordLine("not json").ok());
  EXPECT_FALSE(RoutingsOfRecordLine(R"({"kind":"route","entry":"node-0"})").ok());
  EXPECT_FALSE(
      RoutingsOfRecordLine(R"({"kind":"route","entry":"e","arrived_ms":1,"attempts":[{}]})").ok());
  EXPECT_FALSE(RoutingsOfRecordLine(R"([1,2])").ok());
}

}  // namespace
}  // namespace hearsay::launch
