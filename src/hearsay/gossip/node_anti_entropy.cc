#include <algorithm>
#include <cmath>
#include <iterator>
#include <utility>

#include "hearsay/gossip/landmark_stride.h"
#include "hearsay/gossip/node.h"
#include "hearsay/gossip/node_internal.h"

namespace hearsay::gossip {

using node_internal::Mix;

namespace {

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
  OwnWritten(old);
  last_load_write_ = scheduler_.clock().Now();
}

void Node::SetLoad(const LoadReport& load, Duration refresh_after) {
  LoadReport next = load;
  next.overloaded = overload_.Update(load);
  const bool fresh = scheduler_.clock().Now() - last_load_write_ < refresh_after;
  if (next == load_ && self_store_->load().version > 0 && fresh) return;
  load_ = next;
  WriteOwnLoad();
}

Status Node::SetService(const Service& service) {
  HEARSAY_RETURN_IF_ERROR(ValidateService(service));
  if (self_store_->service().version > 0 && self_store_->service().service == service) {
    return OkStatus();
  }
  const uint64_t old = self_store_->max_version();
  self_store_->PutService(service);
  OwnWritten(old);
  return OkStatus();
}

Status Node::SetUsage(std::vector<TenantUsage> tenants) {
  if (!ValidUsage(tenants)) {
    return InvalidArgumentError("usage must name at most " + std::to_string(kMaxUsageTenants) +
                                " tenants, sorted, each once, with bounded rates");
  }
  const uint64_t old = self_store_->max_version();
  self_store_->PutUsage(std::move(tenants));
  UpdateDigest(self_id_hash_, generation_, old, self_store_->max_version());
  return OkStatus();
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
  OwnWritten(old);
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
  OwnWritten(old);
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
  // digest there, so the bytes are the same and the exchange is one leg shorter, which under
  // loss speeds convergence (docs/gossip.md, "Anti-entropy").
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
  out.push_back({id_, generation_, served_self().max_version()});
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
  if (id == id_) return &served_self();
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
  if (names_unknown) {
    // The peer replicates a member we have never heard of: the alive broadcasts of its join were
    // missed, and at N = 100 and 50% loss two members could stay unaware of each other for the
    // whole run (each learns of others mostly through the other's own messages, and push-pull
    // comes every 15 s). Ask this peer for its member list now.
    PullMemberList(from, now);
  }
}

void Node::PullMemberList(const Address& from, TimePoint now) {
  if (now - last_discovery_pull_ < config_.join_retry_interval) return;
  last_discovery_pull_ = now;
  ++counters_.discovery_pulls;
  Message m = NewMessage(MsgType::kPushPull);
  m.reply_wanted = true;
  m.members.push_back(SelfUpdate(MemberState::kAlive));
  Send(from, std::move(m));
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
    consider(&served_self());
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
    std::optional<StateHash> commitment;
    if (signing() && m.store->Check(d) == OriginStore::ApplyResult::kApplied &&
        !VerifyDelta(m, d, &commitment)) {
      continue;
    }
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
    if (signing()) m.store->SetSigned(commitment, *d.signature);
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
    NoteService(m, m.store->service());
    NoteUsage(m, m.store->usage());
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

void Node::NoteService(MemberRec& m, const ServiceRecord& rec) {
  if (rec.version <= m.service_version) return;
  m.service_version = rec.version;
  if (listener_ != nullptr) listener_->OnPeerService(m.id, m.generation, rec.service);
}

void Node::NoteUsage(MemberRec& m, const UsageRecord& rec) {
  if (rec.version <= m.usage_version) return;
  m.usage_version = rec.version;
  if (listener_ != nullptr) listener_->OnPeerUsage(m.id, m.generation, rec);
}

void Node::NoteLoad(MemberRec& m, const LoadRecord& rec) {
  if (rec.version <= m.load.version) return;
  m.load = rec;
  m.load_at = scheduler_.clock().Now();
  if (listener_ != nullptr) listener_->OnPeerLoad(m.id, m.generation, rec.load);
}

}  // namespace hearsay::gossip
