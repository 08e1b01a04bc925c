#include <algorithm>
#include <unordered_map>
#include <utility>

#include "hearsay/gossip/member_statement.h"
#include "hearsay/gossip/node.h"
#include "hearsay/gossip/node_internal.h"

namespace hearsay::gossip {

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

void Node::HandleHeader(const Address& from, const Header& h) {
  auto it = members_.find(h.sender);
  // With signatures a header is not the sender's word: any member can name any sender, so only
  // the member's signed "alive" (member_statement.h) adds it, starts a new life or refutes.
  if (!signing() &&
      (it == members_.end() || h.generation > it->second.generation ||
       (h.generation == it->second.generation && h.incarnation > it->second.incarnation))) {
    // Every header is the sender's own word on its identity: an unknown member, a new life, or
    // a higher incarnation (a refutation) counts as its "alive".
    // A header does not carry the api address; a full update fills it in (below, ApplyUpdate).
    ApplyUpdate(
        MemberUpdate{MemberState::kAlive, h.sender, from, h.generation, h.incarnation, {}, {}});
  }
  for (const auto& u : h.updates) ApplyUpdate(u);
  it = members_.find(h.sender);
  if (signing() && (it == members_.end() || h.generation > it->second.generation)) {
    // A sender we do not know in this life: its signed "alive" has not reached us yet. Ask it
    // for its member list (its own statement first), as for a member named only in a digest
    // (rate-limited): at N = 100 and 50% loss, learning members from the piggybacked signed
    // statements alone made the join take over 5 s.
    PullMemberList(from, scheduler_.clock().Now());
    return;
  }
  if (it == members_.end() || it->second.generation != h.generation) return;
  MemberRec& m = it->second;
  m.last_heard_at = scheduler_.clock().Now();
  // With signatures, only signed load records count: anyone holding the cluster key can name
  // any sender in a header.
  if (m.store && !signing()) NoteLoad(m, h.load);
  if (m.state != MemberState::kAlive && m.state != MemberState::kLeft &&
      (h.incarnation <= m.incarnation || signing())) {
    // It talks, so it is not dead, but it has not refuted yet: tell it what we believe
    // (rate-limited), so its next message carries a higher incarnation. (With signatures, a
    // header's higher incarnation is no refutation: the notice has it send its signed one.)
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
  if (left_) return RepeatGoodbye(from, channel, payload);
  std::optional<Message> opened = OpenMessage(channel, payload);
  if (!opened) return;
  Message& m = *opened;
  ++counters_.received_by_type[static_cast<size_t>(m.type)];
  const uint64_t incarnation_before = incarnation_;
  stale_accusation_ = false;
  verify_budget_ = m.type == MsgType::kPushPull ? config_.member_verifications_per_push_pull
                                                : config_.member_verifications_per_message;
  HandleHeader(from, m.header);
  if (m.type == MsgType::kPushPull) {
    for (const auto& u : m.members) ApplyUpdate(u);
  }
  if (incarnation_ > incarnation_before || stale_accusation_) {
    // This message accused us: the refutation goes straight back to its sender, which holds
    // the accusation, as well as to the broadcast and a few random members (ApplyAboutSelf).
    // So does an accusation we had already refuted: at N = 128 and 50% loss a node that never
    // heard the refutation kept notifying us of its stale accusation for 24 s, unanswered,
    // and then declared us dead.
    SendNotice(from, SelfUpdate(MemberState::kAlive));
  }
  Dispatch(from, m, scheduler_.clock().Now());
}

void Node::RepeatGoodbye(const Address& from, Channel channel, std::span<const uint8_t> payload) {
  // Gone, but whoever still talks to us missed the goodbye: repeat it, at most once a
  // second per address, so the sender records "left" rather than suspecting a failure.
  ++counters_.dropped_after_leave;
  const TimePoint now = scheduler_.clock().Now();
  auto [it, fresh] = goodbye_sent_.try_emplace(from, now);
  if (!fresh && now - it->second < std::chrono::seconds(1)) return;
  it->second = now;
  if (!framer_.Open(channel, payload).ok()) return;
  SendNotice(from, SelfUpdate(MemberState::kLeft));
}

std::optional<Message> Node::OpenMessage(Channel channel, std::span<const uint8_t> payload) {
  Result<OpenedBody> opened = framer_.Open(channel, payload);
  if (!opened.ok()) {
    ++counters_.dropped_envelope;
    return std::nullopt;
  }
  Result<Message> decoded = Decode(opened->body);
  if (!decoded.ok()) {
    ++counters_.dropped_malformed;
    return std::nullopt;
  }
  Message& m = *decoded;
  if (!opened->sender.empty() &&
      (opened->sender != m.header.sender || opened->generation != m.header.generation)) {
    ++counters_.dropped_spoofed;
    return std::nullopt;
  }
  if (m.header.sender == id_) {
    ++counters_.dropped_from_self;
    return std::nullopt;
  }
  return std::move(m);
}

void Node::Dispatch(const Address& from, const Message& m, TimePoint now) {
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
    case MsgType::kAck:
      return OnAck(m, now);
    case MsgType::kNack: {
      auto pit = pending_.find(m.seq);
      if (pit != pending_.end() && pit->second.kind == PendingKind::kProbe) ++pit->second.nacks;
      return;
    }
    case MsgType::kPingReq:
      return OnPingReq(from, m, now);
    case MsgType::kSyn:
      return OnSyn(from, m);
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
      // Its member updates were applied with the header (OnMessage).
      if (m.reply_wanted) Send(from, PushPullAnswer(m.members));
      return;
    }
  }
}

Message Node::PushPullAnswer(const std::vector<MemberUpdate>& asked) {
  // With signed membership a listed statement is a 64-byte signature and, for "alive", a 32-byte
  // key: most of a push-pull's bytes, and most of them tell the asker what it has just said
  // itself. A statement it listed unchanged goes bare: the asker applies a bare update only where
  // it changes nothing (AdmitMemberUpdate), which is the case for one it holds.
  std::unordered_map<NodeId, const MemberUpdate*> held;
  if (signing()) {
    for (const MemberUpdate& u : asked) {
      if (u.signature && !IsAccusation(u.state)) held.emplace(u.id, &u);
    }
  }
  auto bare_if_held = [&held](MemberUpdate u) {
    auto it = held.find(u.id);
    if (it != held.end() && *it->second == u) {
      u.signature.reset();
      u.signing_key.clear();
    }
    return u;
  };
  Message reply = NewMessage(MsgType::kPushPull);
  reply.members.push_back(bare_if_held(SelfUpdate(MemberState::kAlive)));
  for (const MemberRec* rec : ordered_) reply.members.push_back(bare_if_held(UpdateOf(*rec)));
  return reply;
}

void Node::OnAck(const Message& m, TimePoint now) {
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
}

void Node::OnPingReq(const Address& from, const Message& m, TimePoint now) {
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
}

void Node::OnSyn(const Address& from, const Message& m) {
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
}

}  // namespace hearsay::gossip
