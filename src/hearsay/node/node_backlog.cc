// Node: the backlog list this node publishes and the sum of every reporter's (shared_backlog.h;
// node.h: ListOwnBacklog, SumBacklogInto).
#include <algorithm>

#include "hearsay/node/node.h"

namespace hearsay::node {

std::vector<gossip::BacklogEntry> Node::ListOwnBacklog(TimePoint now) {
  own_backlog_at_ = now;
  backlog_sources_.clear();
  if (options_.shared_backlog.enabled) {
    backlog_members_.clear();
    trust_.MembersWithUnanswered(backlog_members_);
    for (const NodeId& member : backlog_members_) {
      auto peer_it = std::find_if(peers_.begin(), peers_.end(),
                                  [&member](const Peer& p) { return p.id == member; });
      if (peer_it == peers_.end()) continue;
      const Peer& peer = *peer_it;
      if (!peer.live || !peer.has_load) continue;
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
  NoteListedWork(own_backlog_, now);
  return options_.misbehave.slander ? SlanderList() : own_backlog_;
}

std::vector<gossip::BacklogEntry> Node::SlanderList() const {
  std::vector<gossip::BacklogEntry> list;
  for (const Peer& peer : peers_) {
    if (list.size() == gossip::kMaxBacklogEntries) break;
    if (peer.id.empty() || !peer.live) continue;
    list.push_back({.member = peer.id, .requests = 1, .work_ms = gossip::kMaxBacklogWorkMs});
  }
  std::sort(list.begin(), list.end(),
            [](const gossip::BacklogEntry& a, const gossip::BacklogEntry& b) {
              return a.member < b.member;
            });
  return list;
}

void Node::NoteListedWork(std::span<const gossip::BacklogEntry> list, TimePoint now) {
  for (const gossip::BacklogEntry& e : list) {
    listed_work_until_ = std::max(listed_work_until_, now + FromMillis(e.work_ms));
  }
}

SharedBacklog Node::ReportedBacklog(TimePoint now) const {
  SharedBacklog sum;
  SumBacklogInto(sum, now);
  return sum;
}

void Node::SumBacklogInto(SharedBacklog& sum, TimePoint now) const {
  sum.Clear();
  sum.set_trimmed(options_.shared_backlog.trimmed_listers);
  if (!options_.shared_backlog.enabled || !trust_.options().enabled) return;
  if (now >= listed_work_until_) return;
  sum.AddOwn(options_.id, own_backlog_, now - own_backlog_at_);
  for (const Peer& peer : peers_) {
    if (peer.id.empty()) continue;
    const double trust = trust_.Of(peer.id).trust();
    // Answers that fell short of the member's claims: this node's own reason to doubt it.
    if (trust < 1) sum.Doubt(peer.id);
    if (!peer.live || !peer.has_load || peer.load.backlog.empty()) continue;
    sum.Add(peer.id, peer.load.backlog, now - peer.load_at, trust);
  }
}

}  // namespace hearsay::node
