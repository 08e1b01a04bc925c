#include "hearsay/net/isolation.h"

#include <utility>

namespace hearsay::net {

using gossip::DropReason;

uint64_t UnopenableDrops(const gossip::DropCounters& drops) {
  return drops[DropReason::kUnauthenticated] + drops[DropReason::kSecurityMismatch] +
         drops[DropReason::kWrongCluster];
}

IsolationMonitor::IsolationMonitor(IsolationOptions options, TimePoint start)
    : options_(options), last_not_alone_(start) {}

void IsolationMonitor::Update(TimePoint now, const gossip::DropCounters& drops,
                              size_t live_members) {
  const uint64_t unopenable = UnopenableDrops(drops);
  if (unopenable > unopenable_seen_) {
    if (!last_unopenable_ || now - *last_unopenable_ > options_.recent) recent_unopenable_ = 0;
    recent_unopenable_ += unopenable - unopenable_seen_;
    unopenable_seen_ = unopenable;
    last_unopenable_ = now;
  }
  if (live_members > 0 || !options_.has_seeds) last_not_alone_ = now;

  HealthReport next;
  if (last_unopenable_ && now - *last_unopenable_ <= options_.recent) {
    const std::string counts =
        std::to_string(recent_unopenable_) + " gossip messages could not be opened (" +
        std::to_string(drops[DropReason::kUnauthenticated]) + " unauthenticated, " +
        std::to_string(drops[DropReason::kSecurityMismatch]) + " security-mismatch, " +
        std::to_string(drops[DropReason::kWrongCluster]) + " wrong-cluster in all)";
    if (live_members == 0) {
      next.issues.push_back(
          {"cannot_open_gossip",
           counts + ": this node's cluster key, --insecure or cluster name differs from its "
                    "peers', so it cannot join",
           true});
    } else {
      next.issues.push_back(
          {"unopenable_gossip",
           counts + ": a node with another cluster key or security mode is trying to join", false});
    }
  }
  if (now - last_not_alone_ >= options_.alone_after) {
    next.issues.push_back(
        {"alone",
         "no live member for " + std::to_string(ToMillis(now - last_not_alone_) / 1000) +
             " s although seeds are configured: check the cluster key, --insecure and the "
             "seeds' addresses",
         true});
  }
  for (const HealthIssue& i : next.issues) next.degraded = next.degraded || i.degrading;
  auto codes = [](const HealthReport& r) {
    std::string c;
    for (const HealthIssue& i : r.issues) c += i.code + ",";
    return c;
  };
  changed_ = changed_ || codes(next) != codes(report_);
  report_ = std::move(next);
}

bool IsolationMonitor::ShouldLog(TimePoint now) {
  const bool due =
      !report_.issues.empty() && (!last_log_ || now - *last_log_ >= options_.log_every);
  if (!changed_ && !due) return false;
  changed_ = false;
  last_log_ = now;
  return true;
}

IsolationMetrics::IsolationMetrics(api::MetricsRegistry& registry) {
  const char* help =
      "Gossip envelopes this node could not open: another cluster key (unauthenticated), "
      "--insecure beside keyed nodes or the reverse (security-mismatch), another cluster name "
      "(wrong-cluster)";
  unauthenticated_.counter = &registry.AddCounter("hearsay_gossip_unopenable_total", help,
                                                  {{"reason", "unauthenticated"}});
  security_mismatch_.counter = &registry.AddCounter("hearsay_gossip_unopenable_total", help,
                                                    {{"reason", "security-mismatch"}});
  wrong_cluster_.counter =
      &registry.AddCounter("hearsay_gossip_unopenable_total", help, {{"reason", "wrong-cluster"}});
  degraded_ = &registry.AddGauge(
      "hearsay_degraded",
      "1 while this node cannot join its cluster (GET /health says why), else 0");
}

void IsolationMetrics::Refresh(const gossip::DropCounters& drops, const HealthReport& report) {
  unauthenticated_.Sync(drops[DropReason::kUnauthenticated]);
  security_mismatch_.Sync(drops[DropReason::kSecurityMismatch]);
  wrong_cluster_.Sync(drops[DropReason::kWrongCluster]);
  degraded_->Set(report.degraded ? 1 : 0);
}

}  // namespace hearsay::net
