#include "hearsay/twin/twin_run.h"

#include <gtest/gtest.h>

#include "hearsay/sim/sim_run.h"

namespace hearsay::twin {
namespace {

sim::SimConfig Small(const std::string& policy) {
  sim::SimConfig c;
  c.nodes = 3;
  c.policy = policy;
  c.engine_preset = "consumer";
  c.capacity_tokens = 8192;
  c.requests = 60;
  c.rate_per_s = 8;
  c.zipf = 1;
  c.seed = 3;
  c.warmup_ms = 500;
  return c;
}

TEST(TwinRunTest, ThePredictionIsTheMeanOfRunsOverClusterSeeds) {
  const sim::SimConfig c = Small("random");
  Result<TwinPrediction> p = Predict(c, 3);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->runs, 3u);
  double mean = 0, hit = 0;
  for (uint64_t k = 1; k <= 3; ++k) {
    sim::SimConfig one = c;
    one.cluster_seed = k;
    Result<sim::SimSummary> s = sim::RunSim(one);
    ASSERT_TRUE(s.ok());
    mean += s->mean_ttft_ms / 3;
    hit += s->hit_rate / 3;
  }
  EXPECT_NEAR(p->mean_ttft_ms, mean, 1e-9);
  EXPECT_NEAR(p->hit_rate, hit, 1e-12);
  EXPECT_LE(p->min_mean_ttft_ms, p->mean_ttft_ms);
  EXPECT_GE(p->max_mean_ttft_ms, p->mean_ttft_ms);
  // The random policy's choices differ between cluster seeds, the requests do not.
  EXPECT_LT(p->min_mean_ttft_ms, p->max_mean_ttft_ms);
}

TEST(TwinRunTest, ZeroRunsIsRefused) {
  EXPECT_EQ(Predict(Small("hearsay"), 0).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hearsay::twin
