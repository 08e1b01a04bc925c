#include "hearsay/node/router_cost.h"

#include <gtest/gtest.h>

#include <string_view>

namespace hearsay::node {
namespace {

TEST(RouterCostModelTest, CarriesEveryCoefficientOfEveryPreset) {
  for (std::string_view name : engine::CostModel::PresetNames()) {
    const Result<engine::CostModel> cost = engine::CostModel::FromPreset(name);
    ASSERT_TRUE(cost.ok()) << name;
    const engine::CostParams& p = cost->params();
    const route::PrefillCostModel m = RouterCostModel(p);
    EXPECT_EQ(m.t0_ms, p.t0_ms) << name;
    EXPECT_EQ(m.a_ms_per_token, p.a_ms_per_token) << name;
    EXPECT_EQ(m.b_ms_per_token2, p.b_ms_per_token2) << name;
    EXPECT_EQ(m.d1_ms_per_seq, p.d1_ms_per_seq) << name;
    EXPECT_EQ(m.d2_ms_per_token, p.d2_ms_per_ctx_token) << name;
    EXPECT_TRUE(m.Validate().ok()) << name;
  }
}

TEST(RouterCostModelTest, PricesAPrefillAsTheEngineDoes) {
  const engine::CostModel cost = engine::CostModel::FromPreset("h100-llama3-8b").value();
  const route::PrefillCostModel m = RouterCostModel(cost.params());
  // One iteration, no token budget: the engine's t0 + work; the router's formula is the same.
  EXPECT_NEAR(m.PrefillMs(1000, 500), cost.PrefillMs(1000, 500, 0), 1e-9);
}

}  // namespace
}  // namespace hearsay::node
