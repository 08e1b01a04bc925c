// ClusterSpec: a simulated pool of unequal machines, as `hearsay sim --cluster` describes it.
//
//   PRESET:COUNT[:MODEL+MODEL...],...    e.g.
//   h100-llama3-8b:2:m1,a100-llama3-8b:2:m1+m2,consumer:4:m2
//
// Each group is COUNT nodes whose engines run the cost-model preset PRESET (engine/cost_model.h)
// and serve the listed models (none: the workload's one model). Nodes are numbered in the order
// of the groups. ParseClusterSpec checks everything a run needs and says what is wrong.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hearsay/common/status.h"

namespace hearsay::sim {

// The most nodes one spec may describe (as --nodes allows).
inline constexpr int kMaxClusterNodes = 4096;
// The longest model name a spec may give, in bytes.
inline constexpr size_t kMaxModelNameBytes = 128;

struct ClusterGroup {
  std::string preset;
  int count = 0;
  std::vector<std::string> models;  // empty = the workload's one model
};

struct ClusterSpec {
  std::vector<ClusterGroup> groups;

  int nodes() const;
  // Node i's group (0 <= i < nodes()).
  const ClusterGroup& GroupOf(int node) const;
  // Every model some group serves, in order of first appearance; empty if no group names one.
  std::vector<std::string> Models() const;
};

// Parses a --cluster value. INVALID_ARGUMENT naming the bad group: a malformed group, a count
// that is not in [1, kMaxClusterNodes] (or a total above it), an empty or over-long model name
// or one with bytes other than [A-Za-z0-9._/-], a model listed twice in a group, or some groups
// naming models and others not; NOT_FOUND for an unknown preset, listing the valid ones.
Result<ClusterSpec> ParseClusterSpec(std::string_view text);

}  // namespace hearsay::sim
