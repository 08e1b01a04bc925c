// Rate-limit experiment: `hearsay sim ratelimit [--quick]`, the cluster-wide tenant rate limits
// (node/cluster_limiter.h) measured on real gossip nodes in virtual time.
//
// N entry nodes (gossip::Node on a SimNetwork, default gossip settings) each run a ClusterLimiter
// and publish its usage every 100 ms as the daemon does. One tenant limited to R requests a second
// sends Poisson traffic, `offered` times R in total, spread over the entry nodes:
//   uniform  every node the same;
//   skewed   node i in proportion to 1 / (i + 1) (Zipf);
//   shift    the first half of the nodes, then, from half-time, the second half;
//   crash    uniform, and node 0 crashes at half-time (its clients go with it).
// Traffic starts once membership has converged. The first gossip round ends when every offering
// node holds a fresh usage record of every other one. Figures, as multiples of R: the admitted
// rate in the first second (every node still alone, up to N R), and after the first round the
// mean admitted rate and the largest 1-second bin; and for contrast the mean of the same run with
// per-node limits only (nothing gossiped). Goal: the mean at most 1.1 R.
//
// Thread-safety: RunRateLimitExperiment is reentrant (one simulation at a time per call).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hearsay::sim {

struct RateLimitOptions {
  std::vector<int> nodes = {8, 32};
  std::vector<std::string> spreads = {"uniform", "skewed", "shift", "crash"};
  double limit_rps = 100;  // R
  double offered = 3;      // total offered, as a multiple of R
  double duration_s = 30;  // of traffic
  uint64_t seed = 1;
  // 10 s of traffic and the 8-node uniform and skewed cases only (tests and smoke runs).
  bool quick = false;
};

struct RateLimitResult {
  int nodes = 0;
  std::string spread;
  double first_round_s = 0;       // from the start of traffic; -1 if it never completed
  double first_second_r = 0;      // admitted in the first second, / R
  double after_round_mean_r = 0;  // mean admitted rate after the first round, / R
  double after_round_max_r = 0;   // largest 1-second bin after the first round, / R
  double offered_r = 0;           // offered rate measured, / R
  // The same run with per-node limits only (no usage gossiped): the mean admitted rate after
  // the same point, / R.
  double per_node_mean_r = 0;
};

// One run.
RateLimitResult RunRateLimitCase(int nodes, const std::string& spread,
                                 const RateLimitOptions& options);
// Every case of `options` (nodes x spreads; quick: see above).
std::vector<RateLimitResult> RunRateLimitExperiment(const RateLimitOptions& options);
// The results as a Markdown table.
std::string RateLimitTable(const std::vector<RateLimitResult>& results,
                           const RateLimitOptions& options);

}  // namespace hearsay::sim
