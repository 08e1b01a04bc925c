// IsolationMonitor: notices a node that cannot join its cluster, so it says so instead of serving
// alone in silence (docs/operations.md, "Health and isolation").
//
// Two signs, checked on every Update (the daemon calls it every 500 ms on the core thread):
//   - gossip it cannot open: envelopes dropped as unauthenticated (another cluster key),
//     security-mismatch (--insecure beside keyed nodes, or the reverse) or wrong-cluster, within
//     the last `recent` period. With no live member this means it cannot join: degraded
//     (`cannot_open_gossip`). With live members it only means someone else cannot join: a
//     warning (`unopenable_gossip`), the node itself is fine.
//   - alone: seeds are configured, yet no member has been alive for `alone_after`: degraded
//     (`alone`). (A node with another key never hears from keyed seeds, which drop its pings
//     unanswered: this is how it finds out.)
// The report goes into /health (`"status": "degraded"` with its issues; still HTTP 200, since
// the node serves) and /cluster. Log lines are the caller's, at a bounded rate (ShouldLog).
//
// IsolationMetrics mirrors the unopenable drops into hearsay_gossip_unopenable_total{reason}
// and the state into the gauge hearsay_degraded.
//
// Thread-safety: IsolationMonitor and IsolationMetrics::Refresh on the core thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hearsay/api/metrics.h"
#include "hearsay/env/time.h"
#include "hearsay/gossip/envelope.h"

namespace hearsay::net {

struct HealthIssue {
  std::string code;     // "cannot_open_gossip", "alone" or "unopenable_gossip"
  std::string message;  // for operators
  bool degrading = false;
};

struct HealthReport {
  bool degraded = false;
  std::vector<HealthIssue> issues;
};

struct IsolationOptions {
  // Seeds are configured (--join): being alone is then a fault.
  bool has_seeds = false;
  // Alone this long (from start, or since the last live member) is degraded.
  Duration alone_after = std::chrono::seconds(10);
  // Unopenable gossip counts as current for this long after the last one.
  Duration recent = std::chrono::seconds(10);
  // At most one log line per this period while an issue lasts.
  Duration log_every = std::chrono::seconds(10);
};

// The drops that mean "another key or another security mode": unauthenticated, security-mismatch
// and wrong-cluster.
uint64_t UnopenableDrops(const gossip::DropCounters& drops);

class IsolationMonitor {
 public:
  IsolationMonitor(IsolationOptions options, TimePoint start);

  // Takes the opener's drop counts and the number of live members at `now`.
  void Update(TimePoint now, const gossip::DropCounters& drops, size_t live_members);
  const HealthReport& report() const { return report_; }
  // True at most once per log_every while the report has issues, and once when it changes.
  bool ShouldLog(TimePoint now);

 private:
  IsolationOptions options_;
  uint64_t unopenable_seen_ = 0;
  std::optional<TimePoint> last_unopenable_;
  uint64_t recent_unopenable_ = 0;  // dropped since the current run of them began
  TimePoint last_not_alone_;
  HealthReport report_;
  bool changed_ = false;
  std::optional<TimePoint> last_log_;
};

class IsolationMetrics {
 public:
  explicit IsolationMetrics(api::MetricsRegistry& registry);
  void Refresh(const gossip::DropCounters& drops, const HealthReport& report);

 private:
  struct Mirror {
    api::Counter* counter = nullptr;
    uint64_t last = 0;
    void Sync(uint64_t value) {
      if (value > last) counter->Increment(value - last);
      last = value;
    }
  };
  Mirror unauthenticated_, security_mismatch_, wrong_cluster_;
  api::Gauge* degraded_ = nullptr;
};

}  // namespace hearsay::net
