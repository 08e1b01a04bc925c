#include <algorithm>
#include <utility>

#include "hearsay/gossip/node.h"
#include "hearsay/gossip/node_internal.h"

namespace hearsay::gossip {

using node_internal::IsLive;

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
  // A signing origin's state moves once per sign interval: news of it that arrived up to one
  // interval before the probe started is as recent as unsigned news arriving since it started.
  const Duration slack = signing() ? config_.sign_interval : Duration::zero();
  const bool relayed = config_.relayed_evidence &&
                       it->second.last_evidence_at + slack >= p.sent_at &&
                       it->second.last_evidence_at != TimePoint{};
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
  const MemberUpdate u = Accusation(it->second, MemberState::kSuspect);
  ApplyMembership(u);  // our own word: nothing to verify
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
  ++routes_version_;
}

void Node::AddHealth(int delta) {
  local_health_ = std::clamp(local_health_ + delta, 0, config_.max_local_health);
}

}  // namespace hearsay::gossip
