#include "hearsay/sim/specialist_drift.h"

#include <gtest/gtest.h>

#include <vector>

namespace hearsay::sim {
namespace {

RequestRecord Rec(double at, int32_t subject, int32_t node) {
  RequestRecord r;
  r.arrival_ms = at;
  r.subject = subject;
  r.served_node = node;
  return r;
}

TEST(SpecialistDriftTest, StableSpecialistsDoNotDrift) {
  std::vector<RequestRecord> rs;
  for (int w = 0; w < 5; ++w) {
    for (int i = 0; i < 4; ++i) {
      rs.push_back(Rec(w * 1000 + i, 0, 2));
      rs.push_back(Rec(w * 1000 + i, 1, 3));
    }
  }
  const DriftStats d = SpecialistDrift(rs, 1000, 2);
  EXPECT_EQ(d.drift, 0.0);
  EXPECT_EQ(d.specialist_share, 1.0);
  EXPECT_EQ(d.transitions, 8u);  // 2 subjects x 4 window pairs
  EXPECT_EQ(d.cells, 10u);
}

TEST(SpecialistDriftTest, CountsChangesOfTheMajorityServer) {
  std::vector<RequestRecord> rs;
  // Subject 0: node 1 (3 of 4), then node 2 (2 of 2), then node 2 again.
  for (int i = 0; i < 3; ++i) rs.push_back(Rec(10 + i, 0, 1));
  rs.push_back(Rec(20, 0, 4));
  rs.push_back(Rec(1010, 0, 2));
  rs.push_back(Rec(1020, 0, 2));
  rs.push_back(Rec(2010, 0, 2));
  rs.push_back(Rec(2020, 0, 2));
  const DriftStats d = SpecialistDrift(rs, 1000, 2);
  EXPECT_EQ(d.transitions, 2u);
  EXPECT_DOUBLE_EQ(d.drift, 0.5);
  EXPECT_DOUBLE_EQ(d.specialist_share, (0.75 + 1 + 1) / 3);
}

TEST(SpecialistDriftTest, SparseWindowsAndUnknownsAreSkipped) {
  // Window 1 has too few requests; the last two have no subject or no serving node.
  std::vector<RequestRecord> rs = {Rec(0, 0, 1),    Rec(5, 0, 1),    Rec(1000, 0, 3),
                                   Rec(2000, 0, 2), Rec(2001, 0, 2), Rec(3000, -1, 1),
                                   Rec(3001, 0, -1)};
  const DriftStats d = SpecialistDrift(rs, 1000, 2);
  EXPECT_EQ(d.cells, 2u);
  EXPECT_EQ(d.transitions, 1u);  // window 0 -> window 2 (window 1 does not qualify)
  EXPECT_DOUBLE_EQ(d.drift, 1.0);
  EXPECT_EQ(SpecialistDrift(rs, 0, 2).cells, 0u);
  EXPECT_EQ(SpecialistDrift(rs, 1000, 0).cells, 0u);
  EXPECT_EQ(SpecialistDrift({}, 1000, 1).transitions, 0u);
}

}  // namespace
}  // namespace hearsay::sim
