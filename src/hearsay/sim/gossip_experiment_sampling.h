// What the gossip experiment (gossip_experiment.h) samples while it runs: how fast sampled cache
// entries converge, how accurately a node's view predicts a peer's matched prefix, the nodes'
// local health, and the traffic of the measured window.
//
// Thread-safety: none; driven from the experiment's single thread.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "hearsay/env/rng.h"
#include "hearsay/env/time.h"
#include "hearsay/prefix/block_event.h"
#include "hearsay/sim/gossip_cluster.h"
#include "hearsay/sim/gossip_experiment_workload.h"

namespace hearsay::sim::gossip_experiment {

// Bytes by message type (index 0: piggybacked membership updates).
using BytesByType = std::array<double, 16>;

// Tracks sampled new landmark entries until 99% of the other live nodes hold them.
class ConvergenceSampler {
 public:
  ConvergenceSampler(int nodes, double sample_prob) : n_(nodes), sample_prob_(sample_prob) {}

  // Samples, each with probability sample_prob, the landmark entries (index a multiple of
  // `stride`) that node `origin` added at `at`, drawing from `rng`.
  void Offer(int origin, const std::vector<prefix::BlockEvent>& events, uint32_t stride,
             Duration at, Rng& rng);
  // At `t`: records the samples that converged, were evicted first, or waited over 30 s.
  void Step(Duration t, const GossipCluster& c, const std::vector<SyntheticCache>& caches);

  // Seconds each finished sample took (30 for a censored one).
  const std::vector<double>& convergence() const { return convergence_; }
  uint64_t censored() const { return censored_; }

 private:
  struct Sample {
    int origin;
    prefix::BlockKey key;
    Duration t0;
    std::vector<bool> known;  // by node: has held the entry since t0
  };

  const int n_;
  const double sample_prob_;
  std::vector<Sample> active_;
  std::vector<double> convergence_;
  uint64_t censored_ = 0;
  uint64_t evicted_first_ = 0;
};

// Asks random (node, peer, prompt) triples how many blocks the node thinks the peer holds.
class AccuracySampler {
 public:
  static constexpr int kRounds = 10;

  // `queries` in all over kRounds rounds; `base_stride` is assumed for a peer not heard yet.
  AccuracySampler(int nodes, int queries, uint32_t base_stride)
      : n_(nodes), queries_(queries), base_stride_(base_stride) {}

  // Runs the next round when `into` (time into the measured window of length `measured`) has
  // reached its share of the window.
  void MaybeQuery(Duration into, Duration measured, const GossipCluster& c,
                  const PromptModel& prompts, const std::vector<SyntheticCache>& caches, Rng& rng);

  uint64_t total() const { return total_; }
  uint64_t ok() const { return ok_; }
  uint64_t exact() const { return exact_; }
  uint64_t nonzero() const { return nonzero_; }
  double abs_err() const { return abs_err_; }
  double stride_sum() const { return stride_sum_; }

 private:
  const int n_;
  const int queries_;
  const uint32_t base_stride_;
  int rounds_done_ = 0;
  uint64_t total_ = 0, ok_ = 0, exact_ = 0, nonzero_ = 0;
  double abs_err_ = 0;
  double stride_sum_ = 0;
};

// The live nodes' local health score over the measured window.
class HealthSampler {
 public:
  void Sample(const GossipCluster& c);
  double mean() const { return samples_ ? sum_ / static_cast<double>(samples_) : 0.0; }
  int max() const { return max_; }

 private:
  double sum_ = 0;
  uint64_t samples_ = 0;
  int max_ = 0;
};

// The traffic counters at the start and the end of the measured window.
class TrafficMeter {
 public:
  // What the replicas received, summed over nodes.
  struct Received {
    uint64_t entries = 0, redundant = 0, runs = 0, snapshots = 0, stale = 0;
  };

  explicit TrafficMeter(int nodes) : n_(nodes), received_before_(static_cast<size_t>(nodes)) {}

  bool started() const { return started_; }
  bool ended() const { return ended_; }
  // Reads the live nodes' counters at the start of the measured window.
  void StartWindow(const GossipCluster& c);
  // Adds the live nodes' counters at the end of the measured window.
  void EndWindow(const GossipCluster& c);
  // Adds node `victim`'s counters just before it crashes (`in_window`: within the window).
  void CountCrashed(const GossipCluster& c, int victim, bool in_window);

  double bytes_before() const { return bytes_before_; }
  double msgs_before() const { return msgs_before_; }
  double bytes_after() const { return bytes_after_; }
  double msgs_after() const { return msgs_after_; }
  // What the nodes up at the window's end received during it.
  const Received& window() const { return window_; }
  const BytesByType& types_before() const { return types_before_; }
  const BytesByType& types_after() const { return types_after_; }

 private:
  void SumCounters(const GossipCluster& c, double* bytes, double* msgs) const;

  const int n_;
  bool started_ = false;
  bool ended_ = false;
  double bytes_before_ = 0, msgs_before_ = 0, bytes_after_ = 0, msgs_after_ = 0;
  std::vector<Received> received_before_;
  Received window_;
  BytesByType types_before_{}, types_after_{};
};

}  // namespace hearsay::sim::gossip_experiment
