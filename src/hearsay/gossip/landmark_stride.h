// LandmarkStrideRule: the landmark stride an origin publishes its cache summary at, as a function
// of the cluster size it sees.
//
// Every node replicates every origin's landmarks, so the summary entries a node receives grow as
// N x E / stride (N members, E cache events per second each). Holding N / stride at or below
// budget_members / base bounds them at what a cluster of budget_members receives at the base
// stride: the stride is `base` up to budget_members members and doubles each time the cluster
// doubles beyond that (a power-of-two multiple of base, so landmarks at a coarser stride are a
// subset of those at a finer one). It grows at once, and shrinks only when the cluster is a
// quarter below the size that required the current stride, so a membership that hovers around a
// threshold does not make the origin re-publish its summary back and forth (each change is a run
// of removals or additions that every peer applies whole). docs/gossip.md, "Cache summary:
// landmarks", gives the figures.
//
// Thread-safety: a plain value with pure functions.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace hearsay::gossip {

struct LandmarkStrideRule {
  uint32_t base = 16;           // the stride up to budget_members members (>= 1)
  size_t budget_members = 128;  // cluster size the summary budget is calibrated on (>= 1)
  uint32_t max_stride = 4096;   // never coarser than this (nor than base)

  // The stride a cluster of `members` (this node included) calls for, without hysteresis.
  uint32_t Target(size_t members) const {
    uint64_t stride = std::max<uint32_t>(base, 1);
    const uint64_t cap_stride = std::max<uint64_t>(max_stride, stride);
    uint64_t covered = std::max<size_t>(budget_members, 1);
    while (members > covered && stride * 2 <= cap_stride) {
      stride *= 2;
      covered *= 2;
    }
    return static_cast<uint32_t>(stride);
  }

  // The stride to use next, given the one in use: the target if coarser; a finer target only
  // once a cluster a third larger than `members` would still call for it (the hysteresis).
  uint32_t Next(size_t members, uint32_t current) const {
    const uint32_t target = Target(members);
    if (target >= current) return target;
    const uint32_t relaxed = Target(members + members / 3);
    return relaxed < current ? relaxed : current;
  }
};

}  // namespace hearsay::gossip
