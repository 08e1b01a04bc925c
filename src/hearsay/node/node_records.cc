// Node: decision records (decision_record.h), written only when a recorder is set.
#include "hearsay/node/node.h"

namespace hearsay::node {
namespace {

CandidateRecord ToRecord(const route::Candidate& c) {
  CandidateRecord r;
  r.node = std::string(c.node_id);
  r.is_self = c.is_self;
  r.usable = c.usable;
  r.one_way_delay_ms = ToMillis(c.one_way_delay);
  r.queued = c.load.queued;
  r.running = c.load.running;
  r.queued_prefill_tokens = c.load.queued_prefill_tokens;
  r.reported_wait_ms = c.load.queue_wait ? ToMillis(*c.load.queue_wait) : -1;
  r.load_age_ms = ToMillis(c.load.age);
  r.overloaded = c.load.overloaded;
  r.cached_tokens = c.cached_tokens;
  r.cached_tokens_max = c.cached_tokens_max;
  r.cache_exact = c.cache_exact;
  r.cost_scale = c.cost_scale;
  return r;
}

bool Priced(route::Reason reason) {
  return reason != route::Reason::kHopForced && reason != route::Reason::kNoCandidate;
}

}  // namespace

void Node::RecordAttempt(Pending& p, const route::Decision& d) {
  if (recorder_ == nullptr || p.request.forwarded) return;
  if (!p.record) {
    p.record = std::make_unique<RouteRecord>();
    p.record->entry = options_.id;
    p.record->request = p.client_id;
    p.record->policy = std::string(policy_->name());
    p.record->arrived_ms = ToMillis(p.arrived.time_since_epoch());
    p.record->prompt_tokens = p.prompt_tokens;
  }
  RouteAttempt a;
  a.at_ms = ToMillis(scheduler_.clock().Now() - p.arrived);
  const std::span<const route::Price> prices =
      Priced(d.reason) ? policy_->LastPrices() : std::span<const route::Price>{};
  a.candidates.reserve(candidates_.size());
  for (size_t i = 0; i < candidates_.size(); ++i) {
    CandidateRecord c = ToRecord(candidates_[i]);
    if (i < prices.size() && prices[i].slot == candidates_[i].slot) {
      c.priced = true;
      c.price = prices[i];
    }
    a.candidates.push_back(std::move(c));
  }
  a.chosen = d.slot == 0 ? options_.id : peers_[d.slot - 1].id;
  a.reason = std::string(route::ReasonName(d.reason));
  a.expected_ttft_ms = d.expected_ttft_ms;
  a.fallback_ttft_ms = d.fallback_ttft_ms;
  a.estimated_cached_tokens = d.estimated_cached_tokens;
  p.record->attempts.push_back(std::move(a));
}

void Node::EndAttempt(Pending& p, std::string_view result) {
  if (!p.record || p.record->attempts.empty()) return;
  p.record->attempts.back().result = std::string(result);
}

void Node::RecordFirstToken(Pending& p, const std::string& served_by, uint32_t cached) {
  if (!p.record) return;
  EndAttempt(p, "served");
  p.record->served_by = served_by;
  p.record->cached_tokens = cached;
  p.record->ttft_ms = ToMillis(scheduler_.clock().Now() - p.arrived);
}

void Node::EmitRoute(Pending& p, std::string error) {
  if (!p.record || recorder_ == nullptr) return;
  RouteRecord& r = *p.record;
  if (error.empty()) {
    r.e2e_ms = ToMillis(scheduler_.clock().Now() - p.arrived);
  } else {
    if (!r.attempts.empty() && r.attempts.back().result.empty()) {
      r.attempts.back().result = "failed";
    }
    r.served_by.clear();
    r.ttft_ms = -1;
    r.error = std::move(error);
  }
  recorder_->OnRoute(r);
  p.record.reset();
}

void Node::EmitServe(const Pending& p, uint32_t prompt_tokens, uint32_t cached, bool bounced) {
  if (recorder_ == nullptr) return;
  ServeRecord r;
  r.node = options_.id;
  r.forwarded = p.request.forwarded;
  r.entry = r.forwarded ? p.request.origin : options_.id;
  r.request = r.forwarded ? p.request.origin_request : p.client_id;
  r.prompt_tokens = prompt_tokens;
  r.cached_tokens = cached;
  r.bounced = bounced;
  if (p.own_estimate_ms >= 0) {
    r.own_estimate_ms = p.own_estimate_ms;
    r.bounce_above_ms = p.request.bounce_above_ms;
  }
  if (!bounced && p.queued >= Duration{0}) {
    r.queued_ms = ToMillis(p.queued);
    r.prefill_ms = ToMillis(scheduler_.clock().Now() - p.submitted - p.queued);
  }
  recorder_->OnServe(r);
}

}  // namespace hearsay::node
