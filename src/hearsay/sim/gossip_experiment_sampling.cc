#include "hearsay/sim/gossip_experiment_sampling.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace hearsay::sim::gossip_experiment {

using namespace std::chrono_literals;
using prefix::BlockEvent;
using prefix::BlockKey;

void ConvergenceSampler::Offer(int origin, const std::vector<BlockEvent>& events, uint32_t stride,
                               Duration at, Rng& rng) {
  for (const auto& e : events) {
    if (e.kind == BlockEvent::Kind::kAdded && e.block_index % stride == 0 &&
        rng.Bernoulli(sample_prob_)) {
      active_.push_back({origin, e.key, at, std::vector<bool>(n_, false)});
    }
  }
}

void ConvergenceSampler::Step(Duration t, const GossipCluster& c,
                              const std::vector<SyntheticCache>& caches) {
  int live = 0;
  for (int i = 0; i < n_; ++i) live += c.up(i) ? 1 : 0;
  for (size_t s = 0; s < active_.size();) {
    Sample& sm = active_[s];
    bool done = false;
    if (!c.up(sm.origin) || !caches[sm.origin].Contains(sm.key)) {
      ++evicted_first_;
      done = true;
    } else {
      // A node that has held the entry counts as knowing it (the origin still holds it, and
      // replicas only move forward), so each step asks only the others, and stops at the
      // first miss beyond what 99% allows. Scanning every replica for every sample each step
      // was a third of the run time at N = 64 (a cache miss per replica hash table).
      const int need = static_cast<int>(std::ceil(0.99 * (live - 1)));
      const int allowed_misses = (live - 1) - need;
      int have = 0, misses = 0;
      const NodeId origin = GossipCluster::Name(sm.origin);
      for (int k = 0; k < n_; ++k) {
        if (k == sm.origin || !c.up(k)) continue;
        if (sm.known[static_cast<size_t>(k)]) {
          ++have;
          continue;
        }
        if (misses > allowed_misses) continue;
        const gossip::OriginStore* st = c.node(k).PeerStore(origin);
        if (st != nullptr && st->Contains(sm.key)) {
          sm.known[static_cast<size_t>(k)] = true;
          ++have;
        } else {
          ++misses;
        }
      }
      if (have >= need) {
        convergence_.push_back(ToSeconds(t - sm.t0));
        done = true;
      } else if (t - sm.t0 > 30s) {
        ++censored_;
        convergence_.push_back(30);
        done = true;
      }
    }
    if (done) {
      active_[s] = std::move(active_.back());
      active_.pop_back();
    } else {
      ++s;
    }
  }
}

void AccuracySampler::MaybeQuery(Duration into, Duration measured, const GossipCluster& c,
                                 const PromptModel& prompts,
                                 const std::vector<SyntheticCache>& caches, Rng& rng) {
  if (rounds_done_ >= kRounds || into < measured * (rounds_done_ + 1) / (kRounds + 1)) return;
  ++rounds_done_;
  const int q = queries_ / kRounds;
  for (int k = 0; k < q; ++k) {
    const int i = static_cast<int>(rng.Below(static_cast<uint64_t>(n_)));
    const int j = static_cast<int>(rng.Below(static_cast<uint64_t>(n_)));
    if (i == j || !c.up(i) || !c.up(j)) continue;
    const std::vector<BlockKey> chain = prompts.Draw(rng);
    const uint32_t truth = caches[j].Matched(chain);
    const uint32_t est = c.node(i).EstimateMatchedBlocks(GossipCluster::Name(j), chain);
    const double err = std::abs(static_cast<double>(truth) - static_cast<double>(est));
    // Within the peer's stated granularity: its own stride as node i knows it (the base
    // stride if nothing of it has reached i yet, as EstimateMatchedBlocks assumes).
    const uint32_t known = c.node(i).PeerStride(GossipCluster::Name(j));
    const uint32_t stride = known != 0 ? known : base_stride_;
    ++total_;
    stride_sum_ += stride;
    ok_ += err < stride ? 1 : 0;
    exact_ += err == 0 ? 1 : 0;
    nonzero_ += truth > 0 ? 1 : 0;
    abs_err_ += err;
  }
}

void HealthSampler::Sample(const GossipCluster& c) {
  for (int i = 0; i < c.size(); ++i) {
    if (!c.up(i)) continue;
    sum_ += c.node(i).local_health();
    ++samples_;
    max_ = std::max(max_, c.node(i).local_health());
  }
}

namespace {

TrafficMeter::Received ReceivedBy(const GossipCluster& c, int i) {
  const gossip::Counters& k = c.node(i).counters();
  return {k.entries_received, k.entries_redundant, k.deltas_applied, k.snapshots_applied,
          k.deltas_stale};
}

void AddTypes(const GossipCluster& c, int i, BytesByType& to) {
  const gossip::Counters& k = c.node(i).counters();
  to[0] += static_cast<double>(k.update_bytes_sent);
  for (size_t t = 1; t < to.size(); ++t) to[t] += static_cast<double>(k.bytes_sent_by_type[t]);
}

}  // namespace

void TrafficMeter::SumCounters(const GossipCluster& c, double* bytes, double* msgs) const {
  *bytes = 0;
  *msgs = 0;
  for (int i = 0; i < n_; ++i) {
    if (!c.up(i)) continue;
    *bytes += static_cast<double>(c.node(i).counters().bytes_sent);
    *msgs += static_cast<double>(c.node(i).counters().msgs_sent);
  }
}

void TrafficMeter::StartWindow(const GossipCluster& c) {
  started_ = true;
  SumCounters(c, &bytes_before_, &msgs_before_);
  for (int i = 0; i < n_; ++i) {
    if (c.up(i)) received_before_[static_cast<size_t>(i)] = ReceivedBy(c, i);
    if (c.up(i)) AddTypes(c, i, types_before_);
  }
}

void TrafficMeter::EndWindow(const GossipCluster& c) {
  ended_ = true;
  double b = 0, m = 0;
  SumCounters(c, &b, &m);
  bytes_after_ += b;
  msgs_after_ += m;
  for (int i = 0; i < n_; ++i) {
    if (!c.up(i)) continue;
    AddTypes(c, i, types_after_);
    const Received now = ReceivedBy(c, i), was = received_before_[static_cast<size_t>(i)];
    window_.entries += now.entries - was.entries;
    window_.redundant += now.redundant - was.redundant;
    window_.runs += now.runs - was.runs;
    window_.snapshots += now.snapshots - was.snapshots;
    window_.stale += now.stale - was.stale;
  }
}

void TrafficMeter::CountCrashed(const GossipCluster& c, int victim, bool in_window) {
  bytes_after_ += static_cast<double>(c.node(victim).counters().bytes_sent);
  msgs_after_ += static_cast<double>(c.node(victim).counters().msgs_sent);
  if (in_window) AddTypes(c, victim, types_after_);
}

}  // namespace hearsay::sim::gossip_experiment
