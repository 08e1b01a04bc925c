#include "hearsay/sim/gossip_experiment.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "hearsay/env/rng.h"
#include "hearsay/sim/gossip_cluster.h"
#include "hearsay/sim/gossip_experiment_faults.h"
#include "hearsay/sim/gossip_experiment_report.h"
#include "hearsay/sim/gossip_experiment_sampling.h"
#include "hearsay/sim/gossip_experiment_workload.h"

namespace hearsay::sim {
namespace {

using namespace std::chrono_literals;
using namespace gossip_experiment;
using prefix::BlockEvent;

// The error for options out of range, if any.
std::optional<std::string> Invalid(const GossipExperimentOptions& o) {
  if (o.nodes < 2 || o.nodes > 4096) return "nodes must be in [2, 4096]";
  if (!(o.loss >= 0 && o.loss <= 1)) return "loss must be in [0, 1]";
  if (!(o.duration_s > 0 && o.duration_s <= 3600)) return "duration must be in (0, 3600] seconds";
  if (!(o.warmup_s >= 1 && o.warmup_s <= 600)) return "warm-up must be in [1, 600] seconds";
  if (!(o.churn >= 0 && o.churn <= 1e6)) return "churn must be in [0, 1e6]";
  if (o.landmark_stride == 0) return "landmark stride must be >= 1";
  if (!(o.sign_interval_s >= 0.01 && o.sign_interval_s <= 60)) {
    return "sign interval must be in [0.01, 60] seconds";
  }
  return std::nullopt;
}

GossipCluster::Options ClusterOptions(const GossipExperimentOptions& o, FaultDriver& faults) {
  GossipCluster::Options co;
  co.nodes = o.nodes;
  co.seed = o.seed;
  co.seed_nodes = std::min(3, o.nodes);
  co.faults.latency = simenv::LatencyModel::Uniform(500us, 2ms);
  co.faults.loss = o.loss;
  co.config.landmark_stride = o.landmark_stride;
  co.config.landmark_budget_members = o.landmark_budget_members;
  co.config.relayed_evidence = o.relayed_evidence;
  co.config.silence_probe_mult = o.silence_probe_mult;
  co.config.signatures = o.signatures;
  co.config.sign_interval = FromSeconds(o.sign_interval_s);
  co.share_replicas = o.share_replicas && o.signatures != gossip::SignatureMode::kEd25519;
  co.model_caches = false;  // figures come from the replicas themselves
  co.on_member_changed = [&faults](int observer, const NodeId& id, Generation g,
                                   gossip::MemberState s) {
    faults.OnMemberChanged(observer, id, g, s);
  };
  return co;
}

// One run: the cluster, each node's workload, and what is sampled from them.
class Run {
 public:
  static constexpr Duration kStep = 50ms;
  static constexpr Duration kTick = 10ms;

  explicit Run(const GossipExperimentOptions& o)
      : o_(o),
        n_(o.nodes),
        warmup_(FromSeconds(o.warmup_s)),
        measured_(FromSeconds(o.duration_s)),
        end_(warmup_ + measured_),
        faults_(n_, n_ > 3 ? n_ / 2 : n_ - 1, warmup_ + measured_ / 3),
        cluster_(ClusterOptions(o, faults_)),
        prompts_(o.seed),
        rng_(o.seed * 31 + 7),
        caches_(static_cast<size_t>(n_), SyntheticCache(o.cache_blocks)),
        credit_(static_cast<size_t>(n_), 0.0),
        convergence_(n_, std::min(1.0, 600.0 / std::max(1.0, o.churn * 0.5 / o.landmark_stride *
                                                                 n_ * o.duration_s))),
        accuracy_(n_, o.accuracy_queries, o.landmark_stride),
        traffic_(n_) {
    faults_.Bind(&cluster_);
    for (int i = 0; i < n_; ++i) node_rng_.push_back(rng_.Fork());
  }

  // Runs to the end of the measured window, and on until the victim's death is detected (30 s
  // at most).
  void Execute() {
    cluster_.StartAll();
    const Duration hard_end = end_ + 30s;
    for (Duration t{}; t < hard_end;) {
      const bool measuring = t >= warmup_ && t < end_;
      if (!traffic_.started() && t >= warmup_) traffic_.StartWindow(cluster_);
      if (!traffic_.ended() && t >= end_) traffic_.EndWindow(cluster_);
      if (t >= end_ && faults_.detect_s() >= 0) break;
      if (t < end_) {
        DriveWorkload(t, measuring);
      } else {
        cluster_.RunFor(kStep);
      }
      t += kStep;
      if (join_ < Duration{} && t < faults_.kill_at() && Joined()) join_ = t;
      faults_.AfterStep(t, end_, cluster_, traffic_);
      if (measuring) health_.Sample(cluster_);
      convergence_.Step(t, cluster_, caches_);
      // Accuracy queries, spread over the measured window.
      if (measuring)
        accuracy_.MaybeQuery(t - warmup_, measured_, cluster_, prompts_, caches_, rng_);
    }
  }

  nlohmann::json Report() const {
    return gossip_experiment::Report({o_, cluster_, faults_, convergence_, accuracy_, health_,
                                      traffic_, events_total_, warmup_, end_, join_});
  }

 private:
  // Whether every node holds every other as alive.
  bool Joined() const {
    for (int i = 0; i < n_; ++i) {
      if (!cluster_.up(i) || cluster_.node(i).live_member_count() + 1 < static_cast<size_t>(n_)) {
        return false;
      }
    }
    return true;
  }

  // One step of workload from `t`, in ticks: each node earns churn * tick events of credit and
  // issues requests while it has credit; a request's events are charged after the fact, so the
  // rate holds on average.
  void DriveWorkload(Duration t, bool measuring) {
    for (Duration sub{}; sub < kStep; sub += kTick) {
      for (int i = 0; i < n_; ++i) {
        if (!cluster_.up(i)) continue;
        credit_[i] += o_.churn * ToSeconds(kTick);
        int attempts = 0;
        while (credit_[i] > 0 && attempts++ < 64) {
          events_.clear();
          caches_[i].Insert(prompts_.Draw(node_rng_[i]), &events_);
          if (events_.empty()) continue;
          credit_[i] -= static_cast<double>(events_.size());
          events_total_ += events_.size();
          cluster_.node(i).PublishCacheEvents(events_);
          if (measuring) {
            convergence_.Offer(i, events_, cluster_.node(i).landmark_stride(), t + sub,
                               node_rng_[i]);
          }
        }
      }
      cluster_.RunFor(kTick);
    }
  }

  const GossipExperimentOptions& o_;
  const int n_;
  const Duration warmup_;
  const Duration measured_;
  const Duration end_;
  FaultDriver faults_;
  GossipCluster cluster_;
  PromptModel prompts_;
  Rng rng_;
  std::vector<SyntheticCache> caches_;
  std::vector<Rng> node_rng_;
  std::vector<double> credit_;
  std::vector<BlockEvent> events_;
  uint64_t events_total_ = 0;
  Duration join_{-1};  // when Joined() first held; negative until then
  ConvergenceSampler convergence_;
  AccuracySampler accuracy_;
  HealthSampler health_;
  TrafficMeter traffic_;
};

}  // namespace

nlohmann::json RunGossipExperiment(const GossipExperimentOptions& o) {
  if (const auto error = Invalid(o)) return {{"error", *error}};
  Run run(o);
  run.Execute();
  return run.Report();
}

}  // namespace hearsay::sim
