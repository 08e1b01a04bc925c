#include "hearsay/sim/gossip_cluster.h"

#include <algorithm>

namespace hearsay::sim {

using gossip::MemberState;

// ---------------------------------------------------------------------------------------------
// ModelListener

void ModelListener::OnMemberChanged(const NodeId& id, Generation g, MemberState s) {
  if (hook_) hook_(id, g, s);
  Peer& p = peers_[id];
  if (g != p.generation || (s != MemberState::kAlive && s != MemberState::kSuspect)) {
    p.cache.clear();
    ++p.epoch;
  }
  p.generation = g;
}

void ModelListener::OnPeerCacheEvents(const NodeId& id, Generation,
                                      std::span<const prefix::BlockEvent> events) {
  if (!model_caches_) return;
  Peer& p = peers_[id];
  for (const auto& e : events) {
    const bool changed = e.kind == prefix::BlockEvent::Kind::kAdded ? p.cache.insert(e.key).second
                                                                    : p.cache.erase(e.key) == 1;
    if (!changed) ++inconsistent_;
  }
}

void ModelListener::OnPeerCacheSnapshot(const NodeId& id, Generation,
                                        std::span<const prefix::BlockEvent> live) {
  if (!model_caches_) return;
  Peer& p = peers_[id];
  p.cache.clear();
  for (const auto& e : live) p.cache.insert(e.key);
}

const std::set<prefix::BlockKey>& ModelListener::cache(const NodeId& id) const {
  static const std::set<prefix::BlockKey> kEmpty;
  auto it = peers_.find(id);
  return it == peers_.end() ? kEmpty : it->second.cache;
}

uint64_t ModelListener::epoch(const NodeId& id) const {
  auto it = peers_.find(id);
  return it == peers_.end() ? 0 : it->second.epoch;
}

// ---------------------------------------------------------------------------------------------
// GossipCluster

namespace {
simenv::SimNetwork::Options NetOptions(const GossipCluster::Options& o, uint64_t seed) {
  simenv::SimNetwork::Options n;
  n.seed = seed;
  n.defaults = o.faults;
  return n;
}
}  // namespace

GossipCluster::GossipCluster(Options options)
    : options_(std::move(options)),
      net_(scheduler_, NetOptions(options_, options_.seed * 0x9e3779b97f4a7c15ULL + 1)),
      rng_(options_.seed) {
  if (options_.secure) {
    std::array<uint8_t, gossip::kClusterKeyBytes> raw{};
    for (auto& b : raw) b = static_cast<uint8_t>(rng_.NextU64());
    Result<gossip::ClusterKey> key = gossip::ClusterKey::FromBytes(raw);
    HEARSAY_CHECK(key.ok());
    keyring_.Install(*key).IgnoreError();
  }
  for (int i = 0; i < std::min(options_.seed_nodes, options_.nodes); ++i) seeds_.push_back(Name(i));
  members_.resize(static_cast<size_t>(options_.nodes));
  for (int i = 0; i < options_.nodes; ++i) {
    Member& m = members_[i];
    m.proxy = std::make_unique<Proxy>();
    Result<Transport*> t = net_.Attach(Name(i), m.proxy.get());
    HEARSAY_CHECK(t.ok());
    m.generation = 1;
    Build(i, **t);
  }
}

GossipCluster::~GossipCluster() {
  for (auto& m : members_) {
    if (m.proxy) m.proxy->node = nullptr;
  }
}

std::string GossipCluster::Name(int i) {
  std::string s = std::to_string(i);
  s.insert(s.begin(), 'n');
  return s;
}

void GossipCluster::Build(int i, Transport& transport) {
  Member& m = members_[i];
  m.node.reset();
  m.rng = std::make_unique<Rng>(rng_.Fork());
  m.sched = std::make_unique<simenv::ScopedScheduler>(scheduler_);
  ModelListener::MemberHook hook;
  if (options_.on_member_changed) {
    hook = [this, i](const NodeId& id, Generation g, MemberState st) {
      options_.on_member_changed(i, id, g, st);
    };
  }
  ModelListener::UsageHook usage_hook;
  if (options_.on_peer_usage) {
    usage_hook = [this, i](const NodeId& id, Generation g, const gossip::UsageRecord& u) {
      options_.on_peer_usage(i, id, g, u);
    };
  }
  m.listener = std::make_unique<ModelListener>(std::move(hook), options_.model_caches,
                                               std::move(usage_hook));
  gossip::Framer* framer = nullptr;
  if (options_.secure) {
    m.framer.reset();
    m.sealer.reset();
    m.opener.reset();
    auto sealer = gossip::Sealer::Create("sim", Name(i), m.generation, &keyring_);
    auto opener = gossip::Opener::Create("sim", &keyring_);
    HEARSAY_CHECK(sealer.ok() && opener.ok());
    m.sealer.emplace(std::move(*sealer));
    m.opener.emplace(std::move(*opener));
    m.framer = std::make_unique<gossip::EnvelopeFramer>(*m.sealer, *m.opener);
    framer = m.framer.get();
  }
  m.node = std::make_unique<gossip::Node>(Name(i), m.generation, Name(i), options_.config, *m.sched,
                                          *m.rng, transport, framer, m.listener.get(),
                                          options_.share_replicas ? &histories_ : nullptr);
  m.proxy->node = m.node.get();
  m.up = true;
}

void GossipCluster::StartAll() {
  for (int i = 0; i < size(); ++i) Start(i);
}

void GossipCluster::Start(int i) { members_[i].node->Start(seeds_); }

void GossipCluster::Crash(int i) {
  Member& m = members_[i];
  if (!m.up) return;
  net_.Crash(Name(i)).IgnoreError();
  m.sched->CancelAll();
  m.proxy->node = nullptr;
  m.node.reset();
  m.up = false;
}

void GossipCluster::Restart(int i) {
  Member& m = members_[i];
  if (m.up) return;
  ++m.generation;
  Result<Transport*> t = net_.Restart(Name(i), m.proxy.get());
  HEARSAY_CHECK(t.ok());
  Build(i, **t);
  Start(i);
}

void GossipCluster::Leave(int i) {
  if (up(i)) members_[i].node->Leave();
}

// ---------------------------------------------------------------------------------------------
// GossipInvariants

void GossipInvariants::Check() {
  const std::string at = " at t=" + std::to_string(ToSeconds(c_.Now().time_since_epoch())) + "s";
  for (int i = 0; i < c_.size(); ++i) {
    if (!c_.up(i)) continue;
    const gossip::Node& obs = c_.node(i);
    const ModelListener& model = c_.model(i);
    if (model.inconsistent_events() > 0) {
      violations_.push_back(GossipCluster::Name(i) + " got inconsistent cache events" + at);
    }
    for (int j = 0; j < c_.size(); ++j) {
      if (j == i) continue;
      const NodeId name = GossipCluster::Name(j);
      const std::optional<gossip::MemberView> v = obs.Member(name);
      if (!v) continue;
      // No healthy node is declared dead.
      if (c_.up(j) && !unhealthy_.contains(j) && !unhealthy_.contains(i) &&
          v->generation == c_.generation(j) && v->state == MemberState::kDead) {
        violations_.push_back(GossipCluster::Name(i) + " declared healthy " + name + " dead" + at);
      }
      const gossip::OriginStore* s = obs.PeerStore(name);
      if (s == nullptr) continue;
      // Versions never go backwards within one replica's life.
      const uint64_t epoch = model.epoch(name);
      auto [it, inserted] =
          seen_.try_emplace({i, c_.generation(i), j}, Seen{s->generation(), epoch, 0});
      Seen& seen = it->second;
      if (seen.generation != s->generation() || seen.epoch != epoch) {
        seen = Seen{s->generation(), epoch, 0};
      }
      if (s->max_version() < seen.version) {
        violations_.push_back(GossipCluster::Name(i) + "'s version of " + name + " went back" + at);
      }
      seen.version = s->max_version();
      // A replica holds keys of one stride only: its own.
      if (s->stride() > 0) {
        for (const auto& e : s->LiveKeys()) {
          if (e.block_index % s->stride() != 0) {
            violations_.push_back(GossipCluster::Name(i) + "'s replica of " + name +
                                  " holds a key off its stride" + at);
            break;
          }
        }
      }
      // The listener's events reproduce the replica exactly.
      const auto& cache = model.cache(name);
      if (cache.size() != s->live_count()) {
        violations_.push_back(GossipCluster::Name(i) + "'s events disagree with its replica of " +
                              name + at);
      } else {
        for (auto key : cache) {
          if (!s->Contains(key)) {
            violations_.push_back(GossipCluster::Name(i) +
                                  "'s events disagree with its replica of " + name + at);
            break;
          }
        }
      }
      // A replica at the origin's version is the origin's state: nothing was skipped.
      if (c_.up(j) && c_.generation(j) == s->generation() &&
          c_.node(j).own_store().max_version() == s->max_version()) {
        const gossip::OriginStore& o = c_.node(j).own_store();
        bool same = o.live_count() == s->live_count();
        if (same) {
          for (const auto& e : o.LiveKeys()) {
            if (!s->Contains(e.key)) {
              same = false;
              break;
            }
          }
        }
        if (!same) {
          violations_.push_back(GossipCluster::Name(i) + "'s replica of " + name +
                                " differs from the origin at the same version" + at);
        }
      }
    }
  }
  if (violations_.size() > 20) violations_.resize(20);
}

void GossipInvariants::SetConvergenceTarget() {
  target_.clear();
  for (int j = 0; j < c_.size(); ++j) {
    if (c_.up(j)) target_[{j, c_.generation(j)}] = c_.node(j).own_store().max_version();
  }
}

bool GossipInvariants::Converged(std::string* why) const {
  for (int i = 0; i < c_.size(); ++i) {
    if (!c_.up(i)) continue;
    for (int j = 0; j < c_.size(); ++j) {
      if (j == i || !c_.up(j)) continue;
      const NodeId name = GossipCluster::Name(j);
      const auto v = c_.node(i).Member(name);
      const gossip::OriginStore* s = c_.node(i).PeerStore(name);
      auto t = target_.find({j, c_.generation(j)});
      const uint64_t want = t != target_.end() ? t->second : c_.node(j).own_store().max_version();
      const bool ok = v && v->generation == c_.generation(j) &&
                      (v->state == MemberState::kAlive || v->state == MemberState::kSuspect) &&
                      s != nullptr && s->max_version() >= want;
      if (!ok) {
        if (why != nullptr) {
          *why = GossipCluster::Name(i) + " has not converged on " + name;
          if (v) {
            *why += " (state " + std::string(gossip::MemberStateName(v->state)) + ", generation " +
                    std::to_string(v->generation) + " of " + std::to_string(c_.generation(j)) +
                    ", version " + std::to_string(s ? s->max_version() : 0) + " of " +
                    std::to_string(want) + ")";
          }
        }
        return false;
      }
    }
  }
  return true;
}

bool GossipInvariants::AllSeeDead(int i, Generation generation) const {
  for (int k = 0; k < c_.size(); ++k) {
    if (k == i || !c_.up(k)) continue;
    const auto v = c_.node(k).Member(GossipCluster::Name(i));
    if (!v) continue;  // never knew it
    if (v->generation > generation) continue;
    if (v->state != MemberState::kDead && v->state != MemberState::kLeft) return false;
  }
  return true;
}

}  // namespace hearsay::sim
