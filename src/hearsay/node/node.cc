#include "hearsay/node/node.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "hearsay/gossip/summary_key.h"
#include "hearsay/route/registry.h"
#include "hearsay/route/ttft_estimate.h"

namespace hearsay::node {

class Node::ForwardSink final : public ResponseSink {
 public:
  explicit ForwardSink(Node& node) : node_(node) {}
  void OnFirstToken(uint64_t id, const PeerFirstToken& first) override {
    node_.OnForwardFirst(id, first);
  }
  void OnOutput(uint64_t id, const PeerOutput& output) override {
    node_.OnForwardOutput(id, output);
  }
  void OnComplete(uint64_t id, const PeerUsage& usage) override {
    node_.OnForwardComplete(id, usage);
  }
  void OnError(uint64_t id, const Status& status, bool before_first_token) override {
    node_.OnForwardError(id, status, before_first_token);
  }

 private:
  Node& node_;
};

Result<std::unique_ptr<Node>> Node::Create(NodeOptions options, engine::Engine& engine,
                                           prefix::BlockKeyer keyer, Scheduler& scheduler, Rng& rng,
                                           Transport& transport, PeerClient& peer_client,
                                           gossip::Framer* framer) {
  HEARSAY_ASSIGN_OR_RETURN(std::unique_ptr<route::Policy> policy,
                           route::MakePolicy(options.policy, options.policy_options));
  if (options.gossip.landmark_stride == 0) {
    return InvalidArgumentError("gossip landmark_stride must be >= 1");
  }
  std::unique_ptr<Node> node(
      new Node(std::move(options), engine, keyer, scheduler, rng, std::move(policy), peer_client));
  const NodeOptions& o = node->options_;
  node->gossip_ = std::make_unique<gossip::Node>(o.id, o.generation, o.address, o.gossip, scheduler,
                                                 rng, transport, framer, node.get());
  if (o.service != gossip::Service{}) HEARSAY_RETURN_IF_ERROR(node->gossip_->SetService(o.service));
  return node;
}

Node::Node(NodeOptions options, engine::Engine& engine, prefix::BlockKeyer keyer,
           Scheduler& scheduler, Rng& rng, std::unique_ptr<route::Policy> policy,
           PeerClient& peer_client)
    : options_(std::move(options)),
      engine_(engine),
      keyer_(keyer),
      scheduler_(scheduler),
      rng_(rng),
      policy_(std::move(policy)),
      peer_client_(peer_client),
      forward_sink_(std::make_unique<ForwardSink>(*this)),
      peer_index_(prefix::PeerIndexOptions{options_.max_peers, uint64_t{1} << 24, rng.NextU64()}),
      trust_(options_.trust) {}

Node::~Node() {
  // Requests served here must not call back into a destroyed node.
  for (auto& [token, p] : pending_) {
    if (p.slot == 0) engine_.Cancel(token);
  }
}

void Node::Start(std::span<const Address> seeds) {
  gossip_->Start(seeds);
  PublishTick();
}

void Node::PublishTick() {
  events_scratch_.clear();
  engine_.DrainCacheEvents(events_scratch_);
  if (options_.misbehave.claim_every_prefix) {
    // The liar's own removals would retract claims: it keeps every block it ever advertised.
    std::erase_if(events_scratch_, [](const prefix::BlockEvent& e) {
      return e.kind == prefix::BlockEvent::Kind::kRemoved;
    });
    events_scratch_.insert(events_scratch_.end(), borrowed_claims_.begin(), borrowed_claims_.end());
    borrowed_claims_.clear();
  }
  if (!events_scratch_.empty()) gossip_->PublishCacheEvents(events_scratch_);
  trust_.Expire(scheduler_.clock().Now());
  AbortSilentForwardsToSuspects();
  engine::EngineLoad l = engine_.Load();
  if (options_.misbehave.claim_idle) {
    l.waiting_requests = 0;
    l.running_requests = 0;
    l.waiting_prefill_tokens = 0;
    l.kv_pinned_tokens = 0;
    l.estimated_queue_wait = Duration{0};
  }
  gossip::LoadReport r;
  r.queue_depth = l.waiting_requests;
  r.running = l.running_requests;
  r.kv_used_tokens = l.kv_used_tokens;
  r.kv_capacity_tokens = l.kv_capacity_tokens;
  r.prefill_ms_per_token = l.prefill_ms_per_token;
  r.decode_us_per_token = static_cast<uint32_t>(
      std::clamp(std::isfinite(l.decode_ms_per_token) ? l.decode_ms_per_token * 1000 : 0.0, 0.0,
                 double(UINT32_MAX)));
  r.waiting_prefill_tokens = l.waiting_prefill_tokens;
  r.running_context_tokens = l.kv_pinned_tokens;
  r.queue_wait_us = static_cast<uint32_t>(std::clamp<int64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(l.estimated_queue_wait).count(), 0,
      int64_t{UINT32_MAX}));
  r.backlog = ListOwnBacklog(scheduler_.clock().Now());
  // A change is a new version at once; a load that holds, once every load_refresh if nothing
  // waits. A queue is not republished: peers drain a report's queue by its age, and a new version
  // of the same figures would tell them the queue has not moved while the engine works it off.
  const bool idle = r.queue_depth == 0 && r.queue_wait_us == 0 && r.waiting_prefill_tokens == 0;
  gossip_->SetLoad(r, idle ? options_.load_refresh : Duration::max());
  if (options_.limiter != nullptr) {
    if (auto usage = options_.limiter->UsageToPublish(scheduler_.clock().Now())) {
      gossip_->SetUsage(std::move(*usage)).IgnoreError();  // the limiter keeps within usage.h
    }
  }
  RefreshMembers();
  std::weak_ptr<int> alive = alive_;
  scheduler_.RunAfter(options_.publish_interval, [this, alive] {
    if (!alive.expired()) PublishTick();
  });
}

void Node::RefreshMembers() {
  // Nothing to do unless a peer was added or reset here, or gossip changed how to reach one.
  if (!members_dirty_ && gossip_->routes_version() == routes_seen_) return;
  members_dirty_ = false;
  routes_seen_ = gossip_->routes_version();
  gossip_->ForEachMemberRoute([this](const gossip::Node::MemberRoute& m) {
    std::optional<prefix::PeerSlot> s = peer_index_.FindSlot(m.id);
    if (!s || *s >= peers_.size()) return;
    Peer& p = peers_[*s];
    if (p.generation != m.generation) return;
    p.address = m.api_address.empty() ? m.address : m.api_address;
    p.live = m.state == gossip::MemberState::kAlive;
    p.one_way = m.rtt_ms ? FromMillis(*m.rtt_ms / 2) : options_.default_one_way_delay;
  });
}

Node::Peer* Node::EnsurePeer(const NodeId& id, Generation generation) {
  Result<prefix::PeerSlot> s = peer_index_.ObservePeer(id, generation);
  if (!s.ok()) return nullptr;
  if (*s >= peers_.size()) peers_.resize(*s + 1);
  Peer& p = peers_[*s];
  if (p.id != id || p.generation != generation) {
    policy_->OnMemberReset(*s + 1);
    const bool known_address = p.id == id;
    Address address = known_address ? p.address : Address{};
    p = Peer{};
    p.id = id;
    p.address = known_address ? address : id;
    p.generation = generation;
    p.one_way = options_.default_one_way_delay;
    members_dirty_ = true;
    // Until its first delta names its stride it holds nothing here, so any stride would do; the
    // replica's, if there is one, keeps the index right should the order of callbacks change.
    const uint32_t stride = gossip_->PeerStride(id);
    peer_index_.SetStride(id, generation, stride != 0 ? stride : options_.gossip.landmark_stride)
        .IgnoreError();
  }
  return &p;
}

void Node::OnMemberChanged(const NodeId& id, Generation generation, gossip::MemberState state) {
  members_dirty_ = true;
  if (options_.limiter != nullptr) {
    options_.limiter->OnPeerChanged(
        id, generation,
        state == gossip::MemberState::kAlive || state == gossip::MemberState::kSuspect);
  }
  const bool present =
      state == gossip::MemberState::kAlive || state == gossip::MemberState::kSuspect;
  // Forwards to a dead member (or to a previous generation of it) would otherwise wait for the
  // peer client's own timeouts, long after gossip knew. A member that left is draining: it
  // finishes what it serves, so its forwards go on.
  if (state != gossip::MemberState::kLeft) {
    AbortForwards(id, generation, /*gone=*/state == gossip::MemberState::kDead);
  }
  if (present) {
    if (Peer* p = EnsurePeer(id, generation)) p->live = state == gossip::MemberState::kAlive;
    return;
  }
  std::optional<prefix::PeerSlot> s = peer_index_.FindSlot(id);
  if (!s) return;
  peer_index_.RemovePeer(id).IgnoreError();
  policy_->OnMemberReset(*s + 1);
  if (*s < peers_.size()) peers_[*s] = Peer{};
}

void Node::OnPeerUsage(const NodeId& id, Generation generation, const gossip::UsageRecord& usage) {
  if (options_.limiter != nullptr) {
    options_.limiter->OnPeerUsage(id, generation, usage, scheduler_.clock().Now());
  }
}

void Node::OnPeerCacheEvents(const NodeId& id, Generation generation,
                             std::span<const prefix::BlockEvent> events) {
  if (EnsurePeer(id, generation) == nullptr) return;
  peer_index_.ApplyEvents(id, generation, events).IgnoreError();
  if (options_.misbehave.claim_every_prefix) {
    for (const prefix::BlockEvent& e : events) {
      if (e.kind == prefix::BlockEvent::Kind::kAdded) borrowed_claims_.push_back(e);
    }
  }
}

void Node::OnPeerStride(const NodeId& id, Generation generation, uint32_t stride) {
  if (EnsurePeer(id, generation) == nullptr) return;
  peer_index_.SetStride(id, generation, stride).IgnoreError();
}

void Node::OnPeerCacheSnapshot(const NodeId& id, Generation generation,
                               std::span<const prefix::BlockEvent> live) {
  if (EnsurePeer(id, generation) == nullptr) return;
  std::vector<prefix::BlockKey> keys;
  keys.reserve(live.size());
  for (const auto& e : live) keys.push_back(e.key);
  peer_index_.ApplySnapshot(id, generation, keys).IgnoreError();
}

void Node::OnPeerLoad(const NodeId& id, Generation generation, const gossip::LoadReport& load) {
  Peer* p = EnsurePeer(id, generation);
  if (p == nullptr) return;
  p->has_load = true;
  p->load = load;
  p->load_at = scheduler_.clock().Now();
  NoteListedWork(load.backlog, p->load_at);
}

double Node::OwnEstimateMs(const Pending& p) const {
  const PeerRequest& request = p.request;
  // Priced like the self candidate the sender's policy compares against: this engine's own
  // queue-wait estimate (exact here, stale there) plus the prefill of what it lacks.
  const engine::EngineLoad l = engine_.Load();
  route::Candidate self;
  self.is_self = true;
  self.load.running = l.running_requests;
  self.load.running_context_tokens = l.kv_pinned_tokens;
  const route::PrefillCostModel& cost = options_.policy_options.cost;
  if (options_.price_by_measured_prefill) {
    self.cost_scale = cost.ScaleFromMeasured(l.prefill_ms_per_token, 1.0);
    self.decode_cost_scale = cost.DecodeScaleFromMeasured(l.decode_ms_per_token, l.running_requests,
                                                          double(l.kv_pinned_tokens), 0);
  }
  const double prompt = static_cast<double>(request.prompt.size());
  const double cached =
      static_cast<double>(engine_.CachedPrefixTokens(request.prompt, p.cache_namespace));
  return ToMillis(l.estimated_queue_wait) + route::PrefillPartMs(cost, self, prompt, cached);
}

void Node::Bounce(uint64_t token) {
  auto it = pending_.find(token);
  ResponseSink* sink = it->second.sink;
  const uint64_t client_id = it->second.client_id;
  pending_.erase(it);
  ++stats_.bounced;
  PostUnserved(token, client_id, sink, UnavailableError(std::string(kBouncedMessage)));
}

void Node::PostUnserved(uint64_t token, uint64_t client_id, ResponseSink* sink, Status status) {
  unserved_.emplace(token, Unserved{client_id, sink});
  std::weak_ptr<int> alive = alive_;
  scheduler_.Post([this, alive, token, status = std::move(status)] {
    if (alive.expired()) return;
    auto it = unserved_.find(token);
    if (it == unserved_.end()) return;  // cancelled meanwhile: its sink may be gone
    const Unserved u = it->second;
    unserved_.erase(it);
    u.sink->OnError(u.client_id, status, true);
  });
}

uint32_t Node::EstimatePeerCachedTokens(const NodeId& peer,
                                        std::span<const uint32_t> prompt) const {
  std::optional<prefix::PeerSlot> s = peer_index_.FindSlot(peer);
  if (!s) return 0;
  std::vector<prefix::BlockKey> keys = keyer_.Keys(prompt);
  std::vector<prefix::BlockKey> chain;
  gossip::LandmarkQuery(keys, 1, &chain);  // every block, as summary keys
  std::vector<uint32_t> out(peer_index_.slot_limit());
  if (!peer_index_.MatchStrided(chain, out).ok()) return 0;
  const uint64_t blocks = out[*s];
  return static_cast<uint32_t>(
      std::min<uint64_t>(blocks * keyer_.tokens_per_block(), prompt.size()));
}

void Node::Submit(PeerRequest request, ResponseSink* sink) {
  const uint64_t token = next_token_++;
  if (!request.forwarded) ++stats_.client_requests;
  if (request.prompt.empty() || request.max_output_tokens == 0) {
    ++stats_.rejected;
    PostUnserved(token, request.id, sink,
                 InvalidArgumentError("a request needs a non-empty prompt and max_tokens >= 1"));
    return;
  }
  Result<std::optional<ModelTarget>> target = ResolveModel(request.model);
  const bool wrong_model = request.forwarded && target.ok() && target->has_value() &&
                           !ServesTarget(options_.service, **target);
  if (!target.ok() || wrong_model) {
    // A forward for a model this node does not serve is refused unserved (its entry node routes
    // it elsewhere), never served by the wrong engine.
    if (request.forwarded) {
      ++stats_.forwards_wrong_model;
    } else {
      ++stats_.models_not_found;
    }
    ++stats_.failed;
    Status s = target.ok() ? NotFoundError("model '" + PrintableModelName(request.model) +
                                           "' is not served by this node")
                           : target.status();
    PostUnserved(token, request.id, sink, std::move(s));
    return;
  }
  Pending& p = pending_[token];
  p.client_id = request.id;
  p.target = std::move(*target);
  p.cache_namespace =
      p.target ? ModelNamespace(request.cache_namespace, *p.target) : request.cache_namespace;
  p.sink = sink;
  p.request = std::move(request);
  p.prompt_tokens = static_cast<uint32_t>(p.request.prompt.size());
  p.arrived = scheduler_.clock().Now();
  if (p.request.forwarded) {
    if (p.request.bounce_above_ms > 0 && !options_.misbehave.never_bounce) {
      p.own_estimate_ms = OwnEstimateMs(p);
      const double limit = p.request.bounce_above_ms * (1 + options_.bounce_margin_fraction) +
                           options_.bounce_margin_ms;
      if (p.own_estimate_ms > limit) {
        EmitServe(p, p.prompt_tokens, 0, /*bounced=*/true);
        Bounce(token);
        return;
      }
    }
    ServeHere(token);
    return;
  }
  prefix::AppendNamespacedKeys(keyer_, p.cache_namespace, p.request.prompt, &p.keys);
  Route(token);
}

bool Node::Cancel(uint64_t client_id, ResponseSink* sink) {
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    Pending& p = it->second;
    if (p.client_id != client_id || p.sink != sink) continue;
    const uint64_t token = it->first;
    const route::Slot slot = p.slot;
    UntrackForward(token, p);
    EndAttempt(it->second, "cancelled");
    EmitRoute(it->second, "cancelled by the client");
    pending_.erase(it);
    ++stats_.cancelled;
    // Erased first: the forward's late OnError (if any) then finds nothing to retry.
    if (slot == 0) {
      engine_.Cancel(token);
    } else {
      if (slot - 1 < peers_.size()) trust_.Abandon(peers_[slot - 1].id, token);
      peer_client_.Cancel(token);
    }
    return true;
  }
  // Ended unserved, its OnError still on its way: dropped (counted already as bounced or failed).
  for (auto it = unserved_.begin(); it != unserved_.end(); ++it) {
    if (it->second.client_id != client_id || it->second.sink != sink) continue;
    unserved_.erase(it);
    return true;
  }
  return false;
}

void Node::Route(uint64_t token) {
  Pending& p = pending_.at(token);
  if (members_dirty_) RefreshMembers();
  // Overdue forwards are the first sign of a member that lies about its load: look often.
  const TimePoint now = scheduler_.clock().Now();
  if (now - trust_checked_ >= kTrustCheckInterval) {
    trust_.Expire(now);
    trust_checked_ = now;
  }
  BuildCandidates(p, p.request.prompt);
  route::RouteRequest rr;
  rr.request_id = token;
  rr.now = scheduler_.clock().Now();
  rr.prompt_tokens = static_cast<uint32_t>(p.request.prompt.size());
  rr.key_chain = p.keys;
  rr.block_tokens = static_cast<uint32_t>(keyer_.tokens_per_block());
  rr.entry_slot = 0;
  route::Decision d = policy_->Choose(rr, candidates_, rng_);
  if (d.slot != 0 && (d.slot - 1 >= peers_.size() || peers_[d.slot - 1].id.empty())) d.slot = 0;
  if (d.slot == 0 && !ServesHere(p)) {
    // The policy fell back to the entry node, which does not serve the model: the least loaded
    // usable member that does instead (in slot order on a tie).
    const route::Candidate* best = nullptr;
    for (const route::Candidate& c : candidates_) {
      if (!c.usable || c.is_self) continue;
      if (best == nullptr ||
          c.load.queued + c.load.running < best->load.queued + best->load.running) {
        best = &c;
      }
    }
    if (best == nullptr) {
      const std::string name = PrintableModelName(p.target->model);
      if (candidates_.empty()) {
        ++stats_.models_not_found;
        FailUnserved(token, NotFoundError("model '" + name +
                                          "' is not served by any live member of the pool"));
      } else {
        FailUnserved(token, UnavailableError("every member serving model '" + name +
                                             "' failed to take the request"));
      }
      return;
    }
    d.slot = best->slot;
    d.estimated_cached_tokens = best->cached_tokens;
  }
  const route::Slot slot = d.slot;
  RecordAttempt(p, d);
  policy_->OnSent(slot, rr);
  p.slot = slot;
  p.estimated_cached = d.estimated_cached_tokens;
  p.sent_at = scheduler_.clock().Now();
  p.last_heard = p.sent_at;
  p.claimed_ttft_ms = d.claimed_ttft_ms;
  p.claimed_prefill_ms = d.claimed_prefill_ms;
  for (const route::Candidate& c : candidates_) {
    if (c.slot == slot) p.priced_as = c;
  }
  if (slot == 0) {
    ServeHere(token);
    return;
  }
  ++p.attempts;
  ++stats_.forward_attempts;
  // The work it puts there is its whole prompt's prefill, whatever the member claims to hold.
  trust_.Sent(peers_[slot - 1].id, token, p.sent_at, p.claimed_ttft_ms,
              route::PrefillPartMs(options_.policy_options.cost, p.priced_as,
                                   double(p.request.prompt.size()), 0));
  PeerRequest copy;
  copy.id = token;
  copy.prompt = p.request.prompt;
  copy.max_output_tokens = p.request.max_output_tokens;
  copy.scripted_output = p.request.scripted_output;
  copy.forwarded = true;
  copy.target = peers_[slot - 1].id;
  copy.origin = options_.id;
  copy.origin_request = p.client_id;
  // The last forward allowed must be served: a bounce then would only land here anyway.
  if (options_.bounce_margin_ms >= 0 && d.fallback_ttft_ms > 0 &&
      p.bounces < options_.max_bounces && p.attempts - p.bounces < options_.max_forward_attempts) {
    copy.bounce_above_ms = d.fallback_ttft_ms;
  }
  if (options_.forward_deadline_factor > 0 && d.expected_ttft_ms > 0) {
    copy.first_token_within_ms = std::max(ToMillis(options_.forward_deadline_floor),
                                          options_.forward_deadline_factor * d.expected_ttft_ms);
  }
  copy.api_path = p.request.api_path;
  copy.api_body = p.request.api_body;
  copy.cache_namespace = p.request.cache_namespace;  // the receiver mixes the model in again
  if (p.target) copy.model = p.target->adapter.empty() ? p.target->model : p.target->adapter;
  copy.tenant = p.request.tenant;
  TrackForward(token, p, peers_[slot - 1]);
  peer_client_.Forward(peers_[slot - 1].address, std::move(copy), forward_sink_.get());
}

void Node::ServeHere(uint64_t token) {
  Pending& p = pending_.at(token);
  p.slot = 0;
  p.submitted = scheduler_.clock().Now();
  p.queued = Duration{-1};
  engine::EngineRequest er;
  er.id = token;
  er.prompt = std::move(p.request.prompt);
  er.max_output_tokens = p.request.max_output_tokens;
  er.scripted_output = std::move(p.request.scripted_output);
  er.api_path = p.request.api_path;
  er.api_body = p.request.api_body;
  er.cache_namespace = p.cache_namespace;
  if (p.target) {
    er.model = p.target->model;
    er.adapter = p.target->adapter;
  }
  // A forwarded copy streams back to its entry node, whose deadline is the first token.
  er.stream = p.request.stream || p.request.forwarded;
  Status s = engine_.Submit(std::move(er), this);
  if (s.ok()) return;
  ++stats_.failed;
  std::weak_ptr<int> alive = alive_;
  scheduler_.Post([this, alive, token, s] {
    if (alive.expired()) return;
    auto it = pending_.find(token);
    if (it == pending_.end()) return;
    ResponseSink* sink = it->second.sink;
    const uint64_t client_id = it->second.client_id;
    EmitRoute(it->second, s.ToString());
    pending_.erase(it);
    sink->OnError(client_id, s, true);
  });
}

uint32_t Node::InNodeTokens(uint32_t engine_tokens, uint32_t engine_prompt_tokens,
                            const Pending& p) {
  const size_t prompt = p.prompt_tokens;
  if (engine_prompt_tokens == 0 || engine_prompt_tokens == prompt) {
    return static_cast<uint32_t>(std::min<size_t>(engine_tokens, prompt));
  }
  const double scaled = double(engine_tokens) * double(prompt) / double(engine_prompt_tokens);
  return static_cast<uint32_t>(std::min(scaled, double(prompt)));
}

void Node::OnAdmitted(engine::RequestId id, const engine::Admission& admission) {
  auto it = pending_.find(id);
  if (it != pending_.end()) it->second.queued = admission.queued;
}

void Node::OnFirstToken(engine::RequestId id, const engine::FirstToken& first) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Pending& p = it->second;
  EmitServe(p, first.prompt_tokens, first.cached_tokens, /*bounced=*/false);
  ++stats_.served;
  stats_.served_prompt_tokens += first.prompt_tokens;
  stats_.served_cached_tokens += first.cached_tokens;
  p.first_sent = true;
  if (!p.request.forwarded) {
    route::Outcome o;
    o.slot = 0;
    o.request_id = id;
    o.now = scheduler_.clock().Now();
    o.prompt_tokens = first.prompt_tokens;
    o.estimated_cached_tokens = p.estimated_cached;
    o.actual_cached_tokens = InNodeTokens(first.cached_tokens, first.prompt_tokens, p);
    o.ttft = o.now - p.arrived;
    policy_->OnOutcome(o);
    trust_.Record(options_.id, o.now, p.estimated_cached, o.actual_cached_tokens, p.claimed_ttft_ms,
                  ToMillis(o.now - p.sent_at));
    ++stats_.served_local;
    stats_.estimated_cached_tokens += p.estimated_cached;
    stats_.actual_cached_tokens += o.actual_cached_tokens;
    RecordFirstToken(p, options_.id, o.actual_cached_tokens);
  }
  p.sink->OnFirstToken(p.client_id,
                       PeerFirstToken{first.prompt_tokens, first.cached_tokens, options_.id});
  if (first.token) {
    const uint32_t token = *first.token;
    p.sink->OnOutput(p.client_id, PeerOutput{std::span<const uint32_t>(&token, 1), {}});
  }
}

void Node::OnTokens(engine::RequestId id, std::span<const engine::TokenId> tokens) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  it->second.sink->OnOutput(it->second.client_id, PeerOutput{tokens, {}});
}

void Node::OnComplete(engine::RequestId id, const engine::Usage& usage) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  ResponseSink* sink = it->second.sink;
  const uint64_t client_id = it->second.client_id;
  EmitRoute(it->second, "");
  pending_.erase(it);
  sink->OnComplete(client_id,
                   PeerUsage{usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens});
}

void Node::OnError(engine::RequestId id, const Status& status) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  ResponseSink* sink = it->second.sink;
  const uint64_t client_id = it->second.client_id;
  const bool before = !it->second.first_sent;
  EmitRoute(it->second, status.ToString());
  pending_.erase(it);
  ++stats_.failed;
  sink->OnError(client_id, status, before);
}

void Node::OnForwardFirst(uint64_t token, const PeerFirstToken& first) {
  auto it = pending_.find(token);
  if (it == pending_.end() || it->second.slot == 0) return;
  Pending& p = it->second;
  ++stats_.forwarded_out;
  p.first_sent = true;
  p.last_heard = scheduler_.clock().Now();
  route::Outcome o;
  o.slot = p.slot;
  o.request_id = token;
  o.now = scheduler_.clock().Now();
  o.prompt_tokens = first.prompt_tokens;
  o.estimated_cached_tokens = p.estimated_cached;
  o.actual_cached_tokens = InNodeTokens(first.cached_tokens, first.prompt_tokens, p);
  o.ttft = o.now - p.arrived;
  policy_->OnOutcome(o);
  if (p.slot - 1 < peers_.size() && !peers_[p.slot - 1].id.empty()) {
    // Its time is judged against what its claims promised for the cache it delivered: a cache
    // claim that did not hold is cache_trust's to judge, not a late answer.
    double expected = p.claimed_ttft_ms;
    if (p.claimed_prefill_ms >= 0 && expected >= 0) {
      expected += route::PrefillPartMs(options_.policy_options.cost, p.priced_as,
                                       double(o.prompt_tokens), double(o.actual_cached_tokens)) -
                  p.claimed_prefill_ms;
    }
    trust_.Record(peers_[p.slot - 1].id, o.now, p.estimated_cached, o.actual_cached_tokens,
                  expected, ToMillis(o.now - p.sent_at), token);
  }
  stats_.estimated_cached_tokens += p.estimated_cached;
  stats_.actual_cached_tokens += o.actual_cached_tokens;
  RecordFirstToken(p, first.served_by, o.actual_cached_tokens);
  p.sink->OnFirstToken(p.client_id, first);
}

void Node::OnText(engine::RequestId id, std::string_view text) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  it->second.sink->OnOutput(it->second.client_id, PeerOutput{{}, text});
}

void Node::OnForwardOutput(uint64_t token, const PeerOutput& output) {
  auto it = pending_.find(token);
  if (it == pending_.end() || it->second.slot == 0) return;
  it->second.last_heard = scheduler_.clock().Now();
  it->second.sink->OnOutput(it->second.client_id, output);
}

void Node::OnForwardComplete(uint64_t token, const PeerUsage& usage) {
  auto it = pending_.find(token);
  if (it == pending_.end() || it->second.slot == 0) return;
  UntrackForward(token, it->second);
  ResponseSink* sink = it->second.sink;
  const uint64_t client_id = it->second.client_id;
  EmitRoute(it->second, "");
  pending_.erase(it);
  sink->OnComplete(client_id, usage);
}

void Node::NoteForwardGivenUp(const Pending& p, uint64_t token, const Status& status) {
  const NodeId& member = peers_[p.slot - 1].id;
  if (status.code() != StatusCode::kDeadlineExceeded) {
    trust_.Abandon(member, token);
    return;
  }
  // No first token within the forward's deadline, a multiple of what the member's claims
  // promised: a time sample as late as the wait (a lower bound of the truth). Dropped instead,
  // the evidence would vanish with the forward, and a member that claims an idle engine while
  // its queue grows would draw the next request as well.
  const TimePoint now = scheduler_.clock().Now();
  trust_.Record(member, now, 0, 0, p.claimed_ttft_ms, ToMillis(now - p.sent_at), token);
}

void Node::OnForwardError(uint64_t token, const Status& status, bool before_first_token) {
  auto it = pending_.find(token);
  if (it == pending_.end() || it->second.slot == 0) return;
  Pending& p = it->second;
  UntrackForward(token, p);
  // A client that reads one JSON body has seen nothing until the answer is complete, so a peer
  // failing mid-answer costs a retry too: the output so far is discarded.
  const bool unseen = !p.request.stream;
  if ((before_first_token && !p.first_sent) || unseen) {
    if (p.first_sent) {  // the stats keep the void attempt: they only grow
      p.first_sent = false;
      p.sink->OnRestart(p.client_id);
    }
    if (status.message().find(kBouncedMessage) != std::string::npos) {
      ++p.bounces;
      ++stats_.forwards_bounced;
      EndAttempt(p, "bounced");
    } else {
      ++stats_.forward_failures;
      EndAttempt(p, "failed");
      // The peer refused or failed it: the policy stops counting it in the peer's queue. (A
      // bounce stays counted: the peer sent it back because its queue was long.)
      policy_->OnAbandoned(p.slot, token);
    }
    if (p.slot - 1 < peers_.size()) NoteForwardGivenUp(p, token, status);
    p.excluded.push_back(p.slot);
    // A node that does not serve the model tries every member that does before it gives up.
    if (p.attempts - p.bounces < options_.max_forward_attempts || !ServesHere(p)) {
      Route(token);
    } else {
      // Out of forward attempts: served here. The record says so in an attempt of its own (else
      // the last failed forward would be taken for the one that served). No candidates: no new
      // view was taken (candidates_ is another routing's, and may name members gone since).
      if (p.record) {
        RouteAttempt here;
        here.at_ms = ToMillis(scheduler_.clock().Now() - p.arrived);
        here.chosen = options_.id;
        here.reason = std::string(route::ReasonName(route::Reason::kNoCandidate));
        p.record->attempts.push_back(std::move(here));
      }
      ServeHere(token);
    }
    return;
  }
  ResponseSink* sink = p.sink;
  const uint64_t client_id = p.client_id;
  EmitRoute(p, status.ToString());
  pending_.erase(it);
  ++stats_.failed;
  // The peer's own message names internal addresses; the host logs it, the client gets none.
  sink->OnError(client_id, Status(status.code(), "the node serving this request failed mid-answer"),
                false);
}

}  // namespace hearsay::node
