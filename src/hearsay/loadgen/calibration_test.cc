// Calibration against the fake upstream in real time: the fit must recover the fake's delay model.
// The fake's delays are the thing measured (no sleep synchronises anything), so the bounds are
// tolerances around the configured speeds.
#include "hearsay/loadgen/calibration.h"

#include <gtest/gtest.h>

#include "hearsay/testkit/fake_openai_upstream.h"

namespace hearsay::loadgen {
namespace {

using namespace std::chrono_literals;

CalibrationOptions Options(const testkit::FakeOpenAiUpstream& fake) {
  CalibrationOptions o;
  o.host_port = fake.address();
  o.model = "fake-model";
  o.prompt_words = {40, 80, 160, 320};
  o.repeats = 3;
  o.decode_requests = 2;
  o.decode_tokens = 24;
  o.budget = 30s;
  return o;
}

TEST(CalibrationTest, RecoversTheFakesDelayModel) {
  testkit::FakeOpenAiUpstream fake;
  // The fake reports half of every prompt as cached and prices only the other half.
  fake.set_delays({.base_ms = 4, .prefill_ms_per_token = 0.5, .decode_ms_per_token = 6});
  Result<CalibrationRun> run = RunCalibration(Options(fake));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->failed, 0u) << run->first_error;
  EXPECT_EQ(run->prefill.size(), 12u);
  EXPECT_EQ(run->decode.size(), 2u);
  EXPECT_EQ(run->requests, 1u + 12 + 2);
  Result<CalibrationFit> fit = FitCalibration(*run);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  EXPECT_NEAR(fit->prefill_ms_per_token, 0.5, 0.1);
  // The fake counts words as tokens and so does the node's tokenizer.
  EXPECT_NEAR(fit->prefill_ms_per_node_token, 0.5, 0.1);
  EXPECT_NEAR(fit->decode_ms_per_token, 6, 1.5);
  EXPECT_GE(fit->ttft_intercept_ms, 2);
  EXPECT_LT(fit->ttft_intercept_ms, 30);
  EXPECT_EQ(fit->decode_gaps, 2u * 23);
}

TEST(CalibrationTest, ADeadEngineFailsAtTheWarmUp) {
  testkit::FakeOpenAiUpstream fake;
  fake.set_mode(testkit::FakeOpenAiUpstream::Mode::kServerError);
  Result<CalibrationRun> run = RunCalibration(Options(fake));
  EXPECT_EQ(run.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(run.status().message().find("http_500"), std::string::npos) << run.status().message();
  EXPECT_EQ(fake.completions(), 1);
}

TEST(CalibrationTest, TheBudgetStopsTheRunAndTheFitSaysWhatIsMissing) {
  testkit::FakeOpenAiUpstream fake;
  fake.set_delays({.base_ms = 30});
  CalibrationOptions o = Options(fake);
  o.budget = 1ms;  // the warm-up is always sent; nothing after it
  Result<CalibrationRun> run = RunCalibration(o);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_TRUE(run->budget_hit);
  EXPECT_EQ(run->requests, 1u);
  EXPECT_EQ(FitCalibration(*run).status().code(), StatusCode::kFailedPrecondition);
}

TEST(CalibrationTest, RefusesBadOptionsAndMakesUniquePrompts) {
  testkit::FakeOpenAiUpstream fake;
  CalibrationOptions o = Options(fake);
  EXPECT_TRUE(ValidateCalibrationOptions(o).ok());
  o.prompt_words = {64, 64};
  EXPECT_FALSE(ValidateCalibrationOptions(o).ok());
  o.prompt_words = {64, 128};
  o.decode_tokens = 1;
  EXPECT_FALSE(ValidateCalibrationOptions(o).ok());
  uint64_t state = 7;
  const std::string a = CalibrationPrompt(10, state);
  const std::string b = CalibrationPrompt(10, state);
  EXPECT_NE(a.substr(0, 12), b.substr(0, 12));
  EXPECT_EQ(std::count(a.begin(), a.end(), ' '), 9);
}

}  // namespace
}  // namespace hearsay::loadgen
