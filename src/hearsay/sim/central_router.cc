#include "hearsay/sim/central_router.h"

#include <algorithm>
#include <utility>

#include "hearsay/route/registry.h"

namespace hearsay::sim {

// Receives the engines' events for the tier's requests (one delay after they happened) and
// passes them on to the client.
class RouterTier::Sink final : public ResponseSink {
 public:
  explicit Sink(RouterTier& tier) : t_(tier) {}
  void OnFirstToken(uint64_t id, const PeerFirstToken& first) override {
    auto it = t_.in_flight_.find(id);
    if (it == t_.in_flight_.end()) return;
    ResponseSink* client = it->second.client;
    t_.FirstToken(id, first);
    client->OnFirstToken(id, first);
  }
  void OnComplete(uint64_t id, const PeerUsage& usage) override {
    auto it = t_.in_flight_.find(id);
    if (it == t_.in_flight_.end()) return;
    ResponseSink* client = it->second.client;
    t_.Finished(id);
    client->OnComplete(id, usage);
  }
  void OnError(uint64_t id, const Status& status, bool before_first_token) override {
    auto it = t_.in_flight_.find(id);
    if (it == t_.in_flight_.end()) return;
    ResponseSink* client = it->second.client;
    t_.Finished(id);
    client->OnError(id, status, before_first_token);
  }

 private:
  RouterTier& t_;
};

Result<std::unique_ptr<RouterTier>> RouterTier::Create(SimCluster& cluster,
                                                       const RouterTierOptions& options) {
  if (options.replicas < 1) return InvalidArgumentError("a router tier needs >= 1 replica");
  if (options.scrape_interval <= Duration::zero()) {
    return InvalidArgumentError("the scrape interval must be > 0");
  }
  std::unique_ptr<RouterTier> t(new RouterTier(cluster, options));
  Rng seeds(options.seed * 0x2545f4914f6cdd1dULL + 17);
  for (int r = 0; r < options.replicas; ++r) {
    HEARSAY_ASSIGN_OR_RETURN(std::unique_ptr<route::Policy> p,
                             route::MakePolicy(options.policy, options.policy_options));
    t->replicas_.push_back({std::move(p), std::make_unique<Rng>(seeds.Fork())});
  }
  return t;
}

RouterTier::RouterTier(SimCluster& cluster, const RouterTierOptions& options)
    : cluster_(cluster),
      options_(options),
      delay_rng_(options.seed ^ 0x7f4a7c15u),
      sink_(std::make_unique<Sink>(*this)),
      index_(static_cast<size_t>(cluster.size())),
      scraped_(static_cast<size_t>(cluster.size())),
      scraped_at_(static_cast<size_t>(cluster.size())) {
  for (int i = 0; i < cluster.size(); ++i) names_.push_back(SimCluster::Name(i));
}

RouterTier::~RouterTier() = default;

Duration RouterTier::Delay() {
  // The cluster's link model: uniform in [d, d × (1 + jitter)].
  const SimClusterOptions& o = cluster_.options();
  return FromMillis(o.delay_ms * (1 + o.delay_jitter * delay_rng_.UniformDouble()));
}

void RouterTier::OnCacheEvents(int node, std::span<const prefix::BlockEvent> events) {
  std::vector<prefix::BlockEvent> copy(events.begin(), events.end());
  cluster_.scheduler().RunAfter(Delay(), [this, node, copy = std::move(copy)] {
    auto& held = index_[node];
    for (const prefix::BlockEvent& e : copy) {
      if (e.kind == prefix::BlockEvent::Kind::kAdded) {
        held.insert(e.key);
      } else {
        held.erase(e.key);
      }
    }
  });
}

void RouterTier::Start() { Scrape(); }

void RouterTier::Scrape() {
  for (int i = 0; i < cluster_.size(); ++i) {
    if (!cluster_.up(i)) continue;
    const engine::EngineLoad load = cluster_.engine(i).Load();
    const TimePoint at = cluster_.scheduler().Now();
    cluster_.scheduler().RunAfter(Delay(), [this, i, load, at] {
      if (at < scraped_at_[i]) return;
      scraped_[i] = load;
      scraped_at_[i] = at;
    });
  }
  cluster_.scheduler().RunAfter(options_.scrape_interval, [this] { Scrape(); });
}

uint32_t RouterTier::IndexMatch(int node, std::span<const prefix::BlockKey> chain) const {
  const auto& held = index_[node];
  uint32_t n = 0;
  for (prefix::BlockKey k : chain) {
    if (!held.contains(k)) break;
    ++n;
  }
  return n;
}

template <typename F>
void RouterTier::Broadcast(int except, F fn) {
  if (!options_.replica_sync) return;
  for (int r = 0; r < replicas(); ++r) {
    if (r == except) continue;
    cluster_.scheduler().RunAfter(Delay(), [this, r, fn] { fn(*replicas_[r].policy); });
  }
}

void RouterTier::Submit(int replica, PeerRequest request, ResponseSink* sink) {
  replica = replica % replicas();
  Replica& rep = replicas_[replica];
  const TimePoint now = cluster_.scheduler().Now();
  chain_.clear();
  cluster_.keyer().AppendKeys(request.prompt, &chain_);
  const uint32_t block = static_cast<uint32_t>(cluster_.keyer().tokens_per_block());
  route::RouteRequest rr;
  rr.request_id = request.id;
  rr.now = now;
  rr.prompt_tokens = static_cast<uint32_t>(request.prompt.size());
  rr.key_chain = chain_;
  rr.block_tokens = block;
  rr.entry_slot = route::kNoSlot;
  candidates_.clear();
  const Duration d = FromMillis(cluster_.options().delay_ms);
  for (int i = 0; i < cluster_.size(); ++i) {
    route::Candidate c;
    c.slot = static_cast<route::Slot>(i);
    c.node_id = names_[i];
    c.usable = cluster_.up(i);
    c.one_way_delay = d;
    c.cached_tokens = std::min(rr.prompt_tokens, IndexMatch(i, chain_) * block);
    c.cache_exact = true;
    const engine::EngineLoad& l = scraped_[i];
    c.load.queued = l.waiting_requests;
    c.load.running = l.running_requests;
    c.load.queued_prefill_tokens = l.waiting_prefill_tokens;
    c.load.running_context_tokens = l.kv_pinned_tokens;
    c.load.kv_used_tokens = l.kv_pinned_tokens;
    c.load.kv_capacity_tokens = l.kv_capacity_tokens;
    c.load.age = now - scraped_at_[i];
    candidates_.push_back(c);
  }
  route::Decision decision = rep.policy->Choose(rr, candidates_, *rep.rng);
  int to = static_cast<int>(decision.slot);
  if (decision.slot == route::kNoSlot || to >= cluster_.size() || !cluster_.up(to)) {
    // No usable engine was chosen (every engine is down, or a policy fell back to "self", which a
    // router does not have): the first live engine.
    to = 0;
    while (to < cluster_.size() - 1 && !cluster_.up(to)) ++to;
  }
  rep.policy->OnSent(static_cast<route::Slot>(to), rr);
  InFlight f;
  f.replica = replica;
  f.slot = static_cast<route::Slot>(to);
  f.client = sink;
  f.prompt_tokens = rr.prompt_tokens;
  f.estimated_cached = decision.estimated_cached_tokens;
  in_flight_[request.id] = f;
  if (options_.replica_sync) {
    auto keys = std::make_shared<std::vector<prefix::BlockKey>>(chain_);
    route::RouteRequest copy = rr;
    const route::Slot slot = f.slot;
    const uint32_t cached = f.estimated_cached;
    Broadcast(replica, [keys, copy, slot, cached](route::Policy& p) {
      route::RouteRequest r = copy;
      r.key_chain = *keys;
      p.OnPeerDecision(slot, r, cached);
    });
  }
  // Decision records at the serving node name the router replica and the client's request id.
  request.origin = "router" + std::to_string(replica);
  request.origin_request = request.id;
  cluster_.SubmitFromRouter(to, std::move(request), sink_.get());
}

void RouterTier::FirstToken(uint64_t id, const PeerFirstToken& first) {
  InFlight& f = in_flight_.at(id);
  route::Outcome o;
  o.slot = f.slot;
  o.request_id = id;
  o.now = cluster_.scheduler().Now();
  o.prompt_tokens = first.prompt_tokens;
  o.estimated_cached_tokens = f.estimated_cached;
  o.actual_cached_tokens = first.cached_tokens;
  replicas_[f.replica].policy->OnOutcome(o);
  Broadcast(f.replica, [o](route::Policy& p) { p.OnOutcome(o); });
}

void RouterTier::Finished(uint64_t id) {
  auto it = in_flight_.find(id);
  const InFlight f = it->second;
  in_flight_.erase(it);
  replicas_[f.replica].policy->OnFinished(f.slot, id);
  const route::Slot slot = f.slot;
  Broadcast(f.replica, [slot, id](route::Policy& p) { p.OnFinished(slot, id); });
}

}  // namespace hearsay::sim
