// Node: the backlog list this node publishes and the sum of every reporter's (shared_backlog.h;
// node.h: ListOwnBacklog, SumSharedBacklog).
#include "hearsay/node/node.h"
#include "hearsay/route/ttft_estimate.h"

namespace hearsay::node {

std::vector<gossip::BacklogEntry> Node::ListOwnBacklog(TimePoint now) {
  own_backlog_at_ = now;
  backlog_sources_.clear();
  if (options_.shared_backlog.enabled) {
    for (const Peer& peer : peers_) {
      if (peer.id.empty() || !peer.live || !peer.has_load) continue;
      const PeerTrust::OutstandingWork w =
          trust_.Unanswered(peer.id, peer.load_at - options_.shared_backlog.report_margin);
      if (w.sent_by == 0) continue;
      backlog_sources_.push_back(
          BacklogSource{.member = peer.id,
                        .requests = w.requests,
                        .sent_before_report = w.sent_by,
                        .work_ms = w.work_ms,
                        .reported_requests = size_t{peer.load.running} + peer.load.queue_depth});
    }
  }
  own_backlog_ = ListBacklog(backlog_sources_, options_.shared_backlog);
  return own_backlog_;
}

double Node::FullPrefillMs(const Pending& p, route::Slot slot) const {
  for (const route::Candidate& c : candidates_) {
    if (c.slot == slot) {
      return route::PrefillPartMs(options_.policy_options.cost, c, double(p.request.prompt.size()),
                                  0);
    }
  }
  return 0;
}

void Node::SumSharedBacklog(TimePoint now) {
  shared_backlog_.Clear();
  if (!options_.shared_backlog.enabled || !trust_.options().enabled) return;
  shared_backlog_.Add(options_.id, own_backlog_, now - own_backlog_at_, 1.0);
  for (const Peer& peer : peers_) {
    if (peer.id.empty() || !peer.live || !peer.has_load || peer.load.backlog.empty()) continue;
    shared_backlog_.Add(peer.id, peer.load.backlog, now - peer.load_at, trust_.Of(peer.id).trust());
  }
}

}  // namespace hearsay::node
