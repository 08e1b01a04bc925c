// Node: the candidates a routing decision weighs, as this node sees its members (node.h:
// BuildCandidates).
#include <algorithm>
#include <functional>
#include <string>

#include "hearsay/gossip/summary_key.h"
#include "hearsay/node/node.h"
#include "hearsay/node/speed_pooling.h"

namespace hearsay::node {
namespace {

// route::Candidate::host_group of a member that names `group` (0 for none).
uint64_t HostGroupId(const std::string& group) {
  return group.empty() ? 0 : std::hash<std::string>{}(group) | 1;
}

}  // namespace

void Node::BuildCandidates(const Pending& p, std::span<const uint32_t> prompt) {
  const TimePoint now = scheduler_.clock().Now();
  candidates_.clear();
  route::Candidate self;
  self.slot = 0;
  self.node_id = options_.id;
  self.is_self = true;
  self.cached_tokens = static_cast<uint32_t>(engine_.CachedPrefixTokens(prompt, p.cache_namespace));
  self.cache_exact = true;
  self.host_group = HostGroupId(options_.service.host_group);
  const engine::EngineLoad l = engine_.Load();
  self.load.queued = l.waiting_requests;
  self.load.running = l.running_requests;
  self.load.queued_prefill_tokens = l.waiting_prefill_tokens;
  self.load.running_context_tokens = l.kv_pinned_tokens;
  self.load.kv_used_tokens = l.kv_used_tokens;
  self.load.kv_capacity_tokens = l.kv_capacity_tokens;
  self.load.queue_wait = l.estimated_queue_wait;
  self.load.overloaded = gossip_->overloaded();
  const route::PrefillCostModel& cost = options_.policy_options.cost;
  const bool measured = options_.price_by_measured_prefill;
  measured_scales_.clear();
  if (measured) {
    self.cost_scale = cost.ScaleFromMeasured(l.prefill_ms_per_token, 1.0);
    self.decode_cost_scale = cost.DecodeScaleFromMeasured(l.decode_ms_per_token, l.running_requests,
                                                          double(l.kv_pinned_tokens), 0);
  }
  // Only members that serve the request's model are candidates; self too.
  if (ServesHere(p)) {
    if (measured) measured_scales_.push_back(l.prefill_ms_per_token > 0 ? self.cost_scale : 0);
    candidates_.push_back(self);
  }

  const uint32_t block_tokens = static_cast<uint32_t>(keyer_.tokens_per_block());
  if (exact_ == nullptr) {
    // Every block as a summary key; the index matches each peer at its own landmark stride.
    gossip::LandmarkQuery(p.keys, 1, &landmarks_);
    match_.assign(peer_index_.slot_limit(), 0);
    peer_index_.MatchStrided(landmarks_, match_).IgnoreError();
    SumBacklogInto(shared_backlog_, now);
  }
  for (size_t s = 0; s < peers_.size(); ++s) {
    const Peer& peer = peers_[s];
    if (peer.id.empty() || !peer.live) continue;
    if (p.target && !PeerServes(peer, *p.target)) continue;
    route::Candidate c;
    c.slot = static_cast<route::Slot>(s + 1);
    c.node_id = peer.id;
    c.usable = std::find(p.excluded.begin(), p.excluded.end(), c.slot) == p.excluded.end();
    c.one_way_delay = peer.one_way;
    if (peer.has_service) c.host_group = HostGroupId(peer.service.host_group);
    if (exact_ != nullptr) {
      c.cached_tokens = exact_->CachedTokens(peer.id, prompt, p.cache_namespace).value_or(0);
      c.cache_exact = true;
      if (std::optional<engine::EngineLoad> el = exact_->Load(peer.id)) {
        c.load.queued = el->waiting_requests;
        c.load.running = el->running_requests;
        c.load.queued_prefill_tokens = el->waiting_prefill_tokens;
        c.load.running_context_tokens = el->kv_pinned_tokens;
        c.load.kv_used_tokens = el->kv_used_tokens;
        c.load.kv_capacity_tokens = el->kv_capacity_tokens;
        c.load.queue_wait = el->estimated_queue_wait;
        if (measured) {
          c.cost_scale = cost.ScaleFromMeasured(el->prefill_ms_per_token, self.cost_scale);
          measured_scales_.push_back(el->prefill_ms_per_token > 0 ? c.cost_scale : 0);
        }
      }
    } else {
      const uint64_t blocks = s < match_.size() ? match_[s] : 0;
      c.cached_tokens =
          static_cast<uint32_t>(std::min<uint64_t>(blocks * block_tokens, prompt.size()));
      // At the peer's own stride: m landmarks held; landmark m (the first not held) bounds the
      // run from above, and past the last landmark only the prompt does.
      const uint64_t stride = std::max<uint32_t>(peer_index_.StrideOf(static_cast<uint32_t>(s)), 1);
      const uint64_t m = blocks == 0 ? 0 : (blocks - 1) / stride + 1;
      const uint64_t marks = (landmarks_.size() + stride - 1) / stride;
      const uint64_t max_tokens = m == 0      ? 0
                                  : m < marks ? (m * stride + 1) * block_tokens - 1
                                              : prompt.size();
      c.cached_tokens_max = static_cast<uint32_t>(std::min<uint64_t>(max_tokens, prompt.size()));
      c.cache_age = peer.has_load ? now - peer.load_at : Duration{0};
      const PeerTrustView trust = trust_.Of(peer.id);
      c.cache_trust = trust.cache_trust;
      c.time_trust = trust.time_trust;
      c.hidden_wait_ms = trust.hidden_wait_ms;
      c.shared_wait_ms = shared_backlog_.WorkMs(peer.id);
      if (peer.has_load) {
        c.load.queued = peer.load.queue_depth;
        c.load.running = peer.load.running;
        c.load.kv_used_tokens = peer.load.kv_used_tokens;
        c.load.kv_capacity_tokens = peer.load.kv_capacity_tokens;
        c.load.queued_prefill_tokens = peer.load.waiting_prefill_tokens;
        c.load.running_context_tokens = peer.load.running_context_tokens;
        c.load.queue_wait = std::chrono::microseconds(peer.load.queue_wait_us);
        c.load.overloaded = peer.load.overloaded;
        c.load.age = now - peer.load_at;
      }
      if (measured) {
        const double speed = peer.has_load ? peer.load.prefill_ms_per_token : 0;
        c.cost_scale = cost.ScaleFromMeasured(speed, self.cost_scale);
        if (peer.has_load) {
          c.decode_cost_scale = cost.DecodeScaleFromMeasured(
              peer.load.decode_us_per_token / 1000.0, peer.load.running,
              double(peer.load.running_context_tokens), 0);
        }
        measured_scales_.push_back(speed > 0 ? c.cost_scale : 0);
      }
    }
    candidates_.push_back(c);
  }
  if (measured && measured_scales_.size() == candidates_.size()) {
    PoolSimilarSpeeds(measured_scales_, kSpeedPoolBand);
    const double typical = TypicalScale(measured_scales_);
    for (size_t i = 0; i < candidates_.size(); ++i) {
      if (measured_scales_[i] > 0) {
        candidates_[i].cost_scale = measured_scales_[i];
      } else if (typical > 0) {
        candidates_[i].cost_scale = typical;
      }
    }
  }
}

}  // namespace hearsay::node
