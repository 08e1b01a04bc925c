#include "hearsay/sim/ratelimit_experiment.h"

#include <gtest/gtest.h>

namespace hearsay::sim {
namespace {

// Eight entry nodes on real gossip in virtual time: once every node has heard from every other,
// the tenant gets about its limit in total, not 8 times it.
TEST(RateLimitExperimentTest, EightEntryNodesAdmitAboutTheLimitAfterTheFirstRound) {
  RateLimitOptions o;
  o.duration_s = 10;
  for (const std::string spread : {"uniform", "skewed"}) {
    const RateLimitResult r = RunRateLimitCase(8, spread, o);
    EXPECT_GE(r.first_round_s, 0) << spread;
    EXPECT_LT(r.first_round_s, 3) << spread;
    EXPECT_GT(r.first_second_r, 1.5) << spread;  // alone at first, every node admits up to R
    EXPECT_LE(r.after_round_mean_r, 1.1) << spread;
    EXPECT_GE(r.after_round_mean_r, 0.8) << spread;
    EXPECT_NEAR(r.offered_r, 3, 0.3) << spread;
    EXPECT_GT(r.per_node_mean_r, 2) << spread;  // without the usage records: about 3 R
  }
}

TEST(RateLimitExperimentTest, SameSeedSameFigures) {
  RateLimitOptions o;
  o.duration_s = 4;
  const RateLimitResult a = RunRateLimitCase(4, "uniform", o);
  const RateLimitResult b = RunRateLimitCase(4, "uniform", o);
  EXPECT_EQ(a.after_round_mean_r, b.after_round_mean_r);
  EXPECT_EQ(a.first_round_s, b.first_round_s);
}

}  // namespace
}  // namespace hearsay::sim
