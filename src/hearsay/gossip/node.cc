#include "hearsay/gossip/node.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <string_view>
#include <utility>

#include "hearsay/gossip/landmark_stride.h"

namespace hearsay::gossip {
namespace {

// Orders members (id-sorted vectors of MemberRec*) against an id, for std::lower_bound.
constexpr auto kIdBefore = [](const auto* member, const NodeId& id) { return member->id < id; };

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t HashId(const NodeId& id) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : id) h = (h ^ c) * 0x100000001b3ULL;
  return Mix(h);
}

bool IsLive(MemberState s) { return s == MemberState::kAlive || s == MemberState::kSuspect; }

size_t DeltaSize(const OriginDelta& d) {
  size_t n = EncodedDeltaHeaderSize(d);
  if (d.snapshot) return n + d.entries.size() * kMaxSnapshotEntryBytes;
  uint64_t prev = d.from_version;
  for (const auto& e : d.entries) {
    n += EncodedRunEntrySize(e, prev);
    prev = e.version;
  }
  return n;
}

}  // namespace

std::string_view MemberStateName(MemberState state) {
  switch (state) {
    case MemberState::kAlive:
      return "alive";
    case MemberState::kSuspect:
      return "suspect";
    case MemberState::kDead:
      return "dead";
    case MemberState::kLeft:
      return "left";
  }
  return "unknown";
}

Node::Node(NodeId id, Generation generation, Address self, Config config, Scheduler& scheduler,
           Rng& rng, Transport& transport, Framer* framer, Listener* listener,
           SharedHistories* shared)
    : id_(std::move(id)),
      generation_(generation),
      address_(std::move(self)),
      config_(config),
      scheduler_(scheduler),
      rng_(rng),
      transport_(transport),
      framer_(framer != nullptr ? *framer : plaintext_),
      listener_(listener),
      shared_(shared),
      overload_(config.overload) {
  if (config_.landmark_stride == 0) config_.landmark_stride = 1;
  self_store_ =
      std::make_unique<OriginStore>(id_, generation_, config_.min_tombstones,
                                    shared_ != nullptr ? shared_->For(id_, generation_) : nullptr,
                                    /*writer=*/true, config_.landmark_stride);
  self_id_hash_ = HashId(id_);
  digest_hash_ = DigestTerm(self_id_hash_, generation_, 0);
  digest_count_ = 1;
}

Node::~Node() = default;

// ---------------------------------------------------------------------------------------------
// Timers

template <typename F>
TimerId Node::AfterFn(Duration d, F fn) {
  std::weak_ptr<int> token = alive_token_;
  return scheduler_.RunAfter(d, [token, fn = std::move(fn)]() mutable {
    if (token.expired()) return;
    fn();
  });
}

TimerId Node::After(Duration d, void (Node::*fn)()) {
  return AfterFn(d, [this, fn] { (this->*fn)(); });
}

void Node::Start(std::span<const Address> seeds) {
  if (started_) return;
  started_ = true;
  for (const auto& s : seeds) {
    if (s != address_) seeds_.push_back(s);
  }
  WriteOwnLoad();
  Broadcast(SelfUpdate(MemberState::kAlive));
  JoinTick();
  // Random phases, so nodes started together do not act in lockstep.
  auto jitter = [this](Duration d) {
    return Duration(static_cast<int64_t>(rng_.Below(static_cast<uint64_t>(d.count()) + 1)));
  };
  After(jitter(config_.probe_interval), &Node::ProbeTick);
  After(jitter(config_.gossip_interval), &Node::GossipTick);
  After(config_.push_pull_interval + jitter(config_.push_pull_interval), &Node::PushPullTick);
  After(config_.reconnect_interval + jitter(config_.reconnect_interval), &Node::ReconnectTick);
  After(config_.heartbeat_interval, &Node::HeartbeatTick);
}

void Node::JoinTick() {
  if (left_) return;
  // Every seed is contacted until it is a known member, not only until the first one answers:
  // if the seeds' first messages to each other are lost and each joiner reaches only one seed,
  // stopping early leaves two islands that never learn of each other (no member of one ever
  // names a member of the other). Once joined, the retries back off, so an unreachable seed
  // costs little.
  bool contacted = false;
  for (const auto& seed : seeds_) {
    if (KnowsAddress(seed)) continue;
    Message m = NewMessage(MsgType::kPushPull);
    m.reply_wanted = true;
    m.members.push_back(SelfUpdate(MemberState::kAlive));
    Send(seed, std::move(m));
    contacted = true;
  }
  if (live_member_count() == 0 || !contacted) {
    join_backoff_ = config_.join_retry_interval;
  } else {
    join_backoff_ = std::min(join_backoff_ * 2, config_.join_retry_max_interval);
  }
  After(join_backoff_, &Node::JoinTick);
}

bool Node::KnowsAddress(const Address& address) const {
  return std::any_of(ordered_.begin(), ordered_.end(),
                     [&](const MemberRec* m) { return m->address == address; });
}

void Node::Leave() {
  if (left_) return;
  MemberUpdate bye = SelfUpdate(MemberState::kLeft);
  for (MemberRec* m : RandomLive(2 * static_cast<size_t>(config_.gossip_fanout), {})) {
    for (int copy = 0; copy < 2; ++copy) SendNotice(m->address, bye);
  }
  left_ = true;
  // Stops every timer: pending ones see an expired token.
  alive_token_ = std::make_shared<int>(0);
}

void Node::HeartbeatTick() {
  if (left_) return;
  if (scheduler_.clock().Now() - last_load_write_ >= config_.heartbeat_interval) WriteOwnLoad();
  After(config_.heartbeat_interval, &Node::HeartbeatTick);
}

// ---------------------------------------------------------------------------------------------
// Probing (SWIM + Lifeguard)

Node::MemberRec* Node::NextProbeTarget() {
  // A suspect we have not probed since its suspicion started goes first: our own probe either
  // carries the suspicion to it (so it refutes sooner) or independently confirms it (so the
  // suspicion timeout shrinks, Lifeguard-style, without waiting for our round-robin turn).
  // (In a large cluster only a few of those who hear of a suspicion do so: StartSuspicion.)
  std::vector<MemberRec*> suspects;
  for (MemberRec* m : ordered_) {
    if (m->state == MemberState::kSuspect && !m->probed_as_suspect) suspects.push_back(m);
  }
  if (!suspects.empty()) {
    MemberRec* m = suspects[rng_.Below(suspects.size())];
    m->probed_as_suspect = true;
    return m;
  }
  if (MemberRec* m = SilentMember()) {
    m->silence_probed_at = scheduler_.clock().Now();
    ++counters_.silence_probes;
    return m;
  }
  for (int pass = 0; pass < 2; ++pass) {
    while (probe_pos_ < probe_order_.size()) {
      auto it = members_.find(probe_order_[probe_pos_++]);
      if (it != members_.end() && IsLive(it->second.state)) return &it->second;
    }
    probe_order_.clear();
    probe_pos_ = 0;
    for (const MemberRec* m : ordered_) {
      if (IsLive(m->state)) probe_order_.push_back(m->id);
    }
    rng_.Shuffle(probe_order_);
  }
  return nullptr;
}

Node::MemberRec* Node::SilentMember() {
  if (config_.silence_probe_mult <= 0) return nullptr;
  const TimePoint now = scheduler_.clock().Now();
  MemberRec* best = nullptr;
  Duration best_silence{};
  for (MemberRec* mp : ordered_) {
    MemberRec& m = *mp;
    // A few samples first, so the gap is the member's usual one (not the join's burst).
    if (m.state != MemberState::kAlive || m.evidence_samples < 8) continue;
    const TimePoint last = std::max(m.last_evidence_at, m.last_heard_at);
    if (m.silence_probed_at >= last) continue;  // already probed during this silence
    const Duration silence = now - last;
    const Duration limit = std::max(config_.silence_probe_min,
                                    FromMillis(config_.silence_probe_mult * m.evidence_gap_ms));
    if (silence > limit && silence > best_silence) {
      best = &m;
      best_silence = silence;
    }
  }
  return best;
}

void Node::ProbeTick() {
  if (left_) return;
  const Duration period = Scaled(config_.probe_interval);
  MemberRec* target = NextProbeTarget();
  if (target != nullptr) {
    const uint64_t seq = next_seq_++;
    Pending p;
    p.kind = PendingKind::kProbe;
    p.target = target->id;
    p.target_generation = target->generation;
    p.sent_at = scheduler_.clock().Now();
    p.sends = 1;
    pending_[seq] = p;
    ++counters_.probes;
    Message m = NewMessage(MsgType::kPing);
    m.seq = seq;
    m.target = target->id;
    // Lifeguard's buddy system: a suspect learns of its suspicion from the probe itself.
    Send(target->address, std::move(m), target->state == MemberState::kSuspect ? target->id : "");
    AfterFn(Scaled(config_.probe_timeout), [this, seq] { ProbeTimeout(seq); });
    // One more direct attempt halfway between the timeout and the end of the period.
    AfterFn((Scaled(config_.probe_timeout) + period) / 2, [this, seq] { RetryPing(seq); });
    AfterFn(period, [this, seq] { ProbeEnd(seq); });
  }
  After(period, &Node::ProbeTick);
}

bool Node::HeardSince(Pending& p) {
  if (p.heard) return true;
  auto it = members_.find(p.target);
  if (it == members_.end() || it->second.generation != p.target_generation) return false;
  const bool direct = it->second.last_heard_at >= p.sent_at;
  const bool relayed = config_.relayed_evidence && it->second.last_evidence_at >= p.sent_at;
  if (!direct && !relayed) return false;
  // Any authenticated message from the target since the probe started proves it alive as well
  // as an ack does. Under heavy loss this is what keeps a healthy member from being accused:
  // at 50% loss a probe's three direct round trips and three 4-hop indirect paths all fail
  // about a third of the time, while the target's own gossip (several messages a second to
  // each peer in a small cluster) almost always gets through. Each false accusation raised the
  // prober's and the suspect's local health, until probing ran at 9x its interval and a real
  // death took 20 s to confirm in a cluster of 8.
  // In a large cluster a node's own messages reach each peer seldom (its gossip is spread over
  // all of them), but its state, written many times a second under cache churn, reaches every
  // peer through the others within a second or two: a newer version arriving since the probe
  // started is the same proof, one hop removed. Without it, 27% of probes failed at N = 100
  // and 50% loss.
  p.heard = true;
  p.relayed = !direct;
  return true;
}

void Node::ProbeTimeout(uint64_t seq) {
  auto pit = pending_.find(seq);
  if (pit == pending_.end() || pit->second.acked) return;
  Pending& p = pit->second;
  if (HeardSince(p)) return;
  auto it = members_.find(p.target);
  if (it == members_.end() || !IsLive(it->second.state)) return;
  const Address target_address = it->second.address;
  for (MemberRec* helper : RandomLive(static_cast<size_t>(config_.indirect_probes), p.target)) {
    if (helper->state != MemberState::kAlive) continue;
    Message m = NewMessage(MsgType::kPingReq);
    m.seq = seq;
    m.target = p.target;
    m.target_address = target_address;
    Send(helper->address, std::move(m));
    ++p.expected_nacks;
  }
  RetryPing(seq);
}

void Node::RetryPing(uint64_t seq) {
  auto pit = pending_.find(seq);
  if (pit == pending_.end() || pit->second.acked || HeardSince(pit->second)) return;
  auto it = members_.find(pit->second.target);
  if (it == members_.end() || !IsLive(it->second.state)) return;
  // Another direct ping with its own seq (so its ack still gives a clean RTT sample), in case
  // the earlier ones or their acks were lost.
  const uint64_t retry = next_seq_++;
  pit->second.retry_seqs.push_back(retry);
  Pending r;
  r.kind = PendingKind::kRetry;
  r.target = pit->second.target;
  r.sent_at = scheduler_.clock().Now();
  r.req_seq = seq;
  const NodeId target = r.target;
  const Address address = it->second.address;
  pending_[retry] = r;
  Message m = NewMessage(MsgType::kPing);
  m.seq = retry;
  m.target = target;
  Send(address, std::move(m), target);
}

void Node::ProbeEnd(uint64_t seq) {
  auto pit = pending_.find(seq);
  if (pit == pending_.end()) return;
  if (!pit->second.acked) HeardSince(pit->second);
  const Pending p = pit->second;
  pending_.erase(pit);
  for (uint64_t r : p.retry_seqs) pending_.erase(r);
  if (p.acked || p.heard) {
    if (!p.acked) ++(p.relayed ? counters_.probes_relayed : counters_.probes_heard);
    AddHealth(-1);
    return;
  }
  ++counters_.probe_failures;
  // Lifeguard: a failed probe costs 1, and 1 more if not even one helper answered with a nack
  // (then our own link is likely the problem). Uniform loss then keeps the score near zero.
  AddHealth(p.expected_nacks > 0 && p.nacks == 0 ? 2 : 1);
  auto it = members_.find(p.target);
  if (it == members_.end() || it->second.generation != p.target_generation ||
      !IsLive(it->second.state)) {
    return;
  }
  MemberUpdate u = UpdateOf(it->second);
  u.state = MemberState::kSuspect;
  u.accuser = id_;
  ApplyUpdate(u);
  // Tell the suspect directly, twice, so it can refute before the accusation spreads far.
  for (int copy = 0; copy < 2; ++copy) SendNotice(it->second.address, u);
}

void Node::SendNotice(const Address& to, const MemberUpdate& u) {
  Message m = NewMessage(MsgType::kPushPull);
  m.members.push_back(u);
  Send(to, std::move(m));
}

void Node::SampleRtt(const NodeId& id, Duration rtt) {
  auto it = members_.find(id);
  if (it == members_.end()) return;
  MemberRec& m = it->second;
  const double sample = ToMillis(rtt);
  // TCP's smoothing (RFC 6298, alpha = 1/8).
  m.srtt_ms = m.has_rtt ? 0.875 * m.srtt_ms + 0.125 * sample : sample;
  m.has_rtt = true;
}

void Node::AddHealth(int delta) {
  local_health_ = std::clamp(local_health_ + delta, 0, config_.max_local_health);
}

// ---------------------------------------------------------------------------------------------
// Membership

MemberUpdate Node::SelfUpdate(MemberState state) const {
  return MemberUpdate{state, id_, address_, generation_, incarnation_, {}, config_.api_address};
}

MemberUpdate Node::UpdateOf(const MemberRec& m) const {
  MemberUpdate u{m.state, m.id, m.address, m.generation, m.incarnation, {}, m.api_address};
  if (m.state == MemberState::kSuspect && !m.accusers.empty()) u.accuser = m.accusers.front();
  return u;
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
}

void Node::SetState(MemberRec& m, MemberState state) {
  const MemberState old = m.state;
  if (IsLive(old) != IsLive(state)) {
    live_count_ += IsLive(state) ? 1 : -1;
    live_dirty_ = true;
  }
  m.state = state;
  m.since = scheduler_.clock().Now();
  if (old == MemberState::kSuspect && state != MemberState::kSuspect) {
    if (m.suspicion_timer != kNoTimer) scheduler_.Cancel(m.suspicion_timer);
    m.suspicion_timer = kNoTimer;
    m.accusers.clear();
  }
  if (IsLive(state) && !m.store) NewStore(m);
  if (!IsLive(state)) DropStore(m);
  if (listener_ != nullptr && old != state) listener_->OnMemberChanged(m.id, m.generation, state);
}

void Node::StartSuspicion(MemberRec& m, const NodeId& accuser) {
  SetState(m, MemberState::kSuspect);
  m.suspect_start = scheduler_.clock().Now();
  m.accusers.assign(1, accuser);
  m.probed_as_suspect = accuser == id_;
  const double n = static_cast<double>(ClusterSize());
  if (!m.probed_as_suspect && n > config_.refute_fanout) {
    // Only about refute_fanout of the hearers probe it out of turn (as many as pass the
    // accusation to the suspect directly): every failed probe anywhere makes a suspect that
    // everyone hears of, and at N = 256 and 50% loss each node heard of ~1.8 suspicions a
    // second, more than its one probe a second. Probing each first left the round-robin hardly
    // any: a killed member was probed once in the 3 s after its death (docs/gossip.md, session
    // 6).
    m.probed_as_suspect = !rng_.Bernoulli(config_.refute_fanout / n);
  }
  RescheduleSuspicion(m);
}

void Node::AddConfirmation(MemberRec& m, const NodeId& accuser) {
  if (accuser.empty()) return;
  if (std::find(m.accusers.begin(), m.accusers.end(), accuser) != m.accusers.end()) return;
  const SuspicionBounds b = ComputeSuspicionBounds(
      config_.suspicion_mult, config_.suspicion_max_mult, ClusterSize(), config_.probe_interval);
  if (static_cast<int>(m.accusers.size()) > b.expected_confirmations) return;
  m.accusers.push_back(accuser);
  RescheduleSuspicion(m);
  MemberUpdate u = UpdateOf(m);
  u.accuser = accuser;
  Broadcast(u);
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
  MemberUpdate u = UpdateOf(m);
  u.state = MemberState::kDead;
  u.accuser = id_;
  SetState(m, MemberState::kDead);
  Broadcast(u);
}

void Node::ApplyAboutSelf(const MemberUpdate& u) {
  if (left_ || u.generation != generation_) return;
  if (u.incarnation < incarnation_) {
    // Already refuted, but whoever passed this on may still hold the accusation: OnMessage
    // answers it directly.
    if (u.state != MemberState::kAlive) stale_accusation_ = true;
    return;
  }
  if (u.state == MemberState::kAlive && u.incarnation == incarnation_) return;
  // Someone believes we are suspect, dead or gone (or knows a newer incarnation): refute.
  incarnation_ = u.incarnation + 1;
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

void Node::ApplyUpdate(const MemberUpdate& u) {
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
    // (docs/gossip.md, session 6).
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
  if (u.generation == m.generation && m.api_address.empty()) m.api_address = u.api_address;
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
    if (u.state == MemberState::kSuspect) StartSuspicion(m, u.accuser);
    Broadcast(u);
    return;
  }
  switch (u.state) {
    case MemberState::kAlive:
      if (u.incarnation > m.incarnation) {
        m.incarnation = u.incarnation;
        m.address = u.address;
        m.api_address = u.api_address;
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
        if (m.state == MemberState::kSuspect) AddConfirmation(m, u.accuser);
        return;
      }
      if (!IsLive(m.state)) {
        // The accuser has not heard that it is already dead (or gone): repeat that.
        if (broadcasts_.Find(m.id) == nullptr) Broadcast(UpdateOf(m));
        return;
      }
      if (m.state == MemberState::kAlive || u.incarnation > m.incarnation) {
        m.incarnation = u.incarnation;
        StartSuspicion(m, u.accuser);
        Broadcast(u);
        // A few of those who hear an accusation pass it to the suspect directly.
        if (rng_.Bernoulli(static_cast<double>(config_.refute_fanout) /
                           static_cast<double>(ClusterSize()))) {
          SendNotice(m.address, u);
        }
      } else {
        AddConfirmation(m, u.accuser);
      }
      return;
    case MemberState::kDead:
      if (u.incarnation < m.incarnation) {
        if (m.state == MemberState::kSuspect) AddConfirmation(m, u.accuser);
        return;
      }
      if (!IsLive(m.state)) return;
      // Another member's verdict. Deaths are only ever declared by one's own suspicion timer:
      // the verdict starts (or confirms) a suspicion, so a member that is in fact alive (say,
      // on the other side of a partition that just healed) still has time to refute.
      if (m.state == MemberState::kAlive || u.incarnation > m.incarnation) {
        m.incarnation = u.incarnation;
        StartSuspicion(m, u.accuser);
        if (rng_.Bernoulli(static_cast<double>(config_.refute_fanout) /
                           static_cast<double>(ClusterSize()))) {
          SendNotice(m.address, u);
        }
      } else {
        AddConfirmation(m, u.accuser);
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
// Anti-entropy

uint64_t Node::DigestTerm(uint64_t id_hash, Generation g, uint64_t version) const {
  return Mix(id_hash ^ Mix(g ^ Mix(version)));
}

void Node::UpdateDigest(uint64_t id_hash, Generation g, uint64_t old_version,
                        uint64_t new_version) {
  if (old_version == new_version) return;
  digest_hash_ ^= DigestTerm(id_hash, g, old_version) ^ DigestTerm(id_hash, g, new_version);
}

void Node::WriteOwnLoad() {
  const uint64_t old = self_store_->max_version();
  self_store_->PutLoad(load_, ++heartbeat_);
  UpdateDigest(self_id_hash_, generation_, old, self_store_->max_version());
  last_load_write_ = scheduler_.clock().Now();
}

void Node::SetLoad(const LoadReport& load) {
  LoadReport next = load;
  next.overloaded = overload_.Update(load);
  if (next == load_ && self_store_->load().version > 0) return;
  load_ = next;
  WriteOwnLoad();
}

void Node::PublishCacheEvents(std::span<const prefix::BlockEvent> events) {
  const uint64_t old = self_store_->max_version();
  const uint32_t stride = self_store_->stride();
  for (const auto& e : events) {
    if (e.kind == prefix::BlockEvent::Kind::kAdded) {
      *held_.TryEmplace(e.key, e.block_index).first = e.block_index;
    } else {
      held_.Erase(e.key);
    }
    if (e.block_index % stride != 0) continue;
    self_store_->PutCache(e.key, e.block_index, e.kind == prefix::BlockEvent::Kind::kAdded);
  }
  UpdateDigest(self_id_hash_, generation_, old, self_store_->max_version());
}

void Node::MaybeRestride() {
  const LandmarkStrideRule rule{config_.landmark_stride, config_.landmark_budget_members,
                                std::min(config_.max_landmark_stride, kMaxLandmarkStride)};
  const uint32_t current = self_store_->stride();
  const uint32_t next = rule.Next(ClusterSize(), current);
  if (next == current) return;
  std::vector<prefix::BlockEvent> landmarks;
  held_.ForEach([&](prefix::BlockKey key, const uint32_t& index) {
    if (index % next == 0) landmarks.push_back({prefix::BlockEvent::Kind::kAdded, key, index});
  });
  const uint64_t old = self_store_->max_version();
  self_store_->Restride(next, landmarks);
  UpdateDigest(self_id_hash_, generation_, old, self_store_->max_version());
  ++counters_.restrides;
}

void Node::GossipTick() {
  if (left_) return;
  MaybeRestride();
  // The fanout's Syns are spread over the interval rather than sent at once: replies to
  // simultaneous Syns would carry the same fresh writes.
  const int fanout =
      std::max(config_.gossip_fanout, 1) + (ClusterSize() > config_.large_cluster_members ? 1 : 0);
  // While our state keeps changing, the peer's summary will differ anyway: send the full digest
  // along, so the peer answers with deltas at once and the exchange takes one leg fewer, which
  // matters most under loss. When idle, the summary alone. A digest too large for a datagram
  // (above ~130 members) goes on the stream: the peer would otherwise answer with its own full
  // digest there, so the bytes are the same, and at N = 256 and 50% loss the shorter exchange
  // took convergence from 2.79 to 2.05 s and accuracy from 0.924 to 0.955 for 1% more bytes
  // (session 6; before, the digest went along only if it fit a datagram).
  std::vector<DigestEntry> digest;
  if (digest_hash_ != last_syn_digest_hash_) digest = FullDigest(StreamDeltaRoom());
  last_syn_digest_hash_ = digest_hash_;
  for (MemberRec* m : RandomLive(1, {})) {
    Message msg = NewMessage(MsgType::kSyn);
    msg.digest_hash = digest_hash_;
    msg.digest_size = digest_count_;
    msg.digest = std::move(digest);
    msg.seq = next_seq_++;
    m->syn_sent_at = scheduler_.clock().Now();
    m->syn_seq = msg.seq;
    Send(m->address, std::move(msg));
  }
  After(config_.gossip_interval / fanout, &Node::GossipTick);
}

void Node::PushPullTick() {
  if (left_) return;
  auto peers = RandomLive(1, {});
  if (!peers.empty()) {
    Message m = NewMessage(MsgType::kPushPull);
    m.reply_wanted = true;
    m.members.push_back(SelfUpdate(MemberState::kAlive));
    for (const MemberRec* rec : ordered_) m.members.push_back(UpdateOf(*rec));
    Send(peers.front()->address, std::move(m));
  }
  // memberlist's scaling: one more interval per doubling beyond 32 members.
  const double n = static_cast<double>(ClusterSize());
  const double scale = n <= 32 ? 1.0 : std::ceil(std::log2(n) - std::log2(32.0)) + 1.0;
  After(std::chrono::duration_cast<Duration>(config_.push_pull_interval * scale),
        &Node::PushPullTick);
}

void Node::ReconnectTick() {
  if (left_) return;
  std::vector<MemberRec*> dead;
  for (MemberRec* m : ordered_) {
    if (m->state == MemberState::kDead) dead.push_back(m);
  }
  if (!dead.empty()) {
    MemberRec* m = dead[rng_.Below(dead.size())];
    Message msg = NewMessage(MsgType::kPushPull);
    msg.reply_wanted = true;
    msg.members.push_back(SelfUpdate(MemberState::kAlive));
    msg.members.push_back(UpdateOf(*m));
    Send(m->address, std::move(msg));
  }
  After(config_.reconnect_interval, &Node::ReconnectTick);
}

std::vector<DigestEntry> Node::FullDigest(size_t max_bytes) const {
  std::vector<DigestEntry> out;
  out.reserve(digest_count_);
  out.push_back({id_, generation_, self_store_->max_version()});
  size_t bytes = EncodedSize(out.back());
  for (const MemberRec* m : ordered_) {
    if (!m->store) continue;
    out.push_back({m->id, m->generation, m->store->max_version()});
    bytes += EncodedSize(out.back());
    // Large clusters' digests never fit a Syn: stop building them at once.
    if (bytes > max_bytes) return {};
  }
  return out;
}

const OriginStore* Node::StoreFor(const NodeId& id) const {
  if (id == id_) return self_store_.get();
  auto it = members_.find(id);
  return it == members_.end() ? nullptr : it->second.store.get();
}

void Node::AnswerDigest(const Address& from, const NodeId& peer,
                        const std::vector<DigestEntry>& theirs) {
  const TimePoint now = scheduler_.clock().Now();
  Message reply = NewMessage(MsgType::kSyncDeltas);
  // How long a pull may take: a few round trips to this peer (at least a twentieth of a gossip
  // interval), or a gossip interval while its RTT is unknown. An answered pull raises our version
  // and ends the wait by itself, so the window only matters when the pull was lost; a whole
  // gossip interval then kept the origin from being asked of the next peers (at N = 100 and 50%
  // loss, fanout 3, a 3 x RTT window took convergence from 2.36 to 2.14 s; 0% loss: bytes +0.3%).
  Duration pull_window = config_.gossip_interval;
  auto it = members_.find(peer);
  if (it != members_.end() && it->second.has_rtt) {
    pull_window =
        std::max<Duration>(config_.gossip_interval / 20, 3 * FromMillis(it->second.srtt_ms));
  }
  // A digest lists its sender first, then its members in id order, as ordered_ is here:
  // a cursor that follows ordered_ finds most entries with one comparison instead of a search.
  bool names_unknown = false;
  size_t cursor = 0;
  for (const auto& e : theirs) {
    if (e.id == id_) continue;
    const size_t origin =
        cursor < ordered_.size() && ordered_[cursor]->id == e.id ? cursor : OrderedIndex(e.id);
    if (origin == ordered_.size()) {
      names_unknown = true;
      continue;
    }
    cursor = origin + 1;
    MemberRec& o = *ordered_[origin];
    if (!o.store || o.generation != e.generation || o.store->max_version() >= e.max_version) {
      continue;
    }
    // A digest that names a version of it above any we saw is the first news of a new write
    // (the delta follows a round trip later).
    NoteVersionSeen(o, e.max_version);
    if (now < o.pull_until && o.pull_version >= e.max_version) {
      ++counters_.pulls_deduplicated;
      continue;
    }
    o.pull_version = e.max_version;
    o.pull_until = now + pull_window;
    reply.digest.push_back({e.id, e.generation, o.store->max_version()});
  }
  SendDeltas(from, std::move(reply), BuildDeltas(theirs, false));
  if (names_unknown && now - last_discovery_pull_ >= config_.join_retry_interval) {
    // The peer replicates a member we have never heard of: the alive broadcasts of its join were
    // missed, and at N = 100 and 50% loss two members could stay unaware of each other for the
    // whole run (each learns of others mostly through the other's own messages, and push-pull
    // comes every 15 s). Ask this peer for its member list now (rate-limited).
    last_discovery_pull_ = now;
    ++counters_.discovery_pulls;
    Message m = NewMessage(MsgType::kPushPull);
    m.reply_wanted = true;
    m.members.push_back(SelfUpdate(MemberState::kAlive));
    Send(from, std::move(m));
  }
}

size_t Node::DatagramDeltaRoom() const {
  // What is left of a datagram after the header and a share for piggybacked updates.
  const size_t reserve = EncodedHeaderBaseSize(NewMessage(MsgType::kDeltas).header) + 16 +
                         std::min<size_t>(config_.piggyback_budget_bytes, 128);
  const size_t body = BodyBudget(false);
  return body > reserve ? body - reserve : 0;
}

size_t Node::StreamDeltaRoom() const {
  const size_t reserve = config_.piggyback_budget_bytes + 256;
  const size_t body = BodyBudget(true);
  return body > reserve ? body - reserve : 0;
}

void Node::SendDeltas(const Address& to, Message first, std::vector<OriginDelta> deltas) {
  if (deltas.empty() && first.digest.empty()) return;
  // Fresh state is small: the deltas are packed into as few datagrams as they fill, the first
  // also carrying `first`'s digest. A delta too large for one datagram (a peer far behind, a
  // snapshot) goes on the stream. Each delta applies on its own, so losing one datagram loses
  // only the origins it carried, and the next exchange resends them.
  const size_t room = DatagramDeltaRoom();
  size_t first_used = 0;
  for (const auto& e : first.digest) first_used += EncodedSize(e);
  std::vector<Message> datagrams;
  std::vector<size_t> used;
  Message stream = NewMessage(MsgType::kDeltas);
  if (first_used > room) {
    // A digest too large for a datagram: the first message goes on the stream anyway.
    stream = std::move(first);
  } else {
    datagrams.push_back(std::move(first));
    used.push_back(first_used);
  }
  for (auto& d : deltas) {
    const size_t size = DeltaSize(d);
    if (size > room) {
      stream.deltas.push_back(std::move(d));
      continue;
    }
    size_t bin = 0;
    while (bin < datagrams.size() && used[bin] + size > room) ++bin;
    if (bin == datagrams.size()) {
      datagrams.push_back(NewMessage(MsgType::kDeltas));
      used.push_back(0);
    }
    used[bin] += size;
    datagrams[bin].deltas.push_back(std::move(d));
  }
  for (auto& m : datagrams) {
    if (m.deltas.empty() && m.digest.empty()) continue;
    Send(to, std::move(m));
  }
  if (!stream.deltas.empty() || !stream.digest.empty()) Send(to, std::move(stream));
}

std::vector<OriginDelta> Node::BuildDeltas(const std::vector<DigestEntry>& theirs,
                                           bool only_listed) {
  const size_t budget = StreamDeltaRoom();
  // (store, what they know) pairs, in random order so a tight budget starves no origin.
  std::vector<std::pair<const OriginStore*, uint64_t>> todo;
  if (only_listed) {
    for (const auto& e : theirs) {
      const OriginStore* s = StoreFor(e.id);
      if (s == nullptr || s->generation() < e.generation) continue;
      const uint64_t known = s->generation() == e.generation ? e.max_version : 0;
      if (s->max_version() > known) todo.emplace_back(s, known);
    }
  } else {
    // An open-addressing index of their digest by id: one allocation per call, not one per
    // entry (this runs for every digest answered). The first entry of a repeated id wins.
    size_t mask = 15;
    while (mask + 1 < 2 * theirs.size()) mask = mask * 2 + 1;
    std::vector<const DigestEntry*> index(mask + 1, nullptr);
    const std::hash<std::string_view> hash;
    for (const auto& e : theirs) {
      for (size_t i = hash(e.id) & mask;; i = (i + 1) & mask) {
        if (index[i] == nullptr) {
          index[i] = &e;
          break;
        }
        if (index[i]->id == e.id) break;
      }
    }
    auto find = [&](std::string_view id) -> const DigestEntry* {
      for (size_t i = hash(id) & mask;; i = (i + 1) & mask) {
        if (index[i] == nullptr || index[i]->id == id) return index[i];
      }
    };
    auto consider = [&](const OriginStore* s) {
      const DigestEntry* e = find(s->id());
      uint64_t known = 0;
      if (e != nullptr) {
        if (e->generation > s->generation()) return;
        if (e->generation == s->generation()) known = e->max_version;
      }
      if (s->max_version() > known) todo.emplace_back(s, known);
    };
    consider(self_store_.get());
    for (const MemberRec* m : ordered_) {
      if (m->store) consider(m->store.get());
    }
  }
  rng_.Shuffle(todo);
  std::vector<OriginDelta> out;
  size_t used = 0;
  for (const auto& [store, known] : todo) {
    if (used + 32 > budget) break;
    std::optional<OriginDelta> d = store->BuildDelta(known, budget - used);
    if (!d) continue;
    if (d->snapshot) ++counters_.snapshots_sent;
    used += DeltaSize(*d);
    out.push_back(std::move(*d));
  }
  return out;
}

void Node::ApplyDeltas(const std::vector<OriginDelta>& deltas) {
  std::vector<prefix::BlockEvent> events;
  for (const auto& d : deltas) {
    auto it = members_.find(d.id);
    if (it == members_.end() || !it->second.store || it->second.generation != d.generation) {
      ++counters_.deltas_unknown;
      continue;
    }
    MemberRec& m = it->second;
    events.clear();
    const uint64_t old = m.store->max_version();
    const uint32_t old_stride = m.store->stride();
    if (!d.snapshot) {
      counters_.entries_received += d.entries.size();
      counters_.entries_redundant += static_cast<uint64_t>(
          std::count_if(d.entries.begin(), d.entries.end(),
                        [old](const CacheEntry& e) { return e.version <= old; }));
    }
    switch (m.store->Apply(d, &events)) {
      case OriginStore::ApplyResult::kStale:
        ++counters_.deltas_stale;
        continue;
      case OriginStore::ApplyResult::kGap:
        ++counters_.deltas_gap;
        continue;
      case OriginStore::ApplyResult::kStrideMismatch:
        ++counters_.deltas_stride_mismatch;
        continue;
      case OriginStore::ApplyResult::kApplied:
        break;
    }
    if (m.store->stride() != old_stride) {
      if (!d.snapshot && old_stride != 0) ++counters_.stride_runs_applied;
      if (listener_ != nullptr) listener_->OnPeerStride(m.id, m.generation, m.store->stride());
    }
    UpdateDigest(m.id_hash, m.generation, old, m.store->max_version());
    NoteVersionSeen(m, m.store->max_version());
    if (d.snapshot) {
      ++counters_.snapshots_applied;
      if (listener_ != nullptr) {
        const auto live = m.store->LiveKeys();
        listener_->OnPeerCacheSnapshot(m.id, m.generation, live);
      }
    } else {
      ++counters_.deltas_applied;
      if (listener_ != nullptr && !events.empty()) {
        listener_->OnPeerCacheEvents(m.id, m.generation, events);
      }
    }
    NoteLoad(m, m.store->load());
  }
}

void Node::NoteVersionSeen(MemberRec& m, uint64_t version) {
  // Only a version above every one seen before is news of the member: catching up on its older
  // writes (a pull answered late, or a replica far behind) says nothing about whether it is
  // alive now. At N = 256 and 50% loss a killed member's last writes kept reaching some nodes
  // 2.5 s after its death and saved their probes of it.
  if (version <= m.seen_version) return;
  m.seen_version = version;
  const TimePoint now = scheduler_.clock().Now();
  if (m.last_evidence_at != TimePoint{}) {
    const double gap = ToMillis(now - m.last_evidence_at);
    m.evidence_gap_ms = m.evidence_samples == 0 ? gap : 0.875 * m.evidence_gap_ms + 0.125 * gap;
    ++m.evidence_samples;
  }
  m.last_evidence_at = now;
  if (m.state == MemberState::kSuspect && config_.relayed_evidence &&
      now - m.last_notice_at >= config_.gossip_interval) {
    // We suspect it, yet it keeps writing: it has likely not heard of the suspicion, or its
    // refutation has not reached us. Tell it directly (it answers us directly, OnMessage).
    // In a large cluster a member seldom talks to a given peer, and once the piggybacked
    // refutation has been sent its quota of times, nothing else would repair a peer that
    // missed it: at N = 128 and 50% loss a node held an accusation for 24 s, never hearing
    // the refutation made 22 s earlier, and declared a healthy member dead.
    m.last_notice_at = now;
    ++counters_.evidence_notices;
    SendNotice(m.address, UpdateOf(m));
  }
}

void Node::NoteLoad(MemberRec& m, const LoadRecord& rec) {
  if (rec.version <= m.load.version) return;
  m.load = rec;
  m.load_at = scheduler_.clock().Now();
  if (listener_ != nullptr) listener_->OnPeerLoad(m.id, m.generation, rec.load);
}

// ---------------------------------------------------------------------------------------------
// Messages

Message Node::NewMessage(MsgType type) const {
  Message m;
  m.type = type;
  m.header.sender = id_;
  m.header.generation = generation_;
  m.header.incarnation = incarnation_;
  m.header.load = self_store_->load();
  return m;
}

size_t Node::BodyBudget(bool stream) const {
  const size_t frame = stream
                           ? config_.stream_budget_bytes
                           : std::min(config_.datagram_budget_bytes, transport_.MaxDatagramBytes());
  const size_t overhead = framer_.SealedBytes(0);
  return frame > overhead ? frame - overhead : 0;
}

void Node::Send(const Address& to, Message m, const NodeId& prefer_update) {
  // Piggybacked updates fill what is left of a datagram (so they never push a message onto the
  // stream), or up to the piggyback budget on a message that goes on the stream anyway.
  std::vector<uint8_t> body = Encode(m);
  const size_t bare = body.size();
  const bool had_updates = !m.header.updates.empty();
  const size_t dgram = BodyBudget(false);
  const size_t room = bare + 2 <= dgram ? dgram - bare - 2 : config_.piggyback_budget_bytes;
  m.header.updates = broadcasts_.Take(std::min(config_.piggyback_budget_bytes, room),
                                      TransmitLimit(), prefer_update, to, scheduler_.clock().Now());
  // Most messages carry no update (membership is quiet): then the bare body is the body.
  if (had_updates || !m.header.updates.empty()) body = Encode(m);
  for (const MemberUpdate& u : m.header.updates) counters_.update_bytes_sent += EncodedSize(u);
  const size_t dgram_limit = std::min(config_.datagram_budget_bytes, transport_.MaxDatagramBytes());
  const Channel channel =
      framer_.SealedBytes(body.size()) <= dgram_limit ? Channel::kDatagram : Channel::kStream;
  Result<std::vector<uint8_t>> frame = framer_.Seal(channel, body);
  if (!frame.ok()) {
    ++counters_.send_failures;
    return;
  }
  ++counters_.msgs_sent;
  counters_.bytes_sent += frame->size();
  if (channel == Channel::kStream) ++counters_.stream_msgs_sent;
  ++counters_.sent_by_type[static_cast<size_t>(m.type)];
  counters_.bytes_sent_by_type[static_cast<size_t>(m.type)] += frame->size();
  transport_.Send(to, channel, std::move(*frame));
}

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

void Node::HandleHeader(const Address& from, const Header& h) {
  auto it = members_.find(h.sender);
  if (it == members_.end() || h.generation > it->second.generation ||
      (h.generation == it->second.generation && h.incarnation > it->second.incarnation)) {
    // Every header is the sender's own word on its identity: an unknown member, a new life, or
    // a higher incarnation (a refutation) counts as its "alive".
    // A header does not carry the api address; a full update fills it in (below, ApplyUpdate).
    ApplyUpdate(
        MemberUpdate{MemberState::kAlive, h.sender, from, h.generation, h.incarnation, {}, {}});
  }
  for (const auto& u : h.updates) ApplyUpdate(u);
  it = members_.find(h.sender);
  if (it == members_.end() || it->second.generation != h.generation) return;
  MemberRec& m = it->second;
  m.last_heard_at = scheduler_.clock().Now();
  if (m.store) NoteLoad(m, h.load);
  if (m.state != MemberState::kAlive && m.state != MemberState::kLeft &&
      h.incarnation <= m.incarnation) {
    // It talks, so it is not dead, but it has not refuted yet: tell it what we believe
    // (rate-limited), so its next message carries a higher incarnation.
    const TimePoint now = scheduler_.clock().Now();
    if (now - m.last_notice_at >= config_.gossip_interval) {
      m.last_notice_at = now;
      SendNotice(from, UpdateOf(m));
    }
  }
}

void Node::OnMessage(const Address& from, Channel channel, std::span<const uint8_t> payload) {
  ++counters_.msgs_received;
  counters_.bytes_received += payload.size();
  if (!started_) {
    ++counters_.dropped_after_leave;
    return;
  }
  if (left_) {
    // Gone, but whoever still talks to us missed the goodbye: repeat it, at most once a
    // second per address, so the sender records "left" rather than suspecting a failure.
    ++counters_.dropped_after_leave;
    const TimePoint now = scheduler_.clock().Now();
    auto [it, fresh] = goodbye_sent_.try_emplace(from, now);
    if (!fresh && now - it->second < std::chrono::seconds(1)) return;
    it->second = now;
    if (!framer_.Open(channel, payload).ok()) return;
    SendNotice(from, SelfUpdate(MemberState::kLeft));
    return;
  }
  Result<OpenedBody> opened = framer_.Open(channel, payload);
  if (!opened.ok()) {
    ++counters_.dropped_envelope;
    return;
  }
  Result<Message> decoded = Decode(opened->body);
  if (!decoded.ok()) {
    ++counters_.dropped_malformed;
    return;
  }
  Message& m = *decoded;
  if (!opened->sender.empty() &&
      (opened->sender != m.header.sender || opened->generation != m.header.generation)) {
    ++counters_.dropped_spoofed;
    return;
  }
  if (m.header.sender == id_) {
    ++counters_.dropped_from_self;
    return;
  }
  ++counters_.received_by_type[static_cast<size_t>(m.type)];
  const uint64_t incarnation_before = incarnation_;
  stale_accusation_ = false;
  HandleHeader(from, m.header);
  if (m.type == MsgType::kPushPull) {
    for (const auto& u : m.members) ApplyUpdate(u);
    m.members.clear();
  }
  if (incarnation_ > incarnation_before || stale_accusation_) {
    // This message accused us: the refutation goes straight back to its sender, which holds
    // the accusation, as well as to the broadcast and a few random members (ApplyAboutSelf).
    // So does an accusation we had already refuted: at N = 128 and 50% loss a node that never
    // heard the refutation kept notifying us of its stale accusation for 24 s, unanswered,
    // and then declared us dead.
    SendNotice(from, SelfUpdate(MemberState::kAlive));
  }
  const TimePoint now = scheduler_.clock().Now();
  switch (m.type) {
    case MsgType::kPing: {
      if (m.target != id_) {
        ++counters_.dropped_wrong_target;
        return;
      }
      Message ack = NewMessage(MsgType::kAck);
      ack.seq = m.seq;
      Send(from, std::move(ack));
      return;
    }
    case MsgType::kAck: {
      auto pit = pending_.find(m.seq);
      if (pit == pending_.end()) return;
      Pending& p = pit->second;
      if (p.kind == PendingKind::kRelay) {
        if (m.header.sender != p.target) return;
        Message ack = NewMessage(MsgType::kAck);
        ack.seq = p.req_seq;
        Send(p.requester, std::move(ack));
        pending_.erase(pit);
        return;
      }
      if (p.acked) return;  // a duplicate
      p.acked = true;
      if (m.header.sender == p.target) SampleRtt(p.target, now - p.sent_at);
      if (p.kind == PendingKind::kRetry) {
        auto orig = pending_.find(p.req_seq);
        if (orig != pending_.end()) orig->second.acked = true;
      }
      return;
    }
    case MsgType::kNack: {
      auto pit = pending_.find(m.seq);
      if (pit != pending_.end() && pit->second.kind == PendingKind::kProbe) ++pit->second.nacks;
      return;
    }
    case MsgType::kPingReq: {
      const uint64_t seq = next_seq_++;
      Pending p;
      p.kind = PendingKind::kRelay;
      p.target = m.target;
      p.sent_at = now;
      p.sends = 1;
      p.requester = from;
      p.req_seq = m.seq;
      pending_[seq] = p;
      Message ping = NewMessage(MsgType::kPing);
      ping.seq = seq;
      ping.target = m.target;
      Send(m.target_address, std::move(ping));
      AfterFn(Scaled(config_.probe_timeout) * 4 / 5, [this, seq] {
        auto pit = pending_.find(seq);
        if (pit == pending_.end()) return;
        Message nack = NewMessage(MsgType::kNack);
        nack.seq = pit->second.req_seq;
        Send(pit->second.requester, std::move(nack));
      });
      AfterFn(Scaled(config_.probe_interval), [this, seq] { pending_.erase(seq); });
      return;
    }
    case MsgType::kSyn: {
      if (m.digest_hash == digest_hash_ && m.digest_size == digest_count_) {
        ++counters_.syn_in_sync;
        return;
      }
      if (!m.digest.empty()) {
        // The initiator sent its digest along (its state is changing): skip the SynAck leg.
        AnswerDigest(from, m.header.sender, m.digest);
        return;
      }
      Message reply = NewMessage(MsgType::kSynAck);
      reply.seq = m.seq;
      reply.digest = FullDigest();
      Send(from, std::move(reply));
      return;
    }
    case MsgType::kSynAck: {
      auto it = members_.find(m.header.sender);
      if (it != members_.end() && it->second.syn_seq == m.seq && m.seq != 0) {
        it->second.syn_seq = 0;
        SampleRtt(it->first, now - it->second.syn_sent_at);
      }
      AnswerDigest(from, m.header.sender, m.digest);
      return;
    }
    case MsgType::kSyncDeltas: {
      ApplyDeltas(m.deltas);
      if (m.digest.empty()) return;
      SendDeltas(from, NewMessage(MsgType::kDeltas), BuildDeltas(m.digest, true));
      return;
    }
    case MsgType::kDeltas:
      ApplyDeltas(m.deltas);
      return;
    case MsgType::kPushPull: {
      // Its member updates were applied above, with the header.
      if (!m.reply_wanted) return;
      Message reply = NewMessage(MsgType::kPushPull);
      reply.members.push_back(SelfUpdate(MemberState::kAlive));
      for (const MemberRec* rec : ordered_) reply.members.push_back(UpdateOf(*rec));
      Send(from, std::move(reply));
      return;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Views

std::vector<MemberView> Node::Members() const {
  std::vector<MemberView> out;
  out.reserve(members_.size());
  for (const MemberRec* m : ordered_) out.push_back(ViewOf(*m));
  return out;
}

std::optional<MemberView> Node::Member(const NodeId& id) const {
  auto it = members_.find(id);
  if (it == members_.end()) return std::nullopt;
  return ViewOf(it->second);
}

MemberView Node::ViewOf(const MemberRec& m) {
  MemberView v;
  v.id = m.id;
  v.address = m.address;
  v.api_address = m.api_address;
  v.generation = m.generation;
  v.incarnation = m.incarnation;
  v.state = m.state;
  v.state_since = m.since;
  v.has_load = m.load.version > 0;
  v.load = m.load.load;
  v.load_updated = m.load_at;
  if (m.has_rtt) v.rtt_ms = m.srtt_ms;
  v.known_version = m.store ? m.store->max_version() : 0;
  v.last_heard = m.last_heard_at;
  return v;
}

uint32_t Node::PeerStride(const NodeId& peer) const {
  const OriginStore* s = StoreFor(peer);
  return s == nullptr ? 0 : s->stride();
}

const OriginStore* Node::PeerStore(const NodeId& id) const {
  auto it = members_.find(id);
  return it == members_.end() ? nullptr : it->second.store.get();
}

uint32_t Node::EstimateMatchedBlocks(const NodeId& peer,
                                     std::span<const prefix::BlockKey> chain) const {
  const OriginStore* s = StoreFor(peer);
  if (s == nullptr || chain.empty()) return 0;
  const uint32_t stride = s->stride() != 0 ? s->stride() : config_.landmark_stride;
  const uint32_t last = static_cast<uint32_t>(chain.size() - 1);
  for (int64_t i = last - last % stride; i >= 0; i -= stride) {
    if (s->Contains(chain[static_cast<size_t>(i)])) return static_cast<uint32_t>(i) + 1;
  }
  return 0;
}

}  // namespace hearsay::gossip
