// The host's speed from a probe: the alone ratio is the speed, the together ratio over it the
// slowdown that gives the effective cores; the twin's upstream takes both.
#include "hearsay/twin/host_speed.h"

#include <gtest/gtest.h>

#include <cmath>

#include "hearsay/engine/cost_model.h"

namespace hearsay::twin {
namespace {

// A sample of `engine_tokens` that took `ratio` times the model's time.
loadgen::ProbeSample Sample(const TwinUpstream& u, uint32_t engine_tokens, double ratio) {
  const engine::CostModel model = *engine::CostModel::FromPreset(u.cost_model);
  const auto node_tokens =
      static_cast<uint64_t>(std::llround(engine_tokens / u.engine_tokens_per_node_token));
  return {0, engine_tokens, ratio * model.PrefillMs(node_tokens, 0, 0)};
}

TEST(HostSpeedTest, AloneGivesTheSpeedAndTogetherTheCores) {
  const TwinUpstream u = LlamaDemoUpstream();
  loadgen::HostProbe probe;
  // Alone 1.2x the model (one outlier at 3x); all four at once 3.2x: 2.67x slower, 1.5 cores.
  for (uint32_t tokens : {900, 1000, 1100}) probe.alone.push_back(Sample(u, tokens, 1.2));
  probe.alone.push_back(Sample(u, 1000, 3.0));
  probe.alone.push_back(Sample(u, 950, 1.1));
  for (uint32_t tokens : {900, 1000, 1100, 1050}) probe.together.push_back(Sample(u, tokens, 3.2));
  Result<HostSpeed> host = FitHostSpeed(probe, 4, u);
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  EXPECT_NEAR(host->speed, 1.2, 1e-6);
  EXPECT_NEAR(host->cores, 1.5, 1e-6);

  // No slowdown at all: as many cores as servers, never more; a slowdown past 4x: one core.
  probe.together = probe.alone;
  EXPECT_NEAR(FitHostSpeed(probe, 4, u)->cores, 4, 1e-9);
  for (auto& s : probe.together) s.ttft_ms *= 10;
  EXPECT_NEAR(FitHostSpeed(probe, 4, u)->cores, 1, 1e-9);

  probe.together.clear();
  EXPECT_EQ(FitHostSpeed(probe, 4, u).status().code(), StatusCode::kInvalidArgument);
}

TEST(HostSpeedTest, TheUpstreamRunsOnTheHost) {
  const TwinUpstream u = LlamaDemoUpstream();
  Result<TwinUpstream> on = OnHost(u, {.speed = 1.5, .cores = 1.7});
  ASSERT_TRUE(on.ok()) << on.status().ToString();
  EXPECT_EQ(on->host_cores, 1.7);
  EXPECT_EQ(on->max_running, u.max_running);
  const engine::CostParams was = engine::CostModel::FromPreset(u.cost_model)->params();
  Result<engine::CostModel> now = engine::CostModel::FromPreset(on->cost_model);
  ASSERT_TRUE(now.ok()) << on->cost_model;
  EXPECT_DOUBLE_EQ(now->params().a_ms_per_token, 1.5 * was.a_ms_per_token);
  EXPECT_DOUBLE_EQ(now->params().b_ms_per_token2, 1.5 * was.b_ms_per_token2);
  EXPECT_DOUBLE_EQ(now->params().t0_ms, 1.5 * was.t0_ms);
  EXPECT_EQ(OnHost(u, {.speed = 0, .cores = 2}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hearsay::twin
