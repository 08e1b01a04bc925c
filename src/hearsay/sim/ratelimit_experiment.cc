#include "hearsay/sim/ratelimit_experiment.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "hearsay/env/rng.h"
#include "hearsay/node/cluster_limiter.h"
#include "hearsay/sim/gossip_cluster.h"

namespace hearsay::sim {
namespace {

constexpr const char* kTenant = "tenant-a";
constexpr Duration kPublishInterval = std::chrono::milliseconds(100);
constexpr Duration kPollInterval = std::chrono::milliseconds(50);

// Offered rate of node i at traffic time t (seconds), as a fraction of the total.
double Weight(const std::string& spread, int i, int n, double t, double half) {
  if (spread == "skewed") {
    double sum = 0;
    for (int k = 0; k < n; ++k) sum += 1.0 / (k + 1);
    return 1.0 / (i + 1) / sum;
  }
  if (spread == "shift") {
    const int first = n / 2;
    const bool on = t < half ? i < first : i >= first;
    return on ? 1.0 / (t < half ? first : n - first) : 0.0;
  }
  return 1.0 / n;  // uniform, crash
}

class Run {
 public:
  Run(int n, std::string spread, const RateLimitOptions& o, bool gossip_usage)
      : n_(n),
        spread_(std::move(spread)),
        o_(o),
        gossip_usage_(gossip_usage),
        rng_(o.seed * 7919 + n) {
    GossipCluster::Options co;
    co.nodes = n;
    co.seed = o.seed;
    co.model_caches = false;
    co.share_replicas = true;
    co.on_member_changed = [this](int obs, const NodeId& id, Generation g, gossip::MemberState s) {
      limiters_[obs]->OnPeerChanged(
          id, g, s == gossip::MemberState::kAlive || s == gossip::MemberState::kSuspect);
    };
    co.on_peer_usage = [this](int obs, const NodeId& id, Generation g,
                              const gossip::UsageRecord& u) {
      limiters_[obs]->OnPeerUsage(id, g, u, cluster_->Now());
    };
    for (int i = 0; i < n; ++i) limiters_.push_back(std::make_unique<node::ClusterLimiter>());
    cluster_ = std::make_unique<GossipCluster>(co);
  }

  // The mean admitted rate from `from_s` on, / R.
  double MeanFrom(double from_s) const {
    const size_t from = static_cast<size_t>(std::ceil(from_s));
    double sum = 0;
    for (size_t b = from; b < bins_.size(); ++b) sum += bins_[b];
    return from < bins_.size() ? sum / double(bins_.size() - from) / o_.limit_rps : 0;
  }

  RateLimitResult Go() {
    cluster_->StartAll();
    cluster_->RunFor(std::chrono::seconds(5));  // membership converges
    start_ = cluster_->Now();
    half_ = o_.duration_s / 2;
    bins_.assign(static_cast<size_t>(std::ceil(o_.duration_s)), 0);
    for (int i = 0; i < n_; ++i) {
      Publish(i);
      NextArrival(i);
    }
    Poll();
    if (spread_ == "crash") {
      cluster_->scheduler().RunAfter(FromSeconds(half_), [this] { cluster_->Crash(0); });
    }
    cluster_->RunFor(FromSeconds(o_.duration_s));
    RateLimitResult r;
    r.nodes = n_;
    r.spread = spread_;
    r.first_round_s = first_round_s_;
    r.first_second_r = bins_[0] / o_.limit_rps;
    r.offered_r = offered_ / o_.duration_s / o_.limit_rps;
    const size_t from =
        first_round_s_ < 0 ? bins_.size() : static_cast<size_t>(std::ceil(first_round_s_));
    double sum = 0;
    for (size_t b = from; b < bins_.size(); ++b) {
      sum += bins_[b];
      r.after_round_max_r = std::max(r.after_round_max_r, bins_[b] / o_.limit_rps);
    }
    if (from < bins_.size())
      r.after_round_mean_r = sum / double(bins_.size() - from) / o_.limit_rps;
    return r;
  }

 private:
  double T() const { return ToSeconds(cluster_->Now() - start_); }

  void NextArrival(int i) {
    const double rate = o_.offered * o_.limit_rps * Weight(spread_, i, n_, T(), half_);
    // A node without traffic looks again shortly (the shift case turns it on later).
    const double gap = rate > 0 ? rng_.Exponential(1.0 / rate) : 0.1;
    cluster_->scheduler().RunAfter(FromSeconds(gap), [this, i, rate] {
      if (T() >= o_.duration_s || !cluster_->up(i)) return;
      if (rate > 0 && Weight(spread_, i, n_, T(), half_) > 0) {
        ++offered_;
        const auto v = limiters_[i]->AdmitRequest(kTenant, static_cast<uint64_t>(o_.limit_rps),
                                                  cluster_->Now());
        if (v.ok) ++bins_[std::min(bins_.size() - 1, static_cast<size_t>(T()))];
      }
      NextArrival(i);
    });
  }

  void Publish(int i) {
    if (!gossip_usage_ || !cluster_->up(i) || T() >= o_.duration_s) return;
    if (auto u = limiters_[i]->UsageToPublish(cluster_->Now())) {
      cluster_->node(i).SetUsage(std::move(*u)).IgnoreError();
    }
    cluster_->scheduler().RunAfter(kPublishInterval, [this, i] { Publish(i); });
  }

  // Records when every offering node first holds a fresh record of every other offering node.
  void Poll() {
    if (first_round_s_ >= 0 || T() >= o_.duration_s) return;
    int offering = 0;
    for (int i = 0; i < n_; ++i) offering += Weight(spread_, i, n_, T(), half_) > 0 ? 1 : 0;
    bool done = true;
    for (int i = 0; i < n_ && done; ++i) {
      if (Weight(spread_, i, n_, T(), half_) == 0) continue;
      done = static_cast<int>(limiters_[i]->fresh_peers(cluster_->Now())) >= offering - 1;
    }
    if (done) {
      first_round_s_ = T();
      return;
    }
    cluster_->scheduler().RunAfter(kPollInterval, [this] { Poll(); });
  }

  const int n_;
  const std::string spread_;
  const RateLimitOptions& o_;
  const bool gossip_usage_;
  Rng rng_;
  std::vector<std::unique_ptr<node::ClusterLimiter>> limiters_;
  std::unique_ptr<GossipCluster> cluster_;
  TimePoint start_{};
  double half_ = 0;
  std::vector<double> bins_;
  double offered_ = 0;
  double first_round_s_ = -1;
};

}  // namespace

RateLimitResult RunRateLimitCase(int nodes, const std::string& spread,
                                 const RateLimitOptions& options) {
  RateLimitResult r = Run(nodes, spread, options, true).Go();
  Run per_node(nodes, spread, options, false);
  per_node.Go();
  r.per_node_mean_r = per_node.MeanFrom(std::max(0.0, r.first_round_s));
  return r;
}

std::vector<RateLimitResult> RunRateLimitExperiment(const RateLimitOptions& options) {
  RateLimitOptions o = options;
  if (o.quick) {
    o.nodes = {8};
    o.spreads = {"uniform", "skewed"};
    o.duration_s = std::min(o.duration_s, 10.0);
  }
  std::vector<RateLimitResult> out;
  for (const int n : o.nodes) {
    for (const std::string& s : o.spreads) out.push_back(RunRateLimitCase(n, s, o));
  }
  return out;
}

std::string RateLimitTable(const std::vector<RateLimitResult>& results,
                           const RateLimitOptions& options) {
  std::string out;
  char line[256];
  std::snprintf(
      line, sizeof line,
      "Tenant limited to R = %.0f rps, offering %.1f R in total (Poisson), seed %llu.\n\n",
      options.limit_rps, options.offered, static_cast<unsigned long long>(options.seed));
  out += line;
  out +=
      "| entry nodes | spread | offered | first second | first round | after it: mean | "
      "largest 1-s bin | per-node limits only: mean |\n|---:|---|---:|---:|---:|---:|---:|---:|\n";
  for (const RateLimitResult& r : results) {
    std::snprintf(line, sizeof line,
                  "| %d | %s | %.2f R | %.2f R | %.2f s | %.3f R | %.2f R | %.2f R |\n", r.nodes,
                  r.spread.c_str(), r.offered_r, r.first_second_r, r.first_round_s,
                  r.after_round_mean_r, r.after_round_max_r, r.per_node_mean_r);
    out += line;
  }
  return out;
}

}  // namespace hearsay::sim
