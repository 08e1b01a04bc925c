#include "hearsay/net/kv_events_metrics.h"

namespace hearsay::net {

KvEventsMetrics::KvEventsMetrics(api::MetricsRegistry& r) {
  messages_.counter = &r.AddCounter("hearsay_kv_events_messages_total",
                                    "Messages received from vLLM's KV-event publisher");
  batches_.counter = &r.AddCounter("hearsay_kv_events_batches_total",
                                   "KV-event batches decoded and applied (live and replayed)");
  malformed_.counter =
      &r.AddCounter("hearsay_kv_events_malformed_total", "KV-event messages skipped as malformed");
  gaps_.counter =
      &r.AddCounter("hearsay_kv_events_gaps_total", "Sequence gaps in the KV-event stream");
  const char* replays = "Replay requests for a sequence gap, by result";
  replays_ok_.counter =
      &r.AddCounter("hearsay_kv_events_replays_total", replays, {{"result", "ok"}});
  replays_failed_.counter =
      &r.AddCounter("hearsay_kv_events_replays_total", replays, {{"result", "failed"}});
  resets_.counter = &r.AddCounter(
      "hearsay_kv_events_resets_total",
      "Engine-event views dropped because events were lost (gap not replayed, restart)");
  restarts_.counter = &r.AddCounter("hearsay_kv_events_publisher_restarts_total",
                                    "KV-event publisher restarts seen (sequence went back)");
  catch_ups_.counter =
      &r.AddCounter("hearsay_kv_events_catch_ups_total",
                    "Catch-ups at start that replayed the publisher's buffered batches");
  const char* blocks = "Engine blocks the KV events added to or dropped from the view";
  stored_.counter = &r.AddCounter("hearsay_kv_events_blocks_total", blocks, {{"change", "stored"}});
  removed_.counter =
      &r.AddCounter("hearsay_kv_events_blocks_total", blocks, {{"change", "removed"}});
  evicted_.counter =
      &r.AddCounter("hearsay_kv_events_blocks_total", blocks, {{"change", "evicted_over_bound"}});
  cleared_.counter =
      &r.AddCounter("hearsay_kv_events_cleared_total", "AllBlocksCleared events from the engine");
  const char* skipped = "Engine blocks or events the view could not use, by reason";
  skipped_parent_.counter =
      &r.AddCounter("hearsay_kv_events_skipped_total", skipped, {{"reason", "unknown_parent"}});
  skipped_block_size_.counter =
      &r.AddCounter("hearsay_kv_events_skipped_total", skipped, {{"reason", "block_size"}});
  skipped_unkeyable_.counter =
      &r.AddCounter("hearsay_kv_events_skipped_total", skipped, {{"reason", "unkeyable"}});
  unknown_removed_.counter =
      &r.AddCounter("hearsay_kv_events_skipped_total", skipped, {{"reason", "unknown_removed"}});
  unknown_events_.counter =
      &r.AddCounter("hearsay_kv_events_skipped_total", skipped, {{"reason", "unknown_event"}});
  estimate_cut_.counter =
      &r.AddCounter("hearsay_kv_events_estimate_cut_total",
                    "Blocks the estimate (prediction, evidence) held and the engine's events "
                    "removed");
  estimate_clears_.counter = &r.AddCounter("hearsay_kv_events_estimate_clears_total",
                                           "Estimates cleared by an AllBlocksCleared");
  matching_.counter =
      &r.AddCounter("hearsay_kv_events_stored_matching_estimate_total",
                    "Stored engine blocks whose key the estimate already held (keys agree)");
  view_blocks_ =
      &r.AddGauge("hearsay_kv_events_view_blocks", "Engine blocks in the KV-event view now");
  keys_disagree_ = &r.AddGauge(
      "hearsay_kv_events_keys_disagree",
      "1 when many blocks were stored and none matched a prediction: block size or tokenizer "
      "differ from the engine's");
}

void KvEventsMetrics::Refresh(const upstream::KvEventsTracking& tracking,
                              const upstream::KvEventsSubscriberStats& s) {
  messages_.Sync(s.messages);
  batches_.Sync(s.batches);
  malformed_.Sync(s.malformed);
  gaps_.Sync(s.gaps);
  replays_ok_.Sync(s.replays);
  replays_failed_.Sync(s.replay_failures);
  resets_.Sync(s.resets);
  restarts_.Sync(s.restarts);
  catch_ups_.Sync(s.catch_ups);
  const upstream::KvEventViewStats& v = tracking.view().stats();
  stored_.Sync(v.stored_blocks);
  removed_.Sync(v.removed_blocks);
  evicted_.Sync(v.evicted_over_bound);
  cleared_.Sync(v.cleared);
  skipped_parent_.Sync(v.unknown_parent);
  skipped_block_size_.Sync(v.block_size_mismatch);
  skipped_unkeyable_.Sync(v.unkeyable);
  unknown_removed_.Sync(v.unknown_removed);
  unknown_events_.Sync(v.unknown_events);
  estimate_cut_.Sync(tracking.stats().estimate_blocks_cut);
  estimate_clears_.Sync(tracking.stats().estimate_clears);
  matching_.Sync(tracking.stats().stored_matching_estimate);
  view_blocks_->Set(static_cast<double>(tracking.view().blocks()));
  keys_disagree_->Set(tracking.keys_disagree() ? 1 : 0);
}

}  // namespace hearsay::net
