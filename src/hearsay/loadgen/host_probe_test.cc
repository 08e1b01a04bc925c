// The host probe against fake engines in real time: every sample taken, alone and together, with
// the engine's token count; a failing engine or bad options end it with a clear error.
#include "hearsay/loadgen/host_probe.h"

#include <gtest/gtest.h>

#include "hearsay/testkit/fake_openai_upstream.h"

namespace hearsay::loadgen {
namespace {

TEST(HostProbeTest, SamplesEachEngineAloneThenAllAtOnce) {
  testkit::FakeOpenAiUpstream a, b;
  for (auto* fake : {&a, &b}) fake->set_delays({.base_ms = 5, .prefill_ms_per_token = 0.1});
  HostProbeOptions o;
  o.engines = {a.address(), b.address()};
  o.model = "fake-model";
  o.prompt_words = 40;
  o.rounds = 2;
  Result<HostProbe> probe = RunHostProbe(o);
  ASSERT_TRUE(probe.ok()) << probe.status().ToString();
  ASSERT_EQ(probe->alone.size(), 4u);
  ASSERT_EQ(probe->together.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(probe->alone[i].engine, i % 2);
    EXPECT_EQ(probe->together[i].engine, i % 2);
  }
  for (const auto* samples : {&probe->alone, &probe->together}) {
    for (const ProbeSample& s : *samples) {
      EXPECT_EQ(s.prompt_tokens, 40u);     // the fake counts words
      EXPECT_GE(s.ttft_ms, 5 + 0.1 * 20);  // its delay for the half it does not call cached
    }
  }
  EXPECT_EQ(a.completions(), 4);
  EXPECT_EQ(b.completions(), 4);
}

TEST(HostProbeTest, AFailingEngineOrBadOptionsEndIt) {
  testkit::FakeOpenAiUpstream ok, failing;
  failing.set_mode(testkit::FakeOpenAiUpstream::Mode::kServerError);
  HostProbeOptions o;
  o.engines = {ok.address(), failing.address()};
  o.model = "fake-model";
  o.prompt_words = 10;
  Result<HostProbe> probe = RunHostProbe(o);
  EXPECT_EQ(probe.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(probe.status().message().find(failing.address()), std::string::npos)
      << probe.status().message();

  o.engines.clear();
  EXPECT_EQ(RunHostProbe(o).status().code(), StatusCode::kInvalidArgument);
  o.engines = {ok.address()};
  o.rounds = 0;
  EXPECT_EQ(RunHostProbe(o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hearsay::loadgen
