#include <algorithm>
#include <cmath>
#include <utility>

#include "hearsay/gossip/node.h"
#include "hearsay/gossip/node_internal.h"

namespace hearsay::gossip {

using node_internal::HashId;
using node_internal::IsLive;
using node_internal::kIdBefore;

// ---------------------------------------------------------------------------------------------
// Membership

MemberUpdate Node::SelfUpdate(MemberState state) {
  MemberUpdate u{state, id_, address_, generation_, incarnation_, {}, config_.api_address};
  // The key travels with "alive" only: it is what a peer binds (other states need no key).
  if (state == MemberState::kAlive) u.signing_key = signing_public_key();
  if (!signing()) return u;
  // Signed once per incarnation: refutations, notices and push-pulls repeat it.
  std::optional<MemberUpdate>& held = self_signed_[static_cast<size_t>(state)];
  if (!held || held->incarnation != incarnation_) {
    SignMemberUpdate(u);
    held = std::move(u);
  }
  return *held;
}

MemberUpdate Node::UpdateOf(const MemberRec& m) const {
  if (signing()) {
    // Relay what its signers said, unchanged; without it, an unsigned update that peers apply
    // only where it changes nothing.
    if (m.state == MemberState::kSuspect && !m.accusations.empty()) return m.accusations.front();
    if (m.state == MemberState::kDead && m.verdict) return *m.verdict;
    if (m.statement && m.statement->state == m.state && m.statement->generation == m.generation &&
        m.statement->incarnation == m.incarnation) {
      MemberUpdate u = *m.statement;
      if (m.state == MemberState::kAlive && m.key_generation == m.generation) {
        u.signing_key = m.signing_key;
      }
      return u;
    }
  }
  MemberUpdate u{m.state, m.id, m.address, m.generation, m.incarnation, {}, m.api_address};
  if (m.state == MemberState::kSuspect && !m.accusers.empty()) u.accuser = m.accusers.front();
  if (m.state == MemberState::kAlive && m.key_generation == m.generation) {
    u.signing_key = m.signing_key;
  }
  return u;
}

void Node::ApplyUpdate(const MemberUpdate& u) {
  Admission admission = Admission::kNoChange;
  if (signing()) {
    admission = AdmitMemberUpdate(u);
    if (admission == Admission::kRefused) return;
  }
  ApplyMembership(u);
  if (admission == Admission::kVerified) KeepStatement(u);
  if (u.signing_key.empty() || u.id == id_ || !signing()) return;
  auto it = members_.find(u.id);
  if (it == members_.end() || it->second.generation != u.generation) return;
  if (config_.key_source != nullptr) {
    ConfirmKey(it->second, &u.signing_key);
    return;
  }
  BindKey(it->second, u.signing_key);
}

void Node::BindKey(MemberRec& m, const std::string& key) {
  if (m.key_generation == m.generation && !m.signing_key.empty()) {
    if (m.signing_key != key) ++counters_.signing_key_conflicts;
    return;
  }
  m.signing_key = key;
  m.key_generation = m.generation;
  // News to pass on: peers that first heard of the member from a message header (which carries
  // no key) would otherwise learn its key only from a push-pull.
  if (m.state == MemberState::kAlive) Broadcast(UpdateOf(m));
}

int Node::TransmitLimit() const {
  const double n = static_cast<double>(ClusterSize());
  return config_.retransmit_mult * static_cast<int>(std::ceil(std::log10(n + 1.0)));
}

void Node::NewStore(MemberRec& m) {
  if (m.store) DropStore(m);
  m.store = std::make_unique<OriginStore>(
      m.id, m.generation, config_.min_tombstones,
      shared_ != nullptr ? shared_->For(m.id, m.generation) : nullptr, /*writer=*/false);
  if (signing()) m.store->set_whole_runs(true);
  if (config_.signatures == SignatureMode::kEd25519) m.store->EnableCommitment();
  m.pull_version = 0;
  m.pull_until = TimePoint{};
  m.seen_version = 0;
  digest_hash_ ^= DigestTerm(m.id_hash, m.generation, 0);
  ++digest_count_;
}

void Node::DropStore(MemberRec& m) {
  if (!m.store) return;
  digest_hash_ ^= DigestTerm(m.id_hash, m.store->generation(), m.store->max_version());
  --digest_count_;
  m.store.reset();
  m.load = LoadRecord{};
  m.service_version = 0;
  m.usage_version = 0;
}

void Node::SetState(MemberRec& m, MemberState state) {
  const MemberState old = m.state;
  if (IsLive(old) != IsLive(state)) {
    live_count_ += IsLive(state) ? 1 : -1;
    live_dirty_ = true;
  }
  m.state = state;
  m.since = scheduler_.clock().Now();
  ++routes_version_;
  if (old == MemberState::kSuspect && state != MemberState::kSuspect) {
    if (m.suspicion_timer != kNoTimer) scheduler_.Cancel(m.suspicion_timer);
    m.suspicion_timer = kNoTimer;
    m.accusers.clear();
    m.accusations.clear();
  }
  if (state != MemberState::kDead) m.verdict.reset();
  if (IsLive(state) && !m.store) NewStore(m);
  if (!IsLive(state)) DropStore(m);
  if (listener_ != nullptr && old != state) listener_->OnMemberChanged(m.id, m.generation, state);
}

void Node::StartSuspicion(MemberRec& m, const MemberUpdate& accusation) {
  SetState(m, MemberState::kSuspect);
  m.suspect_start = scheduler_.clock().Now();
  m.accusers.assign(1, accusation.accuser);
  m.accusations.clear();
  if (signing()) m.accusations.push_back(accusation);
  m.probed_as_suspect = accusation.accuser == id_;
  const double n = static_cast<double>(ClusterSize());
  if (!m.probed_as_suspect && n > config_.refute_fanout) {
    // Only about refute_fanout of the hearers probe it out of turn (as many as pass the
    // accusation to the suspect directly): every failed probe anywhere makes a suspect that
    // everyone hears of, and at N = 256 and 50% loss each node heard of ~1.8 suspicions a
    // second, more than its one probe a second. Probing each first left the round-robin hardly
    // any: a killed member could go unprobed for seconds after its death (docs/gossip.md,
    // "Membership").
    m.probed_as_suspect = !rng_.Bernoulli(config_.refute_fanout / n);
  }
  RescheduleSuspicion(m);
}

void Node::AddConfirmation(MemberRec& m, const MemberUpdate& accusation) {
  const NodeId& accuser = accusation.accuser;
  if (accuser.empty()) return;
  if (std::find(m.accusers.begin(), m.accusers.end(), accuser) != m.accusers.end()) return;
  const SuspicionBounds b = ComputeSuspicionBounds(
      config_.suspicion_mult, config_.suspicion_max_mult, ClusterSize(), config_.probe_interval);
  if (static_cast<int>(m.accusers.size()) > b.expected_confirmations) return;
  m.accusers.push_back(accuser);
  RescheduleSuspicion(m);
  if (signing()) {
    m.accusations.push_back(accusation);
    Broadcast(accusation);
    return;
  }
  MemberUpdate u = UpdateOf(m);
  u.accuser = accuser;
  Broadcast(u);
}

bool Node::TakeAccusationToken(const NodeId& accuser) {
  if (!signing() || config_.accuser_rate <= 0 || accuser == id_) return true;
  auto it = members_.find(accuser);
  if (it == members_.end()) return true;  // refused earlier: its signature has no key here
  MemberRec& a = it->second;
  const TimePoint now = scheduler_.clock().Now();
  const double burst = static_cast<double>(config_.accuser_burst);
  const double refill = a.accusation_tokens_at == TimePoint{}
                            ? burst
                            : config_.accuser_rate * ToMillis(now - a.accusation_tokens_at) /
                                  ToMillis(config_.probe_interval);
  a.accusation_tokens = std::min(burst, a.accusation_tokens + refill);
  a.accusation_tokens_at = now;
  if (a.accusation_tokens < 1) {
    ++counters_.accusations_limited;
    return false;
  }
  a.accusation_tokens -= 1;
  return true;
}

void Node::RescheduleSuspicion(MemberRec& m) {
  const SuspicionBounds b = ComputeSuspicionBounds(
      config_.suspicion_mult, config_.suspicion_max_mult, ClusterSize(), config_.probe_interval);
  const Duration timeout = SuspicionTimeout(b, static_cast<int>(m.accusers.size()) - 1);
  if (m.suspicion_timer != kNoTimer) scheduler_.Cancel(m.suspicion_timer);
  const Duration left = m.suspect_start + timeout - scheduler_.clock().Now();
  m.suspicion_timer = AfterFn(
      std::max(left, Duration::zero()),
      [this, id = m.id, g = m.generation, inc = m.incarnation] { SuspicionExpired(id, g, inc); });
}

void Node::SuspicionExpired(const NodeId& id, Generation generation, uint64_t incarnation) {
  auto it = members_.find(id);
  if (it == members_.end()) return;
  MemberRec& m = it->second;
  m.suspicion_timer = kNoTimer;
  if (m.generation != generation || m.incarnation != incarnation ||
      m.state != MemberState::kSuspect) {
    return;
  }
  const MemberUpdate u = Accusation(m, MemberState::kDead);
  SetState(m, MemberState::kDead);
  if (signing()) m.verdict = u;
  Broadcast(u);
}

void Node::ApplyAboutSelf(const MemberUpdate& u) {
  if (left_ || u.generation != generation_) return;
  // With signatures, only this node states its incarnations: a higher one is a lie that peers
  // refuse (an "alive" fails its signature, an accusation is ahead of what they know), so it
  // needs no refutation, and a refutation never takes its number from a liar (one naming the
  // last incarnation would leave none above it).
  if (signing() && u.incarnation > incarnation_) return;
  if (u.incarnation < incarnation_) {
    // Already refuted, but whoever passed this on may still hold the accusation: OnMessage
    // answers it directly.
    if (u.state != MemberState::kAlive) stale_accusation_ = true;
    return;
  }
  if (u.state == MemberState::kAlive && u.incarnation == incarnation_) return;
  // Someone believes we are suspect, dead or gone (or knows a newer incarnation): refute.
  incarnation_ = signing() ? incarnation_ + 1 : u.incarnation + 1;
  const MemberUpdate alive = SelfUpdate(MemberState::kAlive);
  Broadcast(alive);
  if (u.state != MemberState::kAlive) {
    ++counters_.refutations;
    AddHealth(1);
    // Tell a few members directly; the broadcast does the rest before timers expire.
    for (MemberRec* m : RandomLive(static_cast<size_t>(config_.refute_fanout), {})) {
      SendNotice(m->address, alive);
    }
  }
}

void Node::ApplyMembership(const MemberUpdate& u) {
  if (u.id == id_) {
    ApplyAboutSelf(u);
    return;
  }
  auto it = members_.find(u.id);
  if (it == members_.end()) {
    if (u.state != MemberState::kAlive) return;
    MemberRec rec;
    rec.id = u.id;
    rec.address = u.address;
    rec.api_address = u.api_address;
    rec.generation = u.generation;
    rec.incarnation = u.incarnation;
    rec.id_hash = HashId(u.id);
    rec.state = MemberState::kDead;  // so SetState reports the transition to alive
    MemberRec& m = members_.emplace(u.id, std::move(rec)).first->second;
    ordered_.insert(std::lower_bound(ordered_.begin(), ordered_.end(), u.id, kIdBefore), &m);
    SetState(m, MemberState::kAlive);
    // A new member joins the current probe pass at a random place among the members still to be
    // probed (as memberlist does); otherwise it waits for the next pass, which starts only after
    // every member known at the last shuffle was probed: about N seconds. Until then only
    // silence and suspicion probes reach a member that joined after most passes began
    // (docs/gossip.md, "Membership").
    const size_t left = probe_order_.size() - std::min(probe_pos_, probe_order_.size());
    probe_order_.insert(probe_order_.end() - static_cast<std::ptrdiff_t>(rng_.Below(left + 1)),
                        u.id);
    Broadcast(u);
    return;
  }
  MemberRec& m = it->second;
  if (u.generation < m.generation) return;
  // A member sets its api address once per life, so any update of this life may fill it in
  // (the first sighting may have come from a message header, which lacks it).
  if (u.generation == m.generation && m.api_address.empty() && !u.api_address.empty()) {
    m.api_address = u.api_address;
    ++routes_version_;
  }
  if (u.generation > m.generation) {
    // A new life: whatever we knew about the old one is void, its cache included.
    DropStore(m);
    if (m.state == MemberState::kSuspect) SetState(m, MemberState::kDead);
    m.generation = u.generation;
    m.incarnation = u.incarnation;
    m.address = u.address;
    m.api_address = u.api_address;
    m.has_rtt = false;
    const MemberState target = u.state == MemberState::kSuspect ? MemberState::kAlive : u.state;
    if (IsLive(m.state)) --live_count_;
    live_dirty_ = true;
    m.state = MemberState::kDead;  // report the new generation even if the state is the same
    SetState(m, target);
    if (IsLive(target) && !m.store) NewStore(m);
    if (u.state == MemberState::kSuspect) StartSuspicion(m, u);
    Broadcast(u);
    return;
  }
  switch (u.state) {
    case MemberState::kAlive:
      if (u.incarnation > m.incarnation) {
        m.incarnation = u.incarnation;
        m.address = u.address;
        m.api_address = u.api_address;
        ++routes_version_;
        if (m.state != MemberState::kAlive) SetState(m, MemberState::kAlive);
        Broadcast(u);
      } else if (m.state == MemberState::kSuspect || m.state == MemberState::kDead) {
        // Lifeguard: a stale "alive" means the sender has not heard our accusation; repeat it.
        if (broadcasts_.Find(m.id) == nullptr) Broadcast(UpdateOf(m));
      }
      return;
    case MemberState::kSuspect:
      if (u.incarnation < m.incarnation) {
        // An accusation of an older incarnation: too stale to start a suspicion, but it still
        // says another member failed to reach it, so it confirms one we already hold.
        if (m.state == MemberState::kSuspect) AddConfirmation(m, u);
        return;
      }
      if (!IsLive(m.state)) {
        // The accuser has not heard that it is already dead (or gone): repeat that.
        if (broadcasts_.Find(m.id) == nullptr) Broadcast(UpdateOf(m));
        return;
      }
      if (m.state == MemberState::kAlive || u.incarnation > m.incarnation) {
        if (!TakeAccusationToken(u.accuser)) return;
        m.incarnation = u.incarnation;
        StartSuspicion(m, u);
        Broadcast(u);
        // A few of those who hear an accusation pass it to the suspect directly.
        if (rng_.Bernoulli(static_cast<double>(config_.refute_fanout) /
                           static_cast<double>(ClusterSize()))) {
          SendNotice(m.address, u);
        }
      } else {
        AddConfirmation(m, u);
      }
      return;
    case MemberState::kDead:
      if (u.incarnation < m.incarnation) {
        if (m.state == MemberState::kSuspect) AddConfirmation(m, u);
        return;
      }
      if (!IsLive(m.state)) return;
      // Another member's verdict. Deaths are only ever declared by one's own suspicion timer:
      // the verdict starts (or confirms) a suspicion, so a member that is in fact alive (say,
      // on the other side of a partition that just healed) still has time to refute.
      if (m.state == MemberState::kAlive || u.incarnation > m.incarnation) {
        if (!TakeAccusationToken(u.accuser)) return;
        m.incarnation = u.incarnation;
        StartSuspicion(m, u);
        if (rng_.Bernoulli(static_cast<double>(config_.refute_fanout) /
                           static_cast<double>(ClusterSize()))) {
          SendNotice(m.address, u);
        }
      } else {
        AddConfirmation(m, u);
      }
      Broadcast(u);
      return;
    case MemberState::kLeft:
      if (u.incarnation < m.incarnation || m.state == MemberState::kLeft) return;
      m.incarnation = u.incarnation;
      SetState(m, MemberState::kLeft);
      Broadcast(u);
      return;
  }
}

// ---------------------------------------------------------------------------------------------
// Member selection

size_t Node::OrderedIndex(const NodeId& id) const {
  auto it = std::lower_bound(ordered_.begin(), ordered_.end(), id, kIdBefore);
  return it == ordered_.end() || (*it)->id != id ? ordered_.size()
                                                 : static_cast<size_t>(it - ordered_.begin());
}

const std::vector<Node::MemberRec*>& Node::LiveMembers() {
  if (live_dirty_) {
    live_.clear();
    for (MemberRec* m : ordered_) {
      if (IsLive(m->state)) live_.push_back(m);
    }
    live_dirty_ = false;
  }
  return live_;
}

std::vector<Node::MemberRec*> Node::RandomLive(size_t k, const NodeId& exclude) {
  // A partial Fisher-Yates over the live members without `exclude`, in id order: the first k are
  // a uniform sample. Only the touched positions are materialized (k is small, the cluster may
  // not be), so a pick costs O(k log N) instead of a walk over every member.
  const std::vector<MemberRec*>& live = LiveMembers();
  size_t skip = live.size();
  if (!exclude.empty()) {
    auto it = std::lower_bound(live.begin(), live.end(), exclude, kIdBefore);
    if (it != live.end() && (*it)->id == exclude) skip = static_cast<size_t>(it - live.begin());
  }
  const size_t size = live.size() - (skip < live.size() ? 1 : 0);
  std::vector<std::pair<size_t, MemberRec*>> moved;  // position -> member, once swapped
  auto get = [&](size_t pos) {
    for (const auto& [p, m] : moved) {
      if (p == pos) return m;
    }
    return live[pos >= skip ? pos + 1 : pos];
  };
  auto set = [&](size_t pos, MemberRec* m) {
    for (auto& [p, old] : moved) {
      if (p == pos) {
        old = m;
        return;
      }
    }
    moved.emplace_back(pos, m);
  };
  const size_t n = std::min(k, size);
  std::vector<MemberRec*> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const size_t j = i + static_cast<size_t>(rng_.Below(size - i));
    MemberRec* at_i = get(i);
    MemberRec* at_j = get(j);
    set(i, at_j);
    set(j, at_i);
    out.push_back(at_j);
  }
  return out;
}

}  // namespace hearsay::gossip
