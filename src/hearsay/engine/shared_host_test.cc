// Engines on one host share its cores (processor sharing, shared_host.h).
#include "hearsay/engine/shared_host.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "hearsay/engine/sim_engine.h"
#include "hearsay/engine/sim_engine_test_util.h"
#include "hearsay/simenv/virtual_scheduler.h"

namespace hearsay::engine {
namespace {

// Prefill of 1,000 tokens under the default cost model: 6 + 30 + 0.75 = 36.75 ms alone.
constexpr double kAloneMs = 36.75;

struct Host {
  explicit Host(size_t engines, double cores, double contention = 0) {
    SimEngineOptions o;
    if (cores > 0) o.host = std::make_shared<SharedHost>(cores, contention);
    for (size_t i = 0; i < engines; ++i) {
      engines_.push_back(SimEngine::Create(sched, o, Keyer()).value());
    }
  }
  // Prefills 1,000 tokens on engine i at `at_ms`.
  void Prefill(size_t i, double at_ms) {
    sched.RunAfter(FromMillis(at_ms), [this, i] {
      ASSERT_TRUE(
          engines_[i]->Submit(Req(i + 1, Tokens(static_cast<uint32_t>(i), 1000)), &rec).ok());
    });
  }
  double FirstMs(size_t i) const { return ToMillis(rec.at(i + 1).first_at - TimePoint{}); }

  simenv::VirtualScheduler sched;
  Recorder rec{sched};
  std::vector<std::unique_ptr<SimEngine>> engines_;
};

TEST(SharedHostTest, EnginesWithinTheCoresRunAtFullSpeed) {
  Host h(2, 2);
  h.Prefill(0, 0);
  h.Prefill(1, 0);
  h.sched.RunUntilIdle();
  EXPECT_NEAR(h.FirstMs(0), kAloneMs, 1e-6);
  EXPECT_NEAR(h.FirstMs(1), kAloneMs, 1e-6);
}

TEST(SharedHostTest, MoreEnginesThanCoresShareThem) {
  // Four engines at once on two cores: each at half speed.
  Host h(4, 2);
  for (size_t i = 0; i < 4; ++i) h.Prefill(i, 0);
  h.sched.RunUntilIdle();
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(h.FirstMs(i), 2 * kAloneMs, 1e-6) << i;
  // Without a shared host, each has a machine of its own.
  Host apart(4, 0);
  for (size_t i = 0; i < 4; ++i) apart.Prefill(i, 0);
  apart.sched.RunUntilIdle();
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(apart.FirstMs(i), kAloneMs, 1e-6) << i;
}

TEST(SharedHostTest, AnIterationSpeedsUpWhenAnotherEnds) {
  // One core. Engine 0 starts alone; engine 1 joins at 10 ms, and both run at half speed until
  // engine 0's work is done: 10 ms alone + 2 x 26.75 ms shared = 63.5 ms. Engine 1 has 10 ms of
  // work left then, alone again: 73.5 ms.
  Host h(2, 1);
  h.Prefill(0, 0);
  h.Prefill(1, 10);
  h.sched.RunUntilIdle();
  EXPECT_NEAR(h.FirstMs(0), 10 + 2 * (kAloneMs - 10), 1e-6);
  EXPECT_NEAR(h.FirstMs(1), 10 + 2 * (kAloneMs - 10) + 10, 1e-6);
  // The engines measure the speed they got: engine 1's prefill took 63.5 ms for 36.75 ms of work.
  EXPECT_GT(h.engines_[1]->Load().prefill_ms_per_token,
            CostModel(SimEngineOptions{}.cost).params().a_ms_per_token);
}

TEST(SharedHostTest, AnEngineGoneMidIterationLeavesTheHost) {
  Host h(2, 1);
  h.Prefill(0, 0);
  h.Prefill(1, 0);
  h.sched.RunAfter(FromMillis(10), [&h] { h.engines_[1].reset(); });
  h.sched.RunUntilIdle();
  // 10 ms at half speed (5 ms of work), then alone.
  EXPECT_NEAR(h.FirstMs(0), 10 + (kAloneMs - 5), 1e-6);
}

TEST(SharedHostTest, PrefillsAtOnceSlowEachOtherByTheContention) {
  // Two cores, contention 0.5: two prefills at once each run at 1 / 1.5 of full speed.
  Host h(2, 2, 0.5);
  h.Prefill(0, 0);
  h.Prefill(1, 0);
  h.sched.RunUntilIdle();
  EXPECT_NEAR(h.FirstMs(0), 1.5 * kAloneMs, 1e-6);
  EXPECT_NEAR(h.FirstMs(1), 1.5 * kAloneMs, 1e-6);
  // Four on two cores: half speed from the cores, and two cores' worth of contention.
  Host four(4, 2, 0.5);
  for (size_t i = 0; i < 4; ++i) four.Prefill(i, 0);
  four.sched.RunUntilIdle();
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(four.FirstMs(i), 2 * 1.5 * kAloneMs, 1e-6) << i;
}

TEST(SharedHostTest, APrefillAloneRunsAtFullSpeedWhateverTheContention) {
  Host h(2, 2, 0.5);
  h.Prefill(0, 0);
  h.Prefill(1, 100);  // after engine 0's prefill ended
  h.sched.RunUntilIdle();
  EXPECT_NEAR(h.FirstMs(0), kAloneMs, 1e-6);
  EXPECT_NEAR(h.FirstMs(1), 100 + kAloneMs, 1e-6);
}

}  // namespace
}  // namespace hearsay::engine
