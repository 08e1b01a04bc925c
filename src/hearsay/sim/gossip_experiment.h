// The gossip experiment behind `hearsay sim gossip`: N nodes in virtual time, each fed E cache
// events per second by a synthetic prefix cache, with uniform packet loss; one node is killed a
// third of the way in. It reports how fast new cache entries spread, how fast the killed node is
// declared dead, false deaths, bandwidth, and how accurately a node's gossip view predicts each
// peer's matched prefix for realistic prompts.
//
// Workload: 200 shared system prompts (4-64 blocks) and 20,000 conversations (Zipf 0.9, 4-128
// blocks each) chained after one system prompt each; every node draws its own requests from that
// distribution into an LRU prefix cache of `cache_blocks` blocks (leaf-first eviction, like the
// radix tree), and publishes the resulting add/remove events to its gossip node. Requests are
// issued every 10 ms until the node has produced `churn` events per second.
// Thread-safety: none; deterministic for a given options struct.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "hearsay/gossip/config.h"

namespace hearsay::sim {

struct GossipExperimentOptions {
  int nodes = 32;
  double loss = 0;         // per-message loss on every link, [0, 1]
  double duration_s = 30;  // measured virtual time, after the warm-up
  // Virtual time between the start (every node joins at once) and the measured window. With
  // signed membership the join's dissemination outlasts the default at N = 100 (join_s, and the
  // updates after it); a longer warm-up measures the steady state alone.
  double warmup_s = 5;
  double churn = 1000;  // cache events (adds + removes) per node per second
  uint64_t seed = 1;
  uint32_t landmark_stride = 16;  // base summary granularity, in blocks (1 = every block)
  // gossip::Config::landmark_budget_members: above this many members each node's stride grows.
  size_t landmark_budget_members = gossip::Config{}.landmark_budget_members;
  uint32_t cache_blocks = 4096;  // per-node cache capacity, in blocks
  int accuracy_queries = 2000;   // (node, peer, prompt) samples for summary_accuracy
  // Replicas as views of shared per-origin histories (O(N) memory; see gossip/shared_history.h).
  // Same figures as private replicas (GossipExperimentTest.SharedReplicasGiveTheSameFigures).
  bool share_replicas = true;
  bool relayed_evidence = true;  // gossip::Config::relayed_evidence (off: the session-3 probe)
  double silence_probe_mult = gossip::Config{}.silence_probe_mult;  // 0: off
  // gossip::Config::signatures and sign_interval. Ed25519 runs real cryptography and needs private
  // replicas (it turns share_replicas off); modeled charges the bytes and counts the work only.
  gossip::SignatureMode signatures = gossip::SignatureMode::kOff;
  double sign_interval_s = 1.0;
};

// Runs the experiment; returns one JSON object with the options and:
//   convergence_median_s  median over sampled new landmark entries of the time until 99% of the
//                         other live nodes hold it (entries evicted first are not counted);
//                         convergence_p99_s is its deprecated name, with the same value
//   convergence_p99_s_tail  the 99th percentile of that time over the samples
//   detect_s              time until every live node declared the killed node dead
//   false_deaths          (observer, healthy member) pairs ever declared dead
//   join_s                time from the start until every node holds every other as alive
//                         (50 ms steps; -1 if not before the kill, which ends the chance)
//   bytes_per_node_s, msgs_per_node_s   sent per node per second (sealed bytes)
//   summary_accuracy      fraction of sampled queries with |estimate - truth| < s blocks, s
//                         being the queried peer's own landmark stride as the querying node
//                         knows it (each peer's stated granularity)
//   summary_stride_mean   the mean of that s over the queries; landmark_stride_mean /_max the
//                         nodes' own strides at the end (restrides: stride changes, summed)
//   summary_exact         fraction with estimate == truth
//   probe_failure_share, probe_heard_share   probes that failed / were saved by a message from
//                         the target; local_health_mean/max over the measured window
// and a few more diagnostics; with signatures, a "signatures" object (signatures, verifications
// and commitment updates per node-second, drops, and the CPU they cost per node, from the counts
// and this machine's measured CPU cost of each operation). Errors (bad options) come back as
// {"error": "..."}.
nlohmann::json RunGossipExperiment(const GossipExperimentOptions& options);

}  // namespace hearsay::sim
