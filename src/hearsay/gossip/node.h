// gossip::Node: one node's membership, failure detection and anti-entropy, as a sans-I/O state
// machine.
//
// Membership is SWIM with the Lifeguard refinements: each probe interval the node pings one
// member (round-robin over a shuffled list); without an ack by the probe timeout it asks k others
// to ping it (ping-req) and pings again; without any ack by the end of the interval it suspects
// the member. A suspicion spreads by piggybacking, its timeout starts long and shrinks with
// independent confirmations (suspicion.h), and the suspect refutes it by gossiping a higher
// incarnation. The node's own local-health score rises on failed probes, missing nacks and
// refutations, and stretches its probe interval and timeout, so a struggling node accuses less.
// A stale "alive" about a member we suspect re-queues our accusation. An overloaded node is not
// suspected as long as it acks within the probe interval: overload is reported, never inferred.
//
// Anti-entropy is scuttlebutt: every node is the only writer of its own OriginStore (load record
// with heartbeat, and the cache summary), and keeps a replica per live member. Every gossip
// interval it sends a Syn (a 12-byte summary of its digest) to `gossip_fanout` random members; a
// peer whose summary differs answers with its digest, the initiator sends what the peer lacks
// (per origin in version order, cut to the byte budget) plus a digest of what it lacks itself,
// and the peer answers with those deltas. Small messages go as datagrams, larger ones over the
// stream channel. The sender's load rides in the header of every message, probe acks included.
//
// The cache summary is the node's own radix-tree events, filtered to landmarks: blocks whose index
// is a multiple of the node's landmark stride, which grows with the cluster it sees
// (landmark_stride.h; the node keeps every block it holds, so it can re-derive its landmarks when
// the stride changes). A peer's matched prefix is known to within that peer's own stride, which
// travels with its deltas (EstimateMatchedBlocks, PeerStride). Identity is (id, generation): a
// member seen with a newer generation restarted with an empty cache, and its old replica is dropped
// at once, as is the replica of a member declared dead or left.
//
// Ownership: the node borrows the scheduler, rng, transport, framer and listener; all must
// outlive it. Its timers hold a weak token, so destroying the node makes pending ones no-ops.
// Thread-safety: none; everything runs on the core thread (OnMessage included).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "hearsay/common/ids.h"
#include "hearsay/env/rng.h"
#include "hearsay/env/scheduler.h"
#include "hearsay/env/transport.h"
#include "hearsay/gossip/broadcast_queue.h"
#include "hearsay/gossip/config.h"
#include "hearsay/gossip/counters.h"
#include "hearsay/gossip/framer.h"
#include "hearsay/gossip/key_table.h"
#include "hearsay/gossip/listener.h"
#include "hearsay/gossip/origin_store.h"
#include "hearsay/gossip/shared_history.h"
#include "hearsay/gossip/suspicion.h"
#include "hearsay/gossip/types.h"
#include "hearsay/gossip/wire.h"

namespace hearsay::gossip {

// What this node believes about one other member.
struct MemberView {
  NodeId id;
  Address address;
  Address api_address;  // where it accepts forwarded requests; empty: `address` itself
  Generation generation = 0;
  uint64_t incarnation = 0;
  MemberState state = MemberState::kAlive;
  TimePoint state_since{};
  bool has_load = false;
  LoadReport load;               // latest known (overloaded included)
  TimePoint load_updated{};      // when it arrived here: the view's age is now - load_updated
  std::optional<double> rtt_ms;  // smoothed round-trip time from probe and sync replies
  uint64_t known_version = 0;    // highest contiguous version of its state replicated here
  TimePoint last_heard{};        // when its last message (this generation) arrived here
};

class Node final : public MessageSink {
 public:
  // `framer` and `listener` may be null (plaintext framing; no effects reported). `shared`
  // (simulation only, may be null) makes every replica a view of its origin's shared history,
  // so a simulated cluster needs O(N) rather than O(N^2) memory (shared_history.h).
  Node(NodeId id, Generation generation, Address self, Config config, Scheduler& scheduler,
       Rng& rng, Transport& transport, Framer* framer = nullptr, Listener* listener = nullptr,
       SharedHistories* shared = nullptr);
  ~Node() override;

  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // With Config::signatures, the key this node signs its state with; call before Start. Without
  // it, Start uses Config::signing_seed, or derives one from the rng (simulations).
  void UseSigningKey(const SigningKey& key) { signing_key_ = key; }
  // The public key announced with this node's membership (empty with signatures off).
  std::string signing_public_key() const;

  // Starts probing and gossip, and joins through `seeds` (addresses; its own is skipped). With no
  // seeds it starts a cluster of one. Contacts every seed not yet known as a member again, each
  // join_retry_interval until it knows a member, then with backoff (so split joins merge).
  void Start(std::span<const Address> seeds);
  // Leaves gracefully: tells up to 2 * fanout members (twice each), then stops all activity
  // except answering anyone who still writes to it with its "left" notice.
  void Leave();

  // Replaces the node's load report; recomputes the overload flag (hysteresis) and publishes both
  // when they changed, or when the last write is `refresh_after` old (a new version of the same
  // record tells peers the load still holds; the heartbeat does the same every
  // Config::heartbeat_interval).
  void SetLoad(const LoadReport& load, Duration refresh_after = Duration::max());
  // Replaces what the node serves (service.h) and publishes it, only if it changed.
  // INVALID_ARGUMENT (nothing published) if it breaks a limit of service.h.
  Status SetService(const Service& service);
  // Publishes the node's per-tenant usage (usage.h) as a new version of its usage record.
  // INVALID_ARGUMENT (nothing published) if it breaks a limit of usage.h.
  Status SetUsage(std::vector<TenantUsage> tenants);
  // Feeds the node's own cache events (from its radix tree); landmarks are published.
  void PublishCacheEvents(std::span<const prefix::BlockEvent> events);

  // MessageSink: untrusted bytes from the network. Malformed input is counted and dropped.
  void OnMessage(const Address& from, Channel channel, std::span<const uint8_t> payload) override;

  // --- Views ---
  const NodeId& id() const { return id_; }
  Generation generation() const { return generation_; }
  uint64_t incarnation() const { return incarnation_; }
  // Lifeguard local-health score, 0 (healthy) .. Config::max_local_health.
  int local_health() const { return local_health_; }
  bool overloaded() const { return overload_.overloaded(); }
  bool left() const { return left_; }
  // What this node serves, as last set (empty before SetService).
  const Service& service() const { return self_store_->service().service; }
  // Every other member ever seen (dead and left included), ordered by id.
  std::vector<MemberView> Members() const;
  std::optional<MemberView> Member(const NodeId& id) const;
  // How to reach a member: what a caller that walks the members every tick needs, without the
  // copies of Members(). The references live only during the call.
  struct MemberRoute {
    const NodeId& id;
    const Address& address;
    const Address& api_address;  // empty: `address` itself
    Generation generation;
    MemberState state;
    std::optional<double> rtt_ms;
  };
  // Calls `fn` for every member Members() lists, in the same order.
  void ForEachMemberRoute(const std::function<void(const MemberRoute&)>& fn) const;
  // Changes whenever what ForEachMemberRoute would show changes, so a caller can skip a walk.
  uint64_t routes_version() const { return routes_version_; }
  // Members in kAlive or kSuspect.
  size_t live_member_count() const { return static_cast<size_t>(live_count_); }
  // The replica of a live member's state, or null.
  const OriginStore* PeerStore(const NodeId& id) const;
  const OriginStore& own_store() const { return *self_store_; }
  // The number of leading blocks of `chain` that `peer` is believed to hold, to within the
  // landmark stride: the true value is in [estimate, estimate + stride - 1] if the view is fresh.
  // 0 for unknown or dead peers.
  uint32_t EstimateMatchedBlocks(const NodeId& peer, std::span<const prefix::BlockKey> chain) const;
  // The stride this node publishes its own landmarks at now.
  uint32_t landmark_stride() const { return self_store_->stride(); }
  // The stride of a live peer's replicated landmarks; 0 if unknown (nothing replicated yet).
  uint32_t PeerStride(const NodeId& peer) const;
  const Counters& counters() const { return counters_; }
  const Config& config() const { return config_; }

 private:
  struct MemberRec {
    NodeId id;
    Address address;
    Address api_address;
    Generation generation = 0;
    uint64_t incarnation = 0;
    MemberState state = MemberState::kAlive;
    TimePoint since{};
    uint64_t id_hash = 0;
    // Suspicion (valid while state == kSuspect).
    TimerId suspicion_timer = kNoTimer;
    TimePoint suspect_start{};
    std::vector<NodeId> accusers;
    // As an accuser (Config::accuser_rate): the suspicions its word may still start here, as of
    // accusation_tokens_at (unset: a full bucket).
    double accusation_tokens = 0;
    TimePoint accusation_tokens_at{};
    bool probed_as_suspect = false;  // probed by us since this suspicion started
    TimePoint last_notice_at{};      // last time we told it directly that we suspect it
    // When its last authenticated message (of this generation) arrived: a probe counts any
    // message heard from its target after the probe started as an ack (see HeardSince).
    TimePoint last_heard_at{};
    // The highest version of its state (this generation) seen here, replicated or named in a
    // peer's digest, and when it last rose: relayed evidence that it was alive recently
    // (Config::relayed_evidence). Catching up on older versions is not evidence.
    uint64_t seen_version = 0;
    TimePoint last_evidence_at{};
    // Smoothed gap between arrivals of its newer state, and when we last probed it out of turn
    // because that state stopped arriving (Config::silence_probe_mult).
    double evidence_gap_ms = 0;
    int evidence_samples = 0;
    TimePoint silence_probed_at{};
    // Round-trip time, smoothed.
    bool has_rtt = false;
    double srtt_ms = 0;
    TimePoint syn_sent_at{};
    uint64_t syn_seq = 0;  // seq of the last Syn sent to it; its SynAck gives an RTT sample
    // Pull in flight for its state: up to this version, asked of some peer, until this time.
    // Another peer's SynAck showing no more than that is not asked again meanwhile (fanout > 1
    // would otherwise fetch every fresh write once per peer).
    uint64_t pull_version = 0;
    TimePoint pull_until{};
    // Best-known load (piggybacked or replicated).
    LoadRecord load;
    TimePoint load_at{};
    // Version of its service record last reported to the listener (0: none).
    uint64_t service_version = 0;
    // Version of its usage record last reported to the listener (0: none).
    uint64_t usage_version = 0;
    // Replica of its state; null unless kAlive or kSuspect.
    std::unique_ptr<OriginStore> store;
    // Its public signing key for generation key_generation (the first one seen; empty: none).
    std::string signing_key;
    Generation key_generation = 0;
    // With signatures (member_statement.h), what is relayed about it: its latest signed statement
    // about itself applied here (alive or left), each accuser's signed accusation (in the order
    // of `accusers`), and the death verdict this node signed.
    std::optional<MemberUpdate> statement;
    std::vector<MemberUpdate> accusations;
    std::optional<MemberUpdate> verdict;
  };
  // What a signing node makes of a membership update before applying it (node_member_signing.cc).
  enum class Admission { kRefused, kNoChange, kVerified };

  enum class PendingKind { kProbe, kRetry, kRelay };
  struct Pending {
    PendingKind kind = PendingKind::kProbe;
    NodeId target;
    Generation target_generation = 0;
    TimePoint sent_at{};
    int sends = 0;
    bool acked = false;
    bool heard = false;    // kProbe: the target spoke to us since sent_at (counts as an ack)
    bool relayed = false;  // kProbe: ... or only its newer state reached us through others
    int nacks = 0;
    int expected_nacks = 0;
    Address requester;                 // kRelay
    uint64_t req_seq = 0;              // kRelay: the requester's seq; kRetry: the probe's seq
    std::vector<uint64_t> retry_seqs;  // kProbe: seqs of the extra direct pings
  };

  // Timers (node.cc).
  TimerId After(Duration d, void (Node::*fn)());
  template <typename F>
  TimerId AfterFn(Duration d, F fn);
  void ProbeTick();
  void GossipTick();
  void PushPullTick();
  void ReconnectTick();
  void HeartbeatTick();
  void JoinTick();
  bool KnowsAddress(const Address& address) const;

  // Probing (node_probe.cc).
  MemberRec* NextProbeTarget();
  // The alive member longest silent beyond its usual evidence gap, not yet probed for it; or null.
  MemberRec* SilentMember();
  void ProbeTimeout(uint64_t seq);
  void RetryPing(uint64_t seq);
  void SendNotice(const Address& to, const MemberUpdate& u);
  void ProbeEnd(uint64_t seq);
  // True if the pending probe's target has spoken to us since the probe started (sets p.heard;
  // p.acked stays for real acks, which still give RTT samples).
  bool HeardSince(Pending& p);
  void AddHealth(int delta);
  void SampleRtt(const NodeId& id, Duration rtt);
  Duration Scaled(Duration d) const { return d * (local_health_ + 1); }

  // Membership updates and member selection (node_membership.cc).
  void ApplyUpdate(const MemberUpdate& u);
  void ApplyMembership(const MemberUpdate& u);
  // Binds `key` to m's current generation unless one is bound already (then counts a conflict).
  void BindKey(MemberRec& m, const std::string& key);
  void ApplyAboutSelf(const MemberUpdate& u);
  // This node's own statement (signed with signatures on).
  MemberUpdate SelfUpdate(MemberState state);
  MemberUpdate UpdateOf(const MemberRec& m) const;
  // A push-pull answer to `asked` (the asker's own list): every member once, as UpdateOf, except
  // that a signed statement the asker listed itself, word for word, goes without its signature and
  // key (PushPullAnswer in node_dispatch.cc).
  Message PushPullAnswer(const std::vector<MemberUpdate>& asked);
  static MemberView ViewOf(const MemberRec& m);
  void SetState(MemberRec& m, MemberState state);
  // `accusation` names the accuser (and with signatures carries its signature, kept to relay).
  void StartSuspicion(MemberRec& m, const MemberUpdate& accusation);
  void AddConfirmation(MemberRec& m, const MemberUpdate& accusation);
  // Whether `accuser`'s word may start a suspicion here now; takes one of its tokens if so.
  bool TakeAccusationToken(const NodeId& accuser);
  void RescheduleSuspicion(MemberRec& m);
  void SuspicionExpired(const NodeId& id, Generation generation, uint64_t incarnation);
  void NewStore(MemberRec& m);
  void DropStore(MemberRec& m);
  void Broadcast(MemberUpdate u) { broadcasts_.Push(std::move(u)); }
  int TransmitLimit() const;
  size_t ClusterSize() const { return live_member_count() + 1; }

  // Anti-entropy (node_anti_entropy.cc).
  uint64_t DigestTerm(uint64_t id_hash, Generation g, uint64_t version) const;
  void UpdateDigest(uint64_t id_hash, Generation g, uint64_t old_version, uint64_t new_version);
  // Origin -> highest version, self first then members in id order; empty if its encoding would
  // exceed max_bytes.
  std::vector<DigestEntry> FullDigest(size_t max_bytes = SIZE_MAX) const;
  // What `theirs` lacks, within the stream budget.
  std::vector<OriginDelta> BuildDeltas(const std::vector<DigestEntry>& theirs, bool only_listed);
  // Answers a peer's full digest: what it lacks, plus a digest of what we lack (SyncDeltas).
  void AnswerDigest(const Address& from, const NodeId& peer,
                    const std::vector<DigestEntry>& theirs);
  // Sends `first` (its digest, if any) and `deltas`, packed into datagrams where they fit.
  void SendDeltas(const Address& to, Message first, std::vector<OriginDelta> deltas);
  size_t DatagramDeltaRoom() const;
  size_t StreamDeltaRoom() const;
  void ApplyDeltas(const std::vector<OriginDelta>& deltas);
  // Signed state (node_signing.cc). True if d, which m's replica would apply, carries m's valid
  // signature of the state it leads to (then *commitment is that state's commitment, if kept).
  bool VerifyDelta(MemberRec& m, const OriginDelta& d, std::optional<StateHash>* commitment);
  // With Config::key_source: binds the key the source confirms for m's generation, if any, and
  // counts an `announced` key (may be null) that differs; true if a key is bound.
  bool ConfirmKey(MemberRec& m, const std::string* announced);
  // Publishes the own writes since the last signature, signed (every SignInterval()).
  void SignTick();
  // The interval between signed publications at the cluster's present size (Config::sign_interval).
  Duration SignInterval() const;
  // Signed membership (node_member_signing.cc). Whether `u` would change what this node holds
  // and, if so, whether it carries the valid signature of the member it is about (alive, left)
  // or of the accuser it names (suspect, dead); within the message's verification budget.
  Admission AdmitMemberUpdate(const MemberUpdate& u);
  Admission AdmitAccusation(MemberRec& m, const MemberUpdate& u);
  // `u`, a statement about itself by m (null: unknown member), verified under m's bound key for
  // u's generation, else the key the source confirms, else (first sight) the key u announces.
  bool VerifySelfStatement(MemberRec* m, const MemberUpdate& u);
  // True if u.signature is `key`'s signature of u's statement (counted; spends the budget).
  bool CheckMemberSignature(const std::string& key, const MemberUpdate& u);
  // Signs u's statement with this node's key (64 zero bytes when modeled).
  void SignMemberUpdate(MemberUpdate& u);
  // This node's accusation of m's current incarnation (`state`: suspect or dead), signed.
  MemberUpdate Accusation(const MemberRec& m, MemberState state);
  // After `u` was verified and applied: keep it as what is relayed about its member.
  void KeepStatement(const MemberUpdate& u);
  bool signing() const { return config_.signatures != SignatureMode::kOff; }
  // The own store peers are served from: the signed one with signatures, else the writer.
  const OriginStore& served_self() const { return published_ ? *published_ : *self_store_; }
  // The own writer's version moved from `old`: the digest follows it (unless signing, where it
  // follows the signed store).
  void OwnWritten(uint64_t old);
  // Records `version` of m's state as seen (delta applied or named in a digest); a version above
  // every earlier one is relayed evidence of life (last_evidence_at).
  void NoteVersionSeen(MemberRec& m, uint64_t version);
  void NoteLoad(MemberRec& m, const LoadRecord& rec);
  void NoteService(MemberRec& m, const ServiceRecord& rec);
  void NoteUsage(MemberRec& m, const UsageRecord& rec);
  void WriteOwnLoad();
  // Moves to the stride the cluster size calls for (landmark_stride.h), re-deriving the own
  // landmarks from held_ if it changed.
  void MaybeRestride();
  const OriginStore* StoreFor(const NodeId& id) const;

  // Messages (node_dispatch.cc).
  // After leaving: answers a sender that missed the goodbye (rate-limited per address).
  void RepeatGoodbye(const Address& from, Channel channel, std::span<const uint8_t> payload);
  // The authentic message in `payload` from another node, or nullopt (counted as dropped).
  std::optional<Message> OpenMessage(Channel channel, std::span<const uint8_t> payload);
  // Handles a message by type, after its header was applied; `now` is its arrival.
  void Dispatch(const Address& from, const Message& m, TimePoint now);
  void OnAck(const Message& m, TimePoint now);
  void OnPingReq(const Address& from, const Message& m, TimePoint now);
  void OnSyn(const Address& from, const Message& m);
  void HandleHeader(const Address& from, const Header& h);
  void Send(const Address& to, Message m, const NodeId& prefer_update = {});
  // Asks `from` for its member list (a push-pull with our own "alive"), at most once per
  // join_retry_interval: for members we learned of only by name.
  void PullMemberList(const Address& from, TimePoint now);
  Message NewMessage(MsgType type) const;
  std::vector<MemberRec*> RandomLive(size_t k, const NodeId& exclude);
  // Live members (kAlive or kSuspect) in id order, rebuilt only after liveness changed.
  const std::vector<MemberRec*>& LiveMembers();
  // Index in ordered_ of the member with this id, or ordered_.size().
  size_t OrderedIndex(const NodeId& id) const;
  size_t BodyBudget(bool stream) const;

  // Invariants:
  //  - members_ never holds id_; a member has a store iff its state is kAlive or kSuspect, and
  //    then store->generation() == generation.
  //  - digest_hash_ == XOR of DigestTerm over own store and every member store.
  //  - suspicion_timer != kNoTimer only while state == kSuspect.
  //  - ordered_ points at every record of members_, in id order; unless live_dirty_, live_ at
  //    those in kAlive or kSuspect, in id order.
  NodeId id_;
  Generation generation_;
  Address address_;
  Config config_;
  Scheduler& scheduler_;
  Rng& rng_;
  Transport& transport_;
  PlaintextFramer plaintext_;
  Framer& framer_;
  Listener* listener_;
  SharedHistories* shared_;
  std::shared_ptr<int> alive_token_ = std::make_shared<int>(0);

  uint64_t incarnation_ = 0;
  bool started_ = false;
  bool left_ = false;
  int local_health_ = 0;
  std::vector<Address> seeds_;
  Duration join_backoff_{};  // current interval between contacts of still-unknown seeds
  // Lookups by id: a hash map (node-based, so records never move). Every walk goes through
  // ordered_ instead, in id order: walking an ordered map per message (digests, deltas, random
  // picks) and its string compares per lookup would be a third of the simulator's CPU time at
  // N = 256.
  std::unordered_map<NodeId, MemberRec> members_;
  std::vector<MemberRec*> ordered_;
  uint64_t routes_version_ = 0;   // see routes_version()
  std::vector<MemberRec*> live_;  // valid unless live_dirty_
  bool live_dirty_ = true;
  int64_t live_count_ = 0;  // members in kAlive or kSuspect
  std::vector<NodeId> probe_order_;
  size_t probe_pos_ = 0;
  std::unordered_map<uint64_t, Pending> pending_;
  uint64_t next_seq_ = 1;
  BroadcastQueue broadcasts_;

  std::unique_ptr<OriginStore> self_store_;
  // With signatures: the own state as last signed (a private replica of self_store_).
  std::unique_ptr<OriginStore> published_;
  std::optional<SigningKey> signing_key_;
  // Every block this node holds (full key -> block index), from PublishCacheEvents: what a
  // change of stride re-derives the landmarks from.
  KeyTable<uint32_t> held_;
  uint64_t self_id_hash_ = 0;
  uint64_t digest_hash_ = 0;
  uint64_t digest_count_ = 0;
  uint64_t last_syn_digest_hash_ = 0;  // digest_hash_ at the previous Syn
  bool stale_accusation_ = false;      // the message being handled accused an old incarnation of us
  // Signatures of membership updates this node may still check for the message being handled
  // (Config::member_verifications_per_message / _per_push_pull).
  size_t verify_budget_ = 0;
  // With signatures: this node's signed statements about itself, by state (re-signed when the
  // incarnation changes).
  std::array<std::optional<MemberUpdate>, 4> self_signed_;
  TimePoint last_discovery_pull_{};  // last push-pull asked for a member seen only in a digest
  LoadReport load_;
  uint64_t heartbeat_ = 0;
  TimePoint last_load_write_{};
  OverloadTracker overload_;
  Counters counters_;
  std::map<Address, TimePoint> goodbye_sent_;  // after Leave: last "left" notice per address
};

}  // namespace hearsay::gossip
