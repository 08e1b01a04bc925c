// Node: models in a pool (model_routing.h): resolving a request's model, who serves it, and the
// pool's view for the hosts.
#include <algorithm>
#include <map>
#include <set>

#include "hearsay/node/node.h"

namespace hearsay::node {
namespace {

ModelTarget TargetOf(const gossip::EngineService& e, std::string adapter = {}) {
  return ModelTarget{e.model, std::move(adapter), e.tokenizer_fingerprint, e.block_tokens};
}

bool TargetLess(const ModelTarget& a, const ModelTarget& b) {
  return std::tie(a.model, a.adapter, a.tokenizer_fingerprint, a.block_tokens) <
         std::tie(b.model, b.adapter, b.tokenizer_fingerprint, b.block_tokens);
}

}  // namespace

bool Node::ServesHere(const Pending& p) const {
  return !p.target || ServesTarget(options_.service, *p.target);
}

bool Node::PeerServes(const Peer& peer, const ModelTarget& target) const {
  return peer.live && peer.has_service && ServesTarget(peer.service, target);
}

Result<std::optional<ModelTarget>> Node::ResolveModel(std::string_view model) const {
  if (options_.service.engines.empty()) return std::optional<ModelTarget>();
  if (std::optional<ModelTarget> own = ResolveIn(options_.service, model)) return own;
  if (std::optional<ModelTarget> theirs = ResolveAmongPeers(model)) return theirs;
  return NotFoundError("model '" + PrintableModelName(model) +
                       "' is not served by any live member of the pool");
}

std::optional<ModelTarget> Node::ResolveAmongPeers(std::string_view name) const {
  // By canonical name first, then by alias, then as an adapter; within the first kind that
  // matches, the target most live servers agree on (the smallest on a tie), so a member that
  // claims the name with another tokenizer does not decide for the rest.
  for (int kind = 0; kind < 3; ++kind) {
    std::vector<std::pair<ModelTarget, size_t>> votes;
    for (const Peer& peer : peers_) {
      if (peer.id.empty() || !peer.live || !peer.has_service) continue;
      for (const gossip::EngineService& e : peer.service.engines) {
        std::optional<ModelTarget> t;
        if (kind == 0 && e.model == name) t = TargetOf(e);
        if (kind == 1 && std::find(e.aliases.begin(), e.aliases.end(), name) != e.aliases.end()) {
          t = TargetOf(e);
        }
        if (kind == 2 &&
            std::find(e.adapters.begin(), e.adapters.end(), name) != e.adapters.end()) {
          t = TargetOf(e, std::string(name));
        }
        if (!t) continue;
        auto it =
            std::find_if(votes.begin(), votes.end(), [&](const auto& v) { return v.first == *t; });
        if (it == votes.end()) {
          votes.emplace_back(std::move(*t), 1);
        } else {
          ++it->second;
        }
        break;  // one vote per member
      }
    }
    if (votes.empty()) continue;
    auto best = std::min_element(votes.begin(), votes.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : TargetLess(a.first, b.first);
    });
    return best->first;
  }
  return std::nullopt;
}

void Node::FailUnserved(uint64_t token, Status status) {
  auto it = pending_.find(token);
  if (it == pending_.end()) return;
  ResponseSink* sink = it->second.sink;
  const uint64_t client_id = it->second.client_id;
  EndAttempt(it->second, "failed");
  EmitRoute(it->second, status.ToString());
  pending_.erase(it);
  ++stats_.failed;
  PostUnserved(token, client_id, sink, std::move(status));
}

Status Node::SetService(gossip::Service service) {
  HEARSAY_RETURN_IF_ERROR(gossip_->SetService(service));
  options_.service = std::move(service);
  return OkStatus();
}

std::optional<gossip::Service> Node::MemberService(const NodeId& member) const {
  if (member == options_.id) return options_.service;
  std::optional<prefix::PeerSlot> s = peer_index_.FindSlot(member);
  if (!s || *s >= peers_.size()) return std::nullopt;
  const Peer& p = peers_[*s];
  if (!p.live || !p.has_service) return std::nullopt;
  return p.service;
}

std::vector<PoolModel> Node::PoolModels() const {
  std::map<std::string, PoolModel> models;
  std::map<std::string, std::set<std::string>> aliases, adapters;
  auto add = [&](const gossip::Service& service, bool self) {
    std::set<std::string> counted;
    for (const gossip::EngineService& e : service.engines) {
      PoolModel& m = models[e.model];
      m.model = e.model;
      m.context_tokens = std::max(m.context_tokens, e.context_tokens);
      m.served_here |= self;
      if (counted.insert(e.model).second) ++m.live_members;
      aliases[e.model].insert(e.aliases.begin(), e.aliases.end());
      adapters[e.model].insert(e.adapters.begin(), e.adapters.end());
    }
  };
  add(options_.service, true);
  for (const Peer& peer : peers_) {
    if (!peer.id.empty() && peer.live && peer.has_service) add(peer.service, false);
  }
  std::vector<PoolModel> out;
  out.reserve(models.size());
  for (auto& [name, m] : models) {
    m.aliases.assign(aliases[name].begin(), aliases[name].end());
    m.adapters.assign(adapters[name].begin(), adapters[name].end());
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<ServiceConflict> Node::ServiceConflicts() const {
  std::vector<ServiceConflict> out;
  for (const gossip::EngineService& own : options_.service.engines) {
    for (const Peer& peer : peers_) {
      if (peer.id.empty() || !peer.live || !peer.has_service) continue;
      for (const gossip::EngineService& e : peer.service.engines) {
        if (e.model != own.model || (e.tokenizer_fingerprint == own.tokenizer_fingerprint &&
                                     e.block_tokens == own.block_tokens)) {
          continue;
        }
        out.push_back({own.model, peer.id, own.tokenizer_fingerprint, own.block_tokens,
                       e.tokenizer_fingerprint, e.block_tokens});
        break;
      }
    }
  }
  return out;
}

void Node::OnPeerService(const NodeId& id, Generation generation, const gossip::Service& service) {
  Peer* p = EnsurePeer(id, generation);
  if (p == nullptr) return;
  p->has_service = true;
  p->service = service;
  for (const gossip::EngineService& own : options_.service.engines) {
    if (ConflictsWith(service, TargetOf(own))) {
      ++stats_.service_conflicts;
      break;
    }
  }
}

}  // namespace hearsay::node
