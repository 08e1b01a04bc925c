// KvEventsMetrics: the /metrics series of the vLLM KV-event source (upstream/kv_events_*.h), so an
// operator sees whether the event stream is healthy (batches, malformed, gaps replayed or reset,
// publisher restarts) and whether it helps (blocks stored, removed, skipped and why; estimate
// blocks the events cut; stored blocks that match the node's predictions; key disagreement).
// docs/engines.md explains each.
//
// Thread-safety: Refresh() on the core thread only (it reads the core-thread tracking).
#pragma once

#include "hearsay/api/metrics.h"
#include "hearsay/upstream/kv_events_subscriber.h"
#include "hearsay/upstream/kv_events_tracking.h"

namespace hearsay::net {

class KvEventsMetrics {
 public:
  // Registers the series in `registry`, which must outlive this.
  explicit KvEventsMetrics(api::MetricsRegistry& registry);

  void Refresh(const upstream::KvEventsTracking& tracking,
               const upstream::KvEventsSubscriberStats& stream);

 private:
  struct Mirror {
    api::Counter* counter = nullptr;
    uint64_t last = 0;
    void Sync(uint64_t value) {
      if (value > last) counter->Increment(static_cast<double>(value - last));
      last = value;
    }
  };

  Mirror messages_, batches_, malformed_, gaps_, replays_ok_, replays_failed_, resets_, restarts_,
      catch_ups_;
  Mirror stored_, removed_, evicted_, cleared_;
  Mirror skipped_parent_, skipped_block_size_, skipped_unkeyable_, unknown_removed_,
      unknown_events_;
  Mirror estimate_cut_, estimate_clears_, matching_;
  api::Gauge* view_blocks_ = nullptr;
  api::Gauge* keys_disagree_ = nullptr;
};

}  // namespace hearsay::net
