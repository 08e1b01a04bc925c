// Node: the index of forwards in flight by member, and their abort when gossip declares the
// member dead or restarted, or suspects it while its forward is silent (node.h: TrackForward,
// UntrackForward, AbortForwards, AbortSilentForwardsToSuspects).
#include <algorithm>

#include "hearsay/node/node.h"

namespace hearsay::node {

void Node::TrackForward(uint64_t token, Pending& p, const Peer& peer) {
  p.forward_to = peer.id;
  p.forward_generation = peer.generation;
  forwards_by_member_[peer.id].push_back(token);
}

void Node::UntrackForward(uint64_t token, Pending& p) {
  if (p.forward_to.empty()) return;
  auto it = forwards_by_member_.find(p.forward_to);
  p.forward_to.clear();
  if (it == forwards_by_member_.end()) return;  // aborted: the index let go of it already
  std::vector<uint64_t>& tokens = it->second;
  auto at = std::find(tokens.begin(), tokens.end(), token);
  if (at != tokens.end()) {
    *at = tokens.back();
    tokens.pop_back();
  }
  if (tokens.empty()) forwards_by_member_.erase(it);
}

void Node::AbortForwards(const NodeId& member, Generation generation, bool gone) {
  auto it = forwards_by_member_.find(member);
  if (it == forwards_by_member_.end()) return;
  std::vector<uint64_t>& tokens = it->second;
  // The peer client answers each abort later, with the forward's terminal OnError: that runs
  // the usual failure path (OnForwardError), retrying or ending the client's stream.
  const Status status =
      UnavailableError("member " + member + (gone ? " declared dead" : " restarted"));
  for (size_t i = 0; i < tokens.size();) {
    auto p = pending_.find(tokens[i]);
    if (p == pending_.end() || p->second.forward_to != member) {  // stale: not tracked any more
      tokens[i] = tokens.back();
      tokens.pop_back();
      continue;
    }
    const Generation g = p->second.forward_generation;
    if (g > generation || (g == generation && !gone)) {
      ++i;
      continue;
    }
    p->second.forward_to.clear();
    ++stats_.forwards_aborted_member_dead;
    peer_client_.Abort(tokens[i], status);
    tokens[i] = tokens.back();
    tokens.pop_back();
  }
  if (tokens.empty()) forwards_by_member_.erase(it);
}

void Node::AbortSilentForwardsToSuspects() {
  if (options_.suspect_silence <= Duration{0} || forwards_by_member_.empty()) return;
  const TimePoint now = scheduler_.clock().Now();
  std::vector<uint64_t> silent;
  for (const auto& [member, tokens] : forwards_by_member_) {
    std::optional<prefix::PeerSlot> s = peer_index_.FindSlot(member);
    if (!s || *s >= peers_.size() || peers_[*s].live) continue;
    for (uint64_t token : tokens) {
      auto p = pending_.find(token);
      if (p == pending_.end() || p->second.forward_to != member) continue;
      if (p->second.forward_generation != peers_[*s].generation) continue;
      if (now - p->second.last_heard >= options_.suspect_silence) silent.push_back(token);
    }
  }
  for (uint64_t token : silent) {
    Pending& p = pending_.find(token)->second;
    const Status status = UnavailableError(
        "member " + p.forward_to + " suspected and silent for " +
        std::to_string(static_cast<int64_t>(ToMillis(now - p.last_heard))) + " ms");
    UntrackForward(token, p);
    ++stats_.forwards_aborted_suspect_silent;
    peer_client_.Abort(token, status);
  }
}

}  // namespace hearsay::node
