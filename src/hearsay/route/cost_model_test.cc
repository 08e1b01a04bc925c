#include "hearsay/route/cost_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "hearsay/route/ttft_estimate.h"

namespace hearsay::route {
namespace {

TEST(PrefillCostModel, PrefillFollowsTheEngineFormula) {
  PrefillCostModel m;  // h100-llama3-8b figures
  EXPECT_DOUBLE_EQ(m.PrefillMs(0, 0), 6.0);
  EXPECT_DOUBLE_EQ(m.PrefillMs(1000, 0), 6.0 + 30.0 + 1.5e-6 * 1000 * 500);
  EXPECT_DOUBLE_EQ(m.PrefillMs(100, 900), 6.0 + 3.0 + 1.5e-6 * 100 * 950);
  // Cached context makes each new token dearer, but far cheaper than computing the context.
  EXPECT_GT(m.PrefillMs(100, 900), m.PrefillMs(100, 0));
  EXPECT_LT(m.PrefillMs(100, 900), m.PrefillMs(1000, 0));
}

TEST(PrefillCostModel, QueueWaitGrowsWithQueueAndIsZeroWhenIdle) {
  PrefillCostModel m;
  EXPECT_DOUBLE_EQ(m.QueueWaitMs(0, 0, 0, 0), 0.0);
  const double one = m.QueueWaitMs(1, 1000, 0, 0);
  const double two = m.QueueWaitMs(2, 2000, 0, 0);
  EXPECT_NEAR(one, 0.5 * 6 + m.PrefillMs(1000, 0), 1e-9);
  EXPECT_GT(two, one);
  EXPECT_GT(m.QueueWaitMs(1, 1000, 8, 8000), one);  // a decode batch slows every iteration
  EXPECT_GT(m.QueueWaitMs(0, 0, 4, 0), 0.0);        // something runs: wait for its iteration
  EXPECT_GT(m.QueueWaitMs(0, 500, 0, 0), 0.0);      // tokens without a count still cost
}

TEST(PrefillCostModel, ValidateRejectsNegativeAndNonFinite) {
  EXPECT_TRUE(PrefillCostModel{}.Validate().ok());
  PrefillCostModel m;
  m.b_ms_per_token2 = -1;
  EXPECT_EQ(m.Validate().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.Validate().message().find("b_ms_per_token2"), std::string::npos);
  m = {};
  m.t0_ms = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(m.Validate().ok());
}

TEST(PrefillCostModel, ScaleFromMeasuredComparesWithThePerTokenCost) {
  PrefillCostModel m;
  m.a_ms_per_token = 0.03;
  EXPECT_DOUBLE_EQ(m.ScaleFromMeasured(3.0, 1.0), 100.0);
  EXPECT_DOUBLE_EQ(m.ScaleFromMeasured(0.03, 7.0), 1.0);
  // Not measured yet, or nonsense: the fallback.
  EXPECT_DOUBLE_EQ(m.ScaleFromMeasured(0.0, 7.0), 7.0);
  EXPECT_DOUBLE_EQ(m.ScaleFromMeasured(-1.0, 7.0), 7.0);
  EXPECT_DOUBLE_EQ(m.ScaleFromMeasured(std::nan(""), 7.0), 7.0);
  m.a_ms_per_token = 0;
  EXPECT_DOUBLE_EQ(m.ScaleFromMeasured(3.0, 7.0), 7.0);
}

}  // namespace
}  // namespace hearsay::route

namespace hearsay::route {
namespace {

TEST(PrefillCostModel, DecodeScaleComparesWithTheModelsDecodeIteration) {
  const PrefillCostModel m;  // t0 6 ms, d1 0.05 ms per sequence, d2 4e-5 ms per context token
  const double iteration = 6.0 + 0.05 * 4 + 4e-5 * 10000;
  EXPECT_DOUBLE_EQ(m.DecodeScaleFromMeasured(2 * iteration, 4, 10000, 0), 2.0);
  // An idle engine is priced as a batch of one.
  EXPECT_DOUBLE_EQ(m.DecodeScaleFromMeasured(6.05, 0, 0, 0), 1.0);
  EXPECT_DOUBLE_EQ(m.DecodeScaleFromMeasured(0, 4, 10000, 3.0), 3.0);
  EXPECT_DOUBLE_EQ(m.DecodeScaleFromMeasured(std::nan(""), 4, 10000, 3.0), 3.0);
}

TEST(PrefillCostModel, ADecodeScalePricesOnlyTheDecodeBatch) {
  const PrefillCostModel m;
  Candidate c;
  c.cost_scale = 1.0;
  c.load.running = 8;
  c.load.running_context_tokens = 20000;
  const double base = PrefillPartMs(m, c, 1000, 0);
  const double decode = m.DecodeMs(8, 20000);
  c.decode_cost_scale = 3.0;
  EXPECT_NEAR(PrefillPartMs(m, c, 1000, 0), base + 2 * decode, 1e-9);
  // Unset (0) or nonsense: the prefill scale prices the decode batch too, as before.
  c.decode_cost_scale = std::nan("");
  EXPECT_EQ(PrefillPartMs(m, c, 1000, 0), base);
}

}  // namespace
}  // namespace hearsay::route
