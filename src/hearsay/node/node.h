// node::Node: the composition root. One node = its engine + a gossip::Node + a PeerIndex of what
// peers hold + a routing Policy + the BlockKeyer of its namespace. The simulator builds one per
// simulated machine; the daemon (net/daemon.h) builds one per process.
//
// One request (Submit):
//   1. validate (an empty prompt or zero max tokens is the client's error: OnError, nothing else
//      changes); resolve its model (below); cut the prompt into its block key chain;
//   2. a request carrying the hop marker is served here (or refused NOT_FOUND if this node does
//      not serve its model); otherwise build one route::Candidate per member that serves the
//      model: self with the exact cached tokens of its own engine, every live peer with the
//      gossiped estimate from the PeerIndex, its gossiped load, smoothed RTT / 2 as the one-way
//      delay, its overload flag and the age of the view; dead and left peers are skipped;
//   3. the policy picks; serve on the own engine or forward once through the PeerClient with the
//      hop marker set;
//   4. a forward that fails before the client saw anything (before the first token; or at any
//      point when the client reads one JSON body, PeerRequest::stream false: the sink then hears
//      OnRestart), or that the peer bounces back because its queue is longer than the policy's
//      next choice would take (NodeOptions::bounce_margin_ms), is retried on the next choice of
//      the policy with that peer excluded (at most max_forward_attempts forwards, not counting up
//      to max_bounces bounces), and then
//      served here: the client never loses the request. A forward failing after the client saw
//      output ends the request with an error whose message names no peer;
//   5. the first token's cached-token count goes back to the policy (OnOutcome).
//
// Landmarks and granularity: gossip publishes only blocks whose index is a multiple of the
// publishing peer's own landmark stride s (it grows with the cluster; gossip/landmark_stride.h),
// and tells OnPeerStride. The PeerIndex matches each peer on the sub-chain [k_0, k_s, k_2s, ...]
// of its own s (MatchStrided); m matched landmarks mean blocks 0..(m-1)s are held, so the
// estimate is (m-1)s + 1 blocks (0 when m = 0), at most s - 1 blocks below the truth for a
// fresh view.
//
// Models (a pool): NodeOptions::service says what this node serves, and gossip carries every
// member's (gossip/service.h). A request's model (PeerRequest::model: a name, an alias or a LoRA
// adapter; empty = this node's first model) resolves through this node's service, then its live
// peers', to a ModelTarget (model_routing.h). Candidates are only the members that serve that
// target with the same tokenizer fingerprint and block size: self if it does, live peers whose
// gossiped service does. The reference fingerprint is this node's own when it serves the model,
// else the one most live servers agree on. None: the request ends with OnError NOT_FOUND naming
// the model. A forwarded request for a model this node does not serve is refused (NOT_FOUND,
// NodeStats::forwards_wrong_model) and the entry node routes it elsewhere. The request's cache
// namespace mixes in the target (ModelNamespace), so two models never share a block key.
// A node whose service is empty (the single-model deployment) ignores models altogether: it
// routes every request among all members exactly as before, with keys as before.
//
// Periodic work (every publish_interval): drain the engine's cache events into gossip
// (PublishCacheEvents), report its load (SetLoad), and refresh the peers' addresses and RTTs from
// the gossip node's member views.
//
// Exact view (simulator only): with an ExactClusterView set, peers' cached tokens and load come
// from it (exact, instant) instead of gossip; the `oracle` policy needs it.
//
// Ownership: the node owns its gossip::Node, PeerIndex and Policy; it borrows the engine,
// scheduler, rng, transport, framer, peer client and exact view, which must outlive it. Sinks
// passed to Submit must stay valid until their terminal callback. Destroying the node drops its
// pending work without callbacks (a crash).
// Thread-safety: none; everything runs on the core's thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "hearsay/common/ids.h"
#include "hearsay/common/status.h"
#include "hearsay/engine/engine.h"
#include "hearsay/env/peer_client.h"
#include "hearsay/env/rng.h"
#include "hearsay/env/scheduler.h"
#include "hearsay/env/transport.h"
#include "hearsay/gossip/config.h"
#include "hearsay/gossip/framer.h"
#include "hearsay/gossip/listener.h"
#include "hearsay/gossip/node.h"
#include "hearsay/node/cluster_limiter.h"
#include "hearsay/node/decision_record.h"
#include "hearsay/node/model_routing.h"
#include "hearsay/node/peer_trust.h"
#include "hearsay/node/shared_backlog.h"
#include "hearsay/prefix/block_keys.h"
#include "hearsay/prefix/peer_index.h"
#include "hearsay/route/policy.h"
#include "hearsay/route/policy_options.h"

namespace hearsay::node {

// Exact, instant knowledge of every engine (simulator only; the oracle's input).
class ExactClusterView {
 public:
  virtual ~ExactClusterView() = default;
  // The prompt tokens `peer`'s engine holds now in cache namespace `ns` (the request's effective
  // one: tenant and model mixed in), or nullopt if the peer is unknown or down.
  virtual std::optional<uint32_t> CachedTokens(const NodeId& peer, std::span<const uint32_t> prompt,
                                               uint64_t ns) const = 0;
  // `peer`'s engine load now.
  virtual std::optional<engine::EngineLoad> Load(const NodeId& peer) const = 0;
};

// Simulator only (the adversarial experiment, sim/adversarial_experiment.h): a member that lies in
// gossip to attract traffic while it serves what it gets normally. A real daemon never sets it.
struct Misbehaviour {
  // Advertise, as its own, every block any peer advertises, and never retract one (a cache
  // summary as large as the cluster's).
  bool claim_every_prefix = false;
  // Advertise an idle engine: nothing queued or running, no queue wait.
  bool claim_idle = false;
  // Serve every forward, never bouncing one back (it wants the traffic).
  bool never_bounce = false;
  // Slander: list, in its load report's backlog (shared_backlog.h), every live peer (up to
  // gossip::kMaxBacklogEntries) under an hour of work it never sent there, so that peers who
  // believe it send them nothing. Honest about itself, and it routes on its true list.
  bool slander = false;
  bool any() const { return claim_every_prefix || claim_idle || never_bounce || slander; }
};

struct NodeOptions {
  NodeId id;
  Generation generation = 1;
  Address address;
  gossip::Config gossip;
  // Registry name of the routing policy, and its options.
  std::string policy = "hearsay";
  route::PolicyOptions policy_options;
  // How often engine cache events and load go to gossip.
  Duration publish_interval = FromMillis(100);
  // An idle load (nothing waiting) unchanged for this long is published again, as a new version
  // of the same record. Peers date a member's load by when its last version reached them, and the
  // policy forgets a report's queue as it ages (route::HearsayParams::queue_memory): without a
  // refresh, a member that stays idle looks as unknown as one not heard from. About one gossip
  // round: in the paper experiment at 0.1 ms, hearsay's mean TTFT 13.18 -> 12.82 ms for 2.5% more
  // bytes. A load with a queue is left to age, since peers drain its queue by the report's age:
  // an upstream engine's queue estimate holds still through a long prefill, and refreshing it
  // made a busy cache holder look busy until its queue changed.
  Duration load_refresh = FromMillis(200);
  // One-way delay assumed for a peer whose RTT has not been measured yet.
  Duration default_one_way_delay = FromMillis(1);
  // Forwards tried for one request before it is served here, bounces not counted.
  int max_forward_attempts = 2;
  // Bounces (below) one request may take: a forward carries a bounce threshold while the request
  // has been bounced fewer times than this (and it is not the last forward allowed). Each bounce
  // costs one round trip and excludes that peer; entry nodes that chose at once on the same
  // gossiped view (when traffic starts, every view says idle) collide on the same members, and
  // with one bounce the second choice had to be served however busy it turned out. Each bounce
  // is one the peer judged worth its round trip; on 32-node MMLU-like traffic (docs/peers.md)
  // 8 took hearsay's mean and p99 TTFT below what 3 gave.
  int max_bounces = 8;
  // What this node serves (gossiped; gossip/service.h limits apply). Empty: a single-model node
  // that serves every request whatever model it names, and routes ignoring models.
  gossip::Service service;
  // Peers the PeerIndex sizes itself for.
  size_t max_peers = 256;
  // The engine's speed is unknown to policy_options.cost (an upstream engine, priced with the
  // default model): price each member by its own measured prefill cost per token (its engine's
  // EngineLoad::prefill_ms_per_token, gossiped), as Candidate::cost_scale, and its decode batch
  // by its measured time between output tokens (EngineLoad::decode_ms_per_token) when it has one,
  // as Candidate::decode_cost_scale. A member that has not
  // measured yet is assumed as fast as this node (or the model, before this node has measured).
  bool price_by_measured_prefill = false;
  // Late binding of forwards. Every forward but the last allowed carries the policy's expected
  // time to first token at its best other choice (route::Decision::fallback_ttft_ms), and a node
  // that receives one bounces it back unserved when its own expected time, from its exact queue,
  // exceeds that by more than this margin; the entry node then routes it again without that
  // peer. Load reports are a gossip round old while a queue turns over in a few service times,
  // so the target is the only one who knows its queue now, when it matters. < 0 = never ask a
  // peer to bounce (a node always honours what a sender asks).
  double bounce_margin_ms = 1.0;
  // The same margin as a fraction of what the sender asked: a node bounces only above
  // bounce_above × (1 + bounce_margin_fraction) + bounce_margin_ms, because its own estimate and
  // the sender's are both only estimates (on a CPU engine they are off by tens of percent).
  double bounce_margin_fraction = 0.0;
  // The first-token deadline of a forward (PeerRequest::first_token_within_ms): this many times
  // the policy's expected time to first token at the chosen peer (route::Decision::
  // expected_ttft_ms), and at least forward_deadline_floor. A forward that misses it is retried
  // like a failed one, and counts in the member's trust record as an answer that late. 0, or a
  // policy without an estimate: the host's own limit. (The daemon's limits.forward_deadline_*
  // default to these; the simulator's forwards keep them too.)
  double forward_deadline_factor = 4;
  Duration forward_deadline_floor = FromMillis(1000);
  // A forward whose member gossip suspects and which has heard nothing from it for this long is
  // aborted as if the member were dead: a partition or a stopped peer ends a stream within
  // seconds, not at the death verdict (15-18 s on a small cluster). 0 turns it off.
  Duration suspect_silence = FromMillis(3000);
  // How this node judges its peers' claims against what they deliver (peer_trust.h).
  PeerTrustOptions trust;
  // The work this node lists in its load report at members whose reports leave it out, and the
  // floor peers' lists put on a member's wait (shared_backlog.h; the floor only with trust).
  SharedBacklogOptions shared_backlog;
  // Per-tenant usage for cluster-wide rate limits (cluster_limiter.h), or null: the node gossips
  // its usage every publish tick it is due and feeds peers' records and membership changes into
  // it. Borrowed; must outlive the node.
  ClusterLimiter* limiter = nullptr;
  // Simulator only: how this node lies (Misbehaviour).
  Misbehaviour misbehave;
};

// Counters of one node (monotone).
struct NodeStats {
  uint64_t client_requests = 0;  // Submit calls without the hop marker
  // Client requests served by a peer (counted at first token; a request served again after its
  // peer failed mid-answer counts once per first token).
  uint64_t forwarded_out = 0;
  uint64_t forward_attempts = 0;  // forwards sent
  // Forwards that failed before the client saw anything (not bounces): before the first token,
  // or at any point for a client reading one JSON body (PeerRequest::stream false).
  uint64_t forward_failures = 0;
  uint64_t forwards_bounced = 0;  // forwards a busy peer sent back unserved; each routed again
  // Forwards ended at once because gossip declared their member dead or it came back with a new
  // generation: each then fails as a forward does (retried, or the stream ends with an error).
  uint64_t forwards_aborted_member_dead = 0;
  uint64_t forwards_aborted_suspect_silent = 0;  // NodeOptions::suspect_silence
  uint64_t served = 0;  // requests this node's engine produced a first token for
  uint64_t served_prompt_tokens = 0;
  uint64_t served_cached_tokens = 0;
  uint64_t rejected = 0;   // invalid requests
  uint64_t failed = 0;     // requests that ended in OnError for the client
  uint64_t cancelled = 0;  // requests dropped by Cancel (their client went away)
  uint64_t bounced = 0;    // forwarded requests this node sent back unserved (busy)
  // Client requests whose first token came from this node's engine (the route decision "local").
  uint64_t served_local = 0;
  // Over client requests at their first token (local or forwarded): the cached tokens the
  // policy estimated for the chosen node, and what its engine then reported.
  uint64_t estimated_cached_tokens = 0;
  uint64_t actual_cached_tokens = 0;
  // Client requests that ended NOT_FOUND because no live member serves their model (also
  // counted in `failed`).
  uint64_t models_not_found = 0;
  // Forwarded requests this node received for a model it does not serve, refused NOT_FOUND
  // unserved. Summed over a pool, the requests ever sent to a node without their model: 0 unless
  // a member's service changed while a forward was in flight.
  uint64_t forwards_wrong_model = 0;
  // Peer service records received that claim a model this node serves with another tokenizer
  // fingerprint or block size (ServiceConflicts() lists the current ones).
  uint64_t service_conflicts = 0;
};

// One model of the pool, as this node sees it (for GET /v1/models).
struct PoolModel {
  std::string model;                  // canonical name
  std::vector<std::string> aliases;   // every alias any live server gives it (sorted)
  std::vector<std::string> adapters;  // every LoRA adapter any live server has for it (sorted)
  uint32_t context_tokens = 0;        // the largest context length of its live servers
  size_t live_members = 0;            // live members serving it, self included
  bool served_here = false;
};

// A live peer that claims a model this node serves, with another tokenizer or block size: the
// two never route that model's requests to each other.
struct ServiceConflict {
  std::string model;
  NodeId peer;
  uint64_t own_fingerprint = 0;
  uint32_t own_block_tokens = 0;
  uint64_t peer_fingerprint = 0;
  uint32_t peer_block_tokens = 0;
};

class Node final : public gossip::Listener, public engine::EngineObserver {
 public:
  // Builds the node and its gossip::Node (not started). NOT_FOUND / INVALID_ARGUMENT if the
  // policy cannot be built or the service breaks a limit of gossip/service.h.
  static Result<std::unique_ptr<Node>> Create(NodeOptions options, engine::Engine& engine,
                                              prefix::BlockKeyer keyer, Scheduler& scheduler,
                                              Rng& rng, Transport& transport,
                                              PeerClient& peer_client,
                                              gossip::Framer* framer = nullptr);
  ~Node() override;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Starts gossip (joining through `seeds`) and the periodic publishing.
  void Start(std::span<const Address> seeds);

  // Takes one request (from a client, or from a peer when request.forwarded is set); its events
  // reach `sink`, ending with exactly one terminal callback, never from inside Submit.
  void Submit(PeerRequest request, ResponseSink* sink);

  // Drops the live request that `sink` submitted with id `client_id` (its client disconnected):
  // the engine stops working on it, or the forward is abandoned; no further callback reaches
  // `sink` for it, also when its ending (a bounce, a refusal) was already posted: the host may
  // free `sink` once this returns. Returns false if its terminal callback was delivered already
  // (or no such request was submitted).
  bool Cancel(uint64_t client_id, ResponseSink* sink);

  // Leaves the cluster gracefully (gossip::Node::Leave); requests in flight continue.
  void Leave() { gossip_->Leave(); }

  // Writes a decision record for every request this node routes or serves (decision_record.h);
  // nullptr (the default) writes none. The recorder must outlive the node.
  void SetRecorder(DecisionRecorder* recorder) { recorder_ = recorder; }

  // Replaces what this node serves (an engine restarted with another model, an adapter loaded)
  // and gossips it. INVALID_ARGUMENT (nothing changes) if it breaks a limit of gossip/service.h.
  Status SetService(gossip::Service service);
  const gossip::Service& service() const { return options_.service; }
  // The service of `member` (this node or a live peer), if known.
  std::optional<gossip::Service> MemberService(const NodeId& member) const;
  // Every model a live member (self included) serves, by canonical name.
  std::vector<PoolModel> PoolModels() const;
  // The live peers whose service conflicts with this node's on a model (ServiceConflict).
  std::vector<ServiceConflict> ServiceConflicts() const;
  // What `model` (as a request names it) resolves to here, or NOT_FOUND naming it; for a node
  // without a service, nullopt (every request is served whatever it names).
  Result<std::optional<ModelTarget>> ResolveModel(std::string_view model) const;

  // Uses exact global knowledge instead of gossip for peers' caches and loads (simulator only).
  void SetExactView(const ExactClusterView* view) { exact_ = view; }

  // The network message sink of the gossip node (hosts deliver gossip messages here).
  MessageSink& gossip_sink() { return *gossip_; }
  const gossip::Node& gossip() const { return *gossip_; }
  const NodeId& id() const { return options_.id; }
  const NodeStats& stats() const { return stats_; }
  const route::Policy& policy() const { return *policy_; }
  const prefix::PeerIndex& peer_index() const { return peer_index_; }
  // How far this node believes each member's claims (self included), from what they delivered.
  const PeerTrust& trust() const { return trust_; }
  // The work every lister reports outstanding at each member where its reports leave it out
  // (shared_backlog.h), summed, aged and weighted as routing weighs it at `now`, and the list
  // this node published last (its own entries, as published).
  SharedBacklog ReportedBacklog(TimePoint now) const;
  const std::vector<gossip::BacklogEntry>& own_backlog() const { return own_backlog_; }
  // Estimated cached tokens of `prompt` at `peer` from the gossiped view (0 if unknown).
  uint32_t EstimatePeerCachedTokens(const NodeId& peer, std::span<const uint32_t> prompt) const;

  // gossip::Listener.
  void OnMemberChanged(const NodeId& id, Generation generation, gossip::MemberState state) override;
  void OnPeerCacheEvents(const NodeId& id, Generation generation,
                         std::span<const prefix::BlockEvent> events) override;
  void OnPeerCacheSnapshot(const NodeId& id, Generation generation,
                           std::span<const prefix::BlockEvent> live) override;
  void OnPeerStride(const NodeId& id, Generation generation, uint32_t stride) override;
  void OnPeerLoad(const NodeId& id, Generation generation, const gossip::LoadReport& load) override;
  void OnPeerService(const NodeId& id, Generation generation,
                     const gossip::Service& service) override;
  void OnPeerUsage(const NodeId& id, Generation generation,
                   const gossip::UsageRecord& usage) override;

  // engine::EngineObserver (the node's own engine).
  void OnAdmitted(engine::RequestId id, const engine::Admission& admission) override;
  void OnFirstToken(engine::RequestId id, const engine::FirstToken& first) override;
  void OnTokens(engine::RequestId id, std::span<const engine::TokenId> tokens) override;
  void OnText(engine::RequestId id, std::string_view text) override;
  void OnComplete(engine::RequestId id, const engine::Usage& usage) override;
  void OnError(engine::RequestId id, const Status& status) override;

 private:
  // What this node believes about one peer; indexed by its PeerIndex slot.
  struct Peer {
    NodeId id;
    Address address;
    Generation generation = 0;
    bool live = false;
    bool has_load = false;
    gossip::LoadReport load;
    TimePoint load_at{};
    Duration one_way{0};
    bool has_service = false;
    gossip::Service service;
  };
  // One request this node accepted from a client or a peer.
  // Invariants: exactly one of engine_id (served here) or a forward is in flight while live.
  struct Pending {
    uint64_t client_id = 0;
    ResponseSink* sink = nullptr;
    PeerRequest request;
    // The model it resolved to (nullopt on a node without a service: any member serves it), and
    // its effective cache namespace (request.cache_namespace with the target mixed in).
    std::optional<ModelTarget> target;
    uint64_t cache_namespace = 0;
    // request.prompt's length (ServeHere moves the prompt into the engine).
    uint32_t prompt_tokens = 0;
    std::vector<prefix::BlockKey> keys;
    TimePoint arrived{};
    route::Slot slot = 0;
    uint32_t estimated_cached = 0;
    // The current attempt: when it was sent, and the time to first token its member's claims
    // promised (route::Decision::claimed_ttft_ms).
    TimePoint sent_at{};
    // When the forward in flight was sent or last delivered something (first token, output).
    TimePoint last_heard{};
    double claimed_ttft_ms = -1;
    double claimed_prefill_ms = -1;
    // The member the current attempt went to, as the policy priced it: what its answer's time is
    // judged against once the cache it delivered is known.
    route::Candidate priced_as;
    int attempts = 0;
    int bounces = 0;  // of those attempts, forwards the peer bounced
    // The member the forward in flight went to and its generation then (empty: none in flight).
    NodeId forward_to;
    Generation forward_generation = 0;
    std::vector<route::Slot> excluded;
    bool first_sent = false;
    // Served here: the engine's queue wait (engine::Admission) and when it was submitted.
    Duration queued{-1};
    TimePoint submitted{};
    // A forward the sender allowed to bounce: this node's own expected time on arrival.
    double own_estimate_ms = -1;
    // With a recorder, the request's decision record so far (client requests only).
    std::unique_ptr<RouteRecord> record;
  };
  // Forwarded-to-peer events come back through this adapter.
  class ForwardSink;

  Node(NodeOptions options, engine::Engine& engine, prefix::BlockKeyer keyer, Scheduler& scheduler,
       Rng& rng, std::unique_ptr<route::Policy> policy, PeerClient& peer_client);

  void Route(uint64_t token);
  void ServeHere(uint64_t token);
  void BuildCandidates(const Pending& p, std::span<const uint32_t> prompt);
  void PublishTick();
  void RefreshMembers();
  // This node's backlog list at `now` (node_backlog.cc), and the sum of every reporter's into
  // `sum`; NoteListedWork extends listed_work_until_ by a list just published or received.
  std::vector<gossip::BacklogEntry> ListOwnBacklog(TimePoint now);
  // Misbehaviour::slander's list: every live peer under the most work a list may name.
  std::vector<gossip::BacklogEntry> SlanderList() const;
  void SumBacklogInto(SharedBacklog& sum, TimePoint now) const;
  void NoteListedWork(std::span<const gossip::BacklogEntry> list, TimePoint now);
  Peer* EnsurePeer(const NodeId& id, Generation generation);
  void Finish(uint64_t token);
  // The index of forwards in flight by member (forwards_by_member_): TrackForward when one is
  // sent, UntrackForward when it ends (any way), AbortForwards when gossip says `member` is gone
  // (dead: forwards up to `generation`) or alive at `generation` (those to older generations).
  void TrackForward(uint64_t token, Pending& p, const Peer& peer);
  void UntrackForward(uint64_t token, Pending& p);
  void AbortForwards(const NodeId& member, Generation generation, bool gone);
  // Aborts the forwards to suspected members that have heard nothing for
  // NodeOptions::suspect_silence (every publish tick).
  void AbortSilentForwardsToSuspects();
  // Forward events.
  void OnForwardFirst(uint64_t token, const PeerFirstToken& first);
  // This node's expected time to first token for the forwarded `request`, in ms, priced like the
  // self candidate the sender's policy compared against; above the sender's bounce_above_ms plus
  // NodeOptions::bounce_margin_ms it is sent back unserved (Bounce).
  double OwnEstimateMs(const Pending& p) const;
  void Bounce(uint64_t token);
  // Ends request `token` with `status` before anything was served (posted, never inside Submit).
  void FailUnserved(uint64_t token, Status status);
  // Posts the OnError(status, before_first_token) that ends request `token` unserved, and keeps
  // it in unserved_ until then, so that a Cancel in between finds it and drops the callback.
  void PostUnserved(uint64_t token, uint64_t client_id, ResponseSink* sink, Status status);
  // True if this node may serve `p` (no model, or its own service serves p's target).
  bool ServesHere(const Pending& p) const;
  // Whether a peer may serve `target`: live, and its gossiped service serves it.
  bool PeerServes(const Peer& peer, const ModelTarget& target) const;
  // A model name no service here resolved: the target most live peers that serve it agree on.
  std::optional<ModelTarget> ResolveAmongPeers(std::string_view name) const;
  void OnForwardOutput(uint64_t token, const PeerOutput& output);
  void OnForwardComplete(uint64_t token, const PeerUsage& usage);
  void OnForwardError(uint64_t token, const Status& status, bool before_first_token);
  // A forward to peer p.slot ended unserved with `status`: the trust record forgets it, or takes
  // a missed first-token deadline as a late answer.
  void NoteForwardGivenUp(const Pending& p, uint64_t token, const Status& status);
  // `engine_tokens` counted by an engine whose own count of p's prompt is engine_prompt_tokens
  // (an upstream tokenizes its own way), in this node's tokens: what the policy estimates in.
  static uint32_t InNodeTokens(uint32_t engine_tokens, uint32_t engine_prompt_tokens,
                               const Pending& p);
  // Decision records (node_records.cc); each does nothing without a recorder.
  void RecordAttempt(Pending& p, const route::Decision& d);
  void EndAttempt(Pending& p, std::string_view result);
  void RecordFirstToken(Pending& p, const std::string& served_by, uint32_t cached);
  void EmitRoute(Pending& p, std::string error);
  void EmitServe(const Pending& p, uint32_t prompt_tokens, uint32_t cached, bool bounced);

  NodeOptions options_;
  engine::Engine& engine_;
  prefix::BlockKeyer keyer_;
  Scheduler& scheduler_;
  Rng& rng_;
  std::unique_ptr<route::Policy> policy_;
  PeerClient& peer_client_;
  std::unique_ptr<ForwardSink> forward_sink_;
  std::unique_ptr<gossip::Node> gossip_;
  const ExactClusterView* exact_ = nullptr;
  DecisionRecorder* recorder_ = nullptr;
  prefix::PeerIndex peer_index_;
  // Invariants: peers_[s] describes the peer in PeerIndex slot s (live iff the index holds it);
  // route slot = PeerIndex slot + 1; route slot 0 is self.
  std::vector<Peer> peers_;
  bool members_dirty_ = true;
  uint64_t routes_seen_ = 0;  // gossip::Node::routes_version() at the last RefreshMembers
  // Live requests by token; engine request ids are the tokens of requests served here.
  std::unordered_map<uint64_t, Pending> pending_;
  // Requests ended unserved (bounced, refused) whose OnError is posted and not yet delivered, by
  // token. Invariant: a token is in at most one of pending_ and unserved_.
  struct Unserved {
    uint64_t client_id = 0;
    ResponseSink* sink = nullptr;
  };
  std::unordered_map<uint64_t, Unserved> unserved_;
  // The tokens of the forwards in flight, by member (Pending::forward_to): a member's failure
  // aborts its forwards without a scan of every request.
  std::unordered_map<NodeId, std::vector<uint64_t>> forwards_by_member_;
  uint64_t next_token_ = 1;
  std::vector<prefix::BlockEvent> events_scratch_;
  std::vector<route::Candidate> candidates_;
  // With price_by_measured_prefill: the candidates' measured cost scales (0: not measured yet),
  // pooled into classes split at gaps wider than kSpeedPoolBand (speed_pooling.h).
  std::vector<double> measured_scales_;
  static constexpr double kSpeedPoolBand = 1.5;
  std::vector<prefix::BlockKey> landmarks_;  // the prompt's chain as summary keys
  std::vector<uint32_t> match_;
  PeerTrust trust_;
  TimePoint trust_checked_{};
  static constexpr Duration kTrustCheckInterval = std::chrono::milliseconds(10);
  // The list this node last published (shared_backlog.h) and when; peers' lists summed with it
  // (shared_backlog_) before each routing decision.
  std::vector<gossip::BacklogEntry> own_backlog_;
  TimePoint own_backlog_at_{};
  std::vector<BacklogSource> backlog_sources_;
  std::vector<NodeId> backlog_members_;
  // When the last work any list named (this node's or a peer's) is worked off: until then peers'
  // lists are summed before each routing decision, after it there is nothing to sum.
  TimePoint listed_work_until_{};
  SharedBacklog shared_backlog_;
  // With Misbehaviour::claim_every_prefix: the peers' advertised blocks, to advertise as our own.
  std::vector<prefix::BlockEvent> borrowed_claims_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
  NodeStats stats_;
};

}  // namespace hearsay::node
