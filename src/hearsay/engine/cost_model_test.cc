#include "hearsay/engine/cost_model.h"

#include <gtest/gtest.h>

#include <string>

namespace hearsay::engine {
namespace {

CostModel H100() { return CostModel::FromPreset("h100-llama3-8b").value(); }

TEST(CostModelTest, PresetsHaveTheIssueCoefficients) {
  EXPECT_EQ(H100().params(), (CostParams{6.0, 0.03, 1.5e-6, 0.05, 4e-5}));
  EXPECT_EQ(CostModel::FromPreset("a100-llama3-8b")->params(),
            (CostParams{15.0, 0.08, 5e-6, 0.05, 6.3e-5}));
  const CostParams consumer = CostModel::FromPreset("consumer")->params();
  EXPECT_EQ(consumer.t0_ms, 30.0);
  EXPECT_EQ(consumer.a_ms_per_token, 0.25);
  // Every consumer coefficient is at least the A100's: slower hardware.
  const CostParams a100 = CostModel::FromPreset("a100-llama3-8b")->params();
  EXPECT_GE(consumer.b_ms_per_token2, a100.b_ms_per_token2);
  EXPECT_GE(consumer.d1_ms_per_seq, a100.d1_ms_per_seq);
  EXPECT_GE(consumer.d2_ms_per_ctx_token, a100.d2_ms_per_ctx_token);
}

TEST(CostModelTest, PresetNamesAllResolve) {
  ASSERT_EQ(CostModel::PresetNames().size(), 4u);
  for (std::string_view name : CostModel::PresetNames()) {
    EXPECT_TRUE(CostModel::FromPreset(name).ok()) << name;
  }
}

TEST(CostModelTest, ExplicitCoefficientsRoundTripThroughSpec) {
  for (std::string_view name : CostModel::PresetNames()) {
    const CostModel preset = CostModel::FromPreset(name).value();
    Result<CostModel> back = CostModel::FromPreset(preset.Spec());
    ASSERT_TRUE(back.ok()) << preset.Spec() << ": " << back.status().message();
    EXPECT_EQ(back->params(), preset.params()) << preset.Spec();
  }
  EXPECT_EQ(CostModel::FromPreset("h100-llama3-8b")->Spec(),
            "t0=6,a=0.03,b=1.5e-06,d1=0.05,d2=4e-05");
  Result<CostModel> any_order = CostModel::FromPreset("d2=0,d1=2.5,b=0,a=0.31,t0=3");
  ASSERT_TRUE(any_order.ok());
  EXPECT_EQ(any_order->params(), (CostParams{3, 0.31, 0, 2.5, 0}));
}

TEST(CostModelTest, MalformedCoefficientsSayWhatIsWrong) {
  for (std::string_view bad :
       {"t0=1,a=1,b=1,d1=1", "t0=1,a=1,b=1,d1=1,d2=1,t0=2", "t0=1,a=-1,b=1,d1=1,d2=1",
        "t0=1,a=x,b=1,d1=1,d2=1", "t0=1,a=1,b=1,d1=1,d2=inf", "t0=1,a=1,b=1,d1=1,d2=1,e=1",
        "t0=1,,a=1,b=1,d1=1,d2=1", "t0=1,a=1,b=1,d1=1,d2="}) {
    Result<CostModel> m = CostModel::FromPreset(bad);
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_NE(CostModel::FromPreset("t0=1,a=1,b=1,d1=1").status().message().find("d2= is missing"),
            std::string::npos);
}

TEST(CostModelTest, UnknownPresetListsValidNames) {
  Result<CostModel> r = CostModel::FromPreset("h200");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  const std::string msg = r.status().message();
  EXPECT_NE(msg.find("h200"), std::string::npos);
  for (std::string_view name : CostModel::PresetNames()) {
    EXPECT_NE(msg.find(name), std::string::npos) << msg;
  }
}

TEST(CostModelTest, CreateRejectsNegativeAndNonFinite) {
  EXPECT_TRUE(CostModel::Create({1, 1, 1, 1, 1}).ok());
  EXPECT_EQ(CostModel::Create({-1, 1, 1, 1, 1}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(CostModel::Create({1, 1, 1, 1, 1.0 / 0.0}).ok());
}

TEST(CostModelTest, IterationTimeMatchesHandComputedCases) {
  const CostModel m = H100();
  // One 1000-token prompt, nothing cached: 6 + 0.03*1000 + 1.5e-6*1000*500 = 36.75 ms.
  IterationShape prefill;
  prefill.AddPrefill(1000, 0);
  EXPECT_DOUBLE_EQ(m.IterationMs(prefill), 36.75);

  // A 100-token suffix after 500 cached tokens plus two decoding sequences of 600 and 400
  // context: 6 + 3 + 1.5e-6*100*550 + 0.05*2 + 4e-5*1000 = 9.2225 ms.
  IterationShape mixed;
  mixed.AddPrefill(100, 500);
  mixed.AddDecode(600);
  mixed.AddDecode(400);
  EXPECT_EQ(mixed.prefill_tokens, 100u);
  EXPECT_EQ(mixed.decode_batch, 2u);
  EXPECT_EQ(mixed.decode_context, 1000u);
  EXPECT_DOUBLE_EQ(mixed.prefill_attention, 55000.0);
  EXPECT_DOUBLE_EQ(m.IterationMs(mixed), 6 + 3 + 0.0825 + 0.1 + 0.04);
  EXPECT_EQ(m.IterationTime(mixed), FromMillis(9.2225));

  // Decode only, A100: 15 + 0.05*8 + 6.3e-5*8000 = 15.904.
  const CostModel a100 = CostModel::FromPreset("a100-llama3-8b").value();
  IterationShape decode;
  for (int i = 0; i < 8; ++i) decode.AddDecode(1000);
  EXPECT_DOUBLE_EQ(a100.IterationMs(decode), 15.904);
  EXPECT_DOUBLE_EQ(a100.DecodeStepMs(8, 8000), 15.904);
}

TEST(CostModelTest, ChunkingKeepsAttentionWorkAndAddsOverhead) {
  const CostModel m = H100();
  // Prefilling 10000 tokens after 2000 cached in chunks of 4096 costs the same a and b terms as
  // in one piece, plus one t0 per chunk.
  IterationShape whole;
  whole.AddPrefill(10000, 2000);
  double chunked_ms = 0;
  uint64_t done = 0;
  while (done < 10000) {
    const uint64_t chunk = std::min<uint64_t>(4096, 10000 - done);
    IterationShape s;
    s.AddPrefill(chunk, 2000 + done);
    chunked_ms += m.IterationMs(s);
    done += chunk;
  }
  EXPECT_NEAR(chunked_ms, m.IterationMs(whole) + 2 * 6.0, 1e-9);
  EXPECT_NEAR(m.PrefillMs(10000, 2000, 4096), chunked_ms, 1e-9);
  EXPECT_NEAR(m.PrefillMs(10000, 2000, 0), m.IterationMs(whole), 1e-9);
  EXPECT_NEAR(m.PrefillWorkMs(10000, 2000), m.IterationMs(whole) - 6.0, 1e-9);
  // A fully cached prompt still takes one pass.
  EXPECT_DOUBLE_EQ(m.PrefillMs(0, 500, 8192), 6.0);
}

TEST(CostModelTest, CachedTokensMakePrefillCheaper) {
  const CostModel m = H100();
  EXPECT_LT(m.PrefillMs(120, 500, 8192), m.PrefillMs(620, 0, 8192));
}

TEST(CostModelTest, QueueWait) {
  const CostModel m = H100();
  EXPECT_EQ(m.QueueWaitMs(0, 0, 8192, 4, 4000), 0.0);
  // 10000 pending tokens with a 4096 budget and 96 decode steps per iteration: 4000 prefill
  // tokens per iteration -> 3 iterations, each 6 + 0.05*96 + 4e-5*9600, plus the marginal work.
  const double work = m.PrefillWorkMs(10000, 0);
  EXPECT_DOUBLE_EQ(m.QueueWaitMs(10000, work, 4096, 96, 9600),
                   3 * (6 + 0.05 * 96 + 4e-5 * 9600) + work);
  // Unlimited budget: a single iteration.
  EXPECT_DOUBLE_EQ(m.QueueWaitMs(10000, work, 0, 0, 0), 6 + work);
}

}  // namespace
}  // namespace hearsay::engine
