// The gossip fault-injection scenario: one seed draws a cluster size, fault rates and one fault
// (partition, one-way partition, crash and restart, mass restart, slow node, kill, leave), runs it
// in virtual time with every node writing load and cache events, and checks the invariants of
// GossipInvariants at every step (every 100 ms of virtual time), plus convergence after healing
// and detection of a killed node within bounds. The same seed reproduces the same run exactly
// (same trace hash). Used by the fault suite (gossip_fault_test.cc) and its soak variant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hearsay/env/time.h"
#include "hearsay/gossip/state_signing.h"

namespace hearsay::sim {

enum class GossipFault : uint8_t {
  kNone = 0,
  kPartition,        // symmetric split into two groups, healed later
  kOneWayPartition,  // one group cannot send to the other, healed later
  kCrashRestart,     // one or two nodes crash and come back with a new generation
  kMassRestart,      // every node crashes and comes back
  kSlowNode,         // one node answers everything late (but within the probe interval)
  kKill,             // one node crashes for good: all others must declare it dead
  kLeave,            // one node leaves gracefully: all others must see it left
};
inline constexpr int kNumGossipFaults = 8;

struct GossipScenarioOptions {
  // Fixed loss for every link (the "50% runs"); negative draws it in [0, 0.3].
  double fixed_loss = -1;
  // Forces one fault kind; negative draws it.
  int fault = -1;
  // Multiplies the run's length (soak runs use more).
  double length_scale = 1.0;
  int min_nodes = 5;
  int max_nodes = 8;
  bool secure = false;
  // gossip::Config::landmark_budget_members; 0 keeps the default (no change of stride at these
  // sizes). A small value makes every origin change its stride as membership changes.
  size_t landmark_budget_members = 0;
  // gossip::Config::signatures: with ed25519 every replica verifies every delta it applies.
  gossip::SignatureMode signatures = gossip::SignatureMode::kOff;
  // Bounds checked by the scenario.
  Duration converge_bound = std::chrono::seconds(20);
  Duration detect_bound = std::chrono::seconds(25);
};

struct GossipScenarioResult {
  uint64_t seed = 0;
  std::string plan;  // what the seed drew, printable
  std::vector<std::string> violations;
  uint64_t trace_hash = 0;
  double converge_s = -1;  // after healing; -1 if it did not converge in the bound
  double detect_s = -1;    // kKill: until every live node saw it dead
  uint64_t false_deaths = 0;
  bool ok() const { return violations.empty(); }
};

// Runs the scenario of `seed`.
GossipScenarioResult RunGossipScenario(uint64_t seed, const GossipScenarioOptions& options);

}  // namespace hearsay::sim
