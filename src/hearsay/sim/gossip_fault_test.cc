// The gossip fault-injection suite: many seeds, each drawing its own faults (see
// gossip_scenario.h), invariants checked at every step. A failing seed prints its plan; rerun it
// alone with HEARSAY_GOSSIP_SEED=<seed>. HEARSAY_SOAK=1 runs ten times the seeds, longer.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "hearsay/sim/gossip_scenario.h"

namespace hearsay::sim {
namespace {

bool Soak() {
  const char* s = std::getenv("HEARSAY_SOAK");
  return s != nullptr && std::string(s) == "1";
}

// Runs seeds [first, first + count) (or only HEARSAY_GOSSIP_SEED) and reports every failure.
void RunSeeds(uint64_t first, uint64_t count, const GossipScenarioOptions& options) {
  if (const char* only = std::getenv("HEARSAY_GOSSIP_SEED")) {
    first = std::strtoull(only, nullptr, 10);
    count = 1;
  }
  for (uint64_t seed = first; seed < first + count; ++seed) {
    const GossipScenarioResult r = RunGossipScenario(seed, options);
    if (std::getenv("HEARSAY_GOSSIP_VERBOSE") != nullptr) {
      std::printf("%s converge_s=%.1f detect_s=%.1f violations=%zu\n", r.plan.c_str(), r.converge_s,
                  r.detect_s, r.violations.size());
    }
    if (!r.ok()) {
      std::string all;
      for (const auto& v : r.violations) all += "\n  " + v;
      ADD_FAILURE() << "failing seed (rerun with HEARSAY_GOSSIP_SEED=" << seed << "): " << r.plan
                    << all;
    }
  }
}

TEST(GossipFaultSuite, RandomFaultsHoldInvariants) {
  GossipScenarioOptions o;
  if (Soak()) o.length_scale = 3;
  RunSeeds(1, Soak() ? 400 : 40, o);
}

TEST(GossipFaultSuite, FiftyPercentLossNoFalseDeaths) {
  GossipScenarioOptions o;
  o.fixed_loss = 0.5;
  o.fault = static_cast<int>(GossipFault::kNone);
  o.length_scale = Soak() ? 6 : 2;  // at least 30 s of 50% loss
  o.converge_bound = std::chrono::seconds(30);
  RunSeeds(1000, Soak() ? 40 : 4, o);
}

TEST(GossipFaultSuite, FiftyPercentLossKillIsDetected) {
  GossipScenarioOptions o;
  o.fixed_loss = 0.5;
  o.fault = static_cast<int>(GossipFault::kKill);
  o.converge_bound = std::chrono::seconds(30);
  o.detect_bound = std::chrono::seconds(30);
  RunSeeds(2000, Soak() ? 40 : 4, o);
}

TEST(GossipFaultSuite, EveryFaultKindOverTheRealEnvelope) {
  GossipScenarioOptions o;
  o.secure = true;
  for (int f = 0; f < kNumGossipFaults; ++f) {
    o.fault = f;
    RunSeeds(3000 + static_cast<uint64_t>(f) * 10, Soak() ? 10 : 1, o);
  }
}

// Signed origin state under every fault kind and at 50% loss: replicas apply only verified
// deltas, and the invariants (nothing skipped, convergence, detection) still hold.
TEST(GossipFaultSuite, EveryFaultKindWithSignedState) {
  GossipScenarioOptions o;
  o.secure = true;
  o.signatures = gossip::SignatureMode::kEd25519;
  for (int f = 0; f < kNumGossipFaults; ++f) {
    o.fault = f;
    RunSeeds(5000 + static_cast<uint64_t>(f) * 10, Soak() ? 10 : 1, o);
  }
  o.fault = static_cast<int>(GossipFault::kKill);
  o.fixed_loss = 0.5;
  o.converge_bound = std::chrono::seconds(30);
  o.detect_bound = std::chrono::seconds(30);
  RunSeeds(5500, Soak() ? 10 : 2, o);
}

// Every origin changes its landmark stride as the membership it sees changes (4 up to
// 2 members, 8 up to 4, 16 up to 8), and each change travels as a run applied whole.
TEST(GossipFaultSuite, StrideChangesHoldInvariants) {
  GossipScenarioOptions o;
  o.landmark_budget_members = 2;
  RunSeeds(4000, Soak() ? 100 : 20, o);
  o.fixed_loss = 0.5;
  o.converge_bound = std::chrono::seconds(30);
  o.detect_bound = std::chrono::seconds(30);
  RunSeeds(4500, Soak() ? 20 : 4, o);
}

TEST(GossipFaultSuite, SameSeedSameRun) {
  GossipScenarioOptions o;
  o.fault = static_cast<int>(GossipFault::kCrashRestart);
  const GossipScenarioResult a = RunGossipScenario(77, o);
  const GossipScenarioResult b = RunGossipScenario(77, o);
  EXPECT_EQ(a.trace_hash, b.trace_hash);
  EXPECT_EQ(a.plan, b.plan);
  EXPECT_EQ(a.converge_s, b.converge_s);
  const GossipScenarioResult c = RunGossipScenario(78, o);
  EXPECT_NE(a.trace_hash, c.trace_hash);
}

}  // namespace
}  // namespace hearsay::sim
