// PoolSimilarSpeeds: how a node prices members by their measured engine speed
// (Candidate::cost_scale) without pricing measurement noise.
//
// Each node measures its own engine's speed from its answers and gossips it. Identical engines
// still measure apart: the figure moves with each engine's recent mix of prompts (short computed
// parts after cache hits against whole prompts after misses) and with whatever else runs on the
// machine; four identical llama.cpp servers measured up to 1.8x apart in the decision records of
// `hearsay demo --engine llama`. Priced as such, a "faster" member with no cache beat the cache
// holder, and hits were lost for nothing. So members are grouped into classes, the sorted scales
// split wherever one is more than `band` times the one before it, and each member is priced at
// its class's median: alike engines share one price however their measurements wander, while
// other hardware (an A100 is 2.7x an H100 per prefill token, a consumer card 3x an A100) forms a
// class of its own.
#pragma once

#include <span>
#include <utility>

namespace hearsay::node {

// `scales`: the members' measured cost scales; entries <= 0 (not measured yet) take no part and
// are left alone. `band` > 1.
void PoolSimilarSpeeds(std::span<double> scales, double band);

// The median of the measured scales (entries > 0), or 0 when none is measured: the price of a
// member not measured yet (a node's own engine before its first answer, a peer that just
// joined). The preset's speed would be a guess off by the whole factor between the preset and
// the hardware (100x for a CPU llama.cpp), and the unmeasured member would win or lose every
// comparison on it: at the start of `hearsay demo --engine llama`, entry nodes priced their own
// unmeasured engine 22x faster than their measured peers and served prompts that a peer held.
double TypicalScale(std::span<const double> scales);

}  // namespace hearsay::node
