#include "hearsay/sim/sim_cluster.h"

#include <algorithm>
#include <utility>

#include "hearsay/node/router_cost.h"

namespace hearsay::sim {

class SimCluster::Client final : public PeerClient {
 public:
  Client(SimCluster& cluster, int index) : cluster_(cluster), index_(index) {}
  void Forward(const Address& to, PeerRequest request, ResponseSink* sink) override {
    cluster_.Forward(index_, to, std::move(request), sink);
  }

 private:
  SimCluster& cluster_;
  int index_;
};

// The engine a node sees when cache events are tapped: the SimEngine, whose cache events are
// also published to the cluster's cache_events callback as soon as anyone drains them.
class SimCluster::TapEngine final : public engine::Engine {
 public:
  TapEngine(SimCluster& cluster, int index, engine::SimEngine& engine)
      : c_(cluster), index_(index), e_(engine) {}
  Status Submit(engine::EngineRequest request, engine::EngineObserver* observer) override {
    return e_.Submit(std::move(request), observer);
  }
  bool Cancel(engine::RequestId id) override { return e_.Cancel(id); }
  engine::EngineLoad Load() const override { return e_.Load(); }
  size_t CachedPrefixTokens(std::span<const engine::TokenId> prompt) const override {
    return e_.CachedPrefixTokens(prompt);
  }
  void DrainCacheEvents(std::vector<prefix::BlockEvent>& out) override {
    Pump();
    out.insert(out.end(), pending_.begin(), pending_.end());
    pending_.clear();
  }
  void AppendCacheSnapshot(std::vector<prefix::BlockEvent>& out) const override {
    e_.AppendCacheSnapshot(out);
  }
  // Publishes the engine's new events and keeps them for the node's next drain.
  void Pump() {
    fresh_.clear();
    e_.DrainCacheEvents(fresh_);
    if (fresh_.empty()) return;
    pending_.insert(pending_.end(), fresh_.begin(), fresh_.end());
    c_.options_.cache_events(index_, fresh_);
  }

 private:
  SimCluster& c_;
  int index_;
  engine::SimEngine& e_;
  std::vector<prefix::BlockEvent> pending_;
  std::vector<prefix::BlockEvent> fresh_;
};

// Receives a target node's events for a relayed request (id = relay id) and sends them back.
class SimCluster::RelaySink final : public ResponseSink {
 public:
  explicit RelaySink(SimCluster& cluster) : c_(cluster) {}
  void OnFirstToken(uint64_t rid, const PeerFirstToken& first) override {
    auto it = c_.relays_.find(rid);
    if (it == c_.relays_.end() || it->second.done) return;
    it->second.first_sent = true;
    c_.PumpCacheEvents(it->second.to);
    c_.Back(rid, [first](Relay& r) { r.sink->OnFirstToken(r.origin_id, first); });
    it->second.first_at = it->second.back_at;
  }
  void OnComplete(uint64_t rid, const PeerUsage& usage) override {
    auto it = c_.relays_.find(rid);
    if (it == c_.relays_.end() || it->second.done) return;
    it->second.done = true;
    c_.PumpCacheEvents(it->second.to);
    c_.Back(rid, [usage](Relay& r) { r.sink->OnComplete(r.origin_id, usage); });
  }
  void OnError(uint64_t rid, const Status& status, bool before_first_token) override {
    auto it = c_.relays_.find(rid);
    if (it == c_.relays_.end() || it->second.done) return;
    it->second.done = true;
    c_.Back(rid, [status, before_first_token](Relay& r) {
      r.sink->OnError(r.origin_id, status, before_first_token);
    });
  }

 private:
  SimCluster& c_;
};

namespace {
simenv::SimNetwork::Options NetOptions(const SimClusterOptions& o) {
  simenv::SimNetwork::Options n;
  n.seed = o.seed * 0x9e3779b97f4a7c15ULL + 7;
  const Duration d = FromMillis(o.delay_ms);
  n.defaults.latency =
      simenv::LatencyModel::Uniform(d, d + FromMillis(o.delay_ms * o.delay_jitter));
  n.defaults.loss = o.loss;
  return n;
}
}  // namespace

Result<std::unique_ptr<SimCluster>> SimCluster::Create(const SimClusterOptions& options) {
  if (options.nodes < 1) return InvalidArgumentError("a cluster needs at least one node");
  if (!(options.loss >= 0 && options.loss < 1))
    return InvalidArgumentError("loss must be in [0, 1)");
  prefix::BlockKeyerOptions ko;
  ko.tokens_per_block = options.block_tokens;
  HEARSAY_ASSIGN_OR_RETURN(
      prefix::BlockKeyer keyer,
      prefix::BlockKeyer::Create("hearsay-simulated-cluster-secret", "sim-model", "", ko));
  std::unique_ptr<SimCluster> c(new SimCluster(options, keyer));
  for (int i = 0; i < options.nodes; ++i) {
    Member& m = c->members_[i];
    m.proxy = std::make_unique<Proxy>();
    m.client = std::make_unique<Client>(*c, i);
    HEARSAY_ASSIGN_OR_RETURN(Transport * t, c->net_.Attach(Name(i), m.proxy.get()));
    HEARSAY_RETURN_IF_ERROR(c->Build(i, *t));
  }
  return c;
}

SimCluster::SimCluster(const SimClusterOptions& options, prefix::BlockKeyer keyer)
    : options_(options),
      net_(scheduler_, NetOptions(options)),
      rng_(options.seed),
      delay_rng_(options.seed ^ 0x5bd1e995u),
      keyer_(keyer),
      relay_sink_(std::make_unique<RelaySink>(*this)) {
  for (int i = 0; i < std::min(2, options.nodes); ++i) seeds_.push_back(Name(i));
  members_.resize(static_cast<size_t>(options.nodes));
}

SimCluster::~SimCluster() {
  for (auto& m : members_) {
    if (m.proxy) m.proxy->node = nullptr;
    m.node.reset();
    m.tap.reset();
    m.engine.reset();
    m.sched.reset();
  }
}

std::string SimCluster::Name(int i) {
  std::string s = std::to_string(i);
  s.insert(s.begin(), 'n');  // not "n" + ...: GCC 12 warns falsely (-Wrestrict) on that
  return s;
}

int SimCluster::IndexOf(const Address& address) const {
  if (address.size() < 2 || address[0] != 'n') return -1;
  int v = 0;
  for (size_t k = 1; k < address.size(); ++k) {
    if (address[k] < '0' || address[k] > '9') return -1;
    v = v * 10 + (address[k] - '0');
    if (v >= size()) return -1;
  }
  return v;
}

Status SimCluster::Build(int i, Transport& transport) {
  Member& m = members_[i];
  m.rng = std::make_unique<Rng>(rng_.Fork());
  m.sched = std::make_unique<simenv::ScopedScheduler>(scheduler_);
  engine::SimEngineOptions eo = options_.engine;
  const bool own_cost = static_cast<size_t>(i) < options_.node_costs.size();
  if (own_cost) eo.cost = options_.node_costs[static_cast<size_t>(i)];
  eo.seed = m.rng->NextU64();
  HEARSAY_ASSIGN_OR_RETURN(m.engine, engine::SimEngine::Create(*m.sched, eo, keyer_));
  node::NodeOptions no;
  no.id = Name(i);
  no.generation = m.generation;
  no.address = Name(i);
  no.gossip = options_.gossip;
  no.policy = options_.policy;
  no.policy_options = options_.policy_options;
  if (own_cost) no.policy_options.cost = node::RouterCostModel(eo.cost);
  no.price_by_measured_prefill = options_.price_by_measured_prefill;
  if (static_cast<size_t>(i) < options_.node_services.size()) {
    no.service = options_.node_services[static_cast<size_t>(i)];
  }
  no.publish_interval = options_.publish_interval;
  no.default_one_way_delay = FromMillis(options_.delay_ms);
  no.max_peers = static_cast<size_t>(std::max(options_.nodes, 2));
  no.trust.enabled = options_.trust;
  no.shared_backlog.trimmed_listers = options_.trimmed_listers;
  no.misbehave.slander = i >= options_.liars && i < options_.liars + options_.slanderers;
  no.forward_deadline_factor = options_.forward_deadline_factor;
  if (i < options_.liars) {
    no.misbehave.claim_every_prefix = true;
    no.misbehave.claim_idle = true;
    no.misbehave.never_bounce = true;
  }
  engine::Engine* engine = m.engine.get();
  if (options_.cache_events) {
    m.tap = std::make_unique<TapEngine>(*this, i, *m.engine);
    engine = m.tap.get();
  }
  HEARSAY_ASSIGN_OR_RETURN(m.node, node::Node::Create(std::move(no), *engine, keyer_, *m.sched,
                                                      *m.rng, transport, *m.client));
  if (options_.policy == "oracle") m.node->SetExactView(this);
  m.node->SetRecorder(options_.recorder);
  m.proxy->node = m.node.get();
  m.up = true;
  return OkStatus();
}

void SimCluster::StartAll() {
  for (auto& m : members_) {
    if (m.up) m.node->Start(seeds_);
  }
}

void SimCluster::Crash(int i) {
  Member& m = members_[i];
  if (!m.up) return;
  net_.Crash(Name(i)).IgnoreError();
  m.sched->CancelAll();
  m.proxy->node = nullptr;
  m.node.reset();
  m.tap.reset();
  m.engine.reset();
  m.up = false;
  // Forwards served by the crashed node fail back to their entry nodes.
  for (auto& [rid, r] : relays_) {
    if (r.to != i || r.done || !r.delivered) continue;
    r.done = true;
    const bool before = !r.first_sent;
    Back(rid, [before](Relay& x) {
      x.sink->OnError(x.origin_id, UnavailableError("peer crashed"), before);
    });
  }
}

Status SimCluster::Restart(int i) {
  Member& m = members_[i];
  if (m.up) return FailedPreconditionError("node is up");
  ++m.generation;
  HEARSAY_ASSIGN_OR_RETURN(Transport * t, net_.Restart(Name(i), m.proxy.get()));
  HEARSAY_RETURN_IF_ERROR(Build(i, *t));
  m.node->Start(seeds_);
  return OkStatus();
}

uint64_t SimCluster::gossip_bytes_sent() const { return net_.TotalCounters().bytes_sent; }

std::optional<uint32_t> SimCluster::CachedTokens(const NodeId& peer,
                                                 std::span<const uint32_t> prompt,
                                                 uint64_t ns) const {
  const int i = IndexOf(peer);
  if (i < 0 || !members_[i].up) return std::nullopt;
  return static_cast<uint32_t>(members_[i].engine->CachedPrefixTokens(prompt, ns));
}

std::optional<engine::EngineLoad> SimCluster::Load(const NodeId& peer) const {
  const int i = IndexOf(peer);
  if (i < 0 || !members_[i].up) return std::nullopt;
  return members_[i].engine->Load();
}

Duration SimCluster::SampleDelay() {
  const double d = options_.delay_ms * (1 + options_.delay_jitter * delay_rng_.UniformDouble());
  return FromMillis(d);
}

template <typename F>
void SimCluster::Back(uint64_t rid, F fn) {
  auto it = relays_.find(rid);
  if (it == relays_.end()) return;
  Relay& r = it->second;
  // The answer streams over one connection: events arrive in the order they were sent.
  const TimePoint at = std::max(scheduler_.Now() + SampleDelay(), r.back_at);
  r.back_at = at;
  const bool terminal = r.done;
  scheduler_.RunAfter(at - scheduler_.Now(), [this, rid, fn, terminal] {
    auto it = relays_.find(rid);
    if (it == relays_.end()) return;
    Relay& x = it->second;
    if (!x.given_up &&
        (x.from < 0 || (members_[x.from].up && members_[x.from].generation == x.from_generation))) {
      fn(x);
    }
    if (terminal) relays_.erase(it);
  });
}

void SimCluster::PumpCacheEvents(int i) {
  if (i >= 0 && i < size() && members_[i].tap) members_[i].tap->Pump();
}

void SimCluster::SubmitFromRouter(int to, PeerRequest request, ResponseSink* sink) {
  request.forwarded = true;
  request.target = Name(to);
  Forward(-1, Name(to), std::move(request), sink);
}

void SimCluster::Forward(int from, const Address& to, PeerRequest request, ResponseSink* sink) {
  const uint64_t rid = next_relay_++;
  Relay& r = relays_[rid];
  r.from = from;
  r.from_generation = from < 0 ? 0 : members_[from].generation;
  r.origin_id = request.id;
  r.sink = sink;
  r.to = IndexOf(to);
  if (r.to < 0 || !members_[r.to].up) {
    // Connection refused: the error comes back after a round trip.
    r.done = true;
    r.back_at = scheduler_.Now() + SampleDelay();  // the connection attempt's trip out
    Back(rid, [](Relay& x) {
      x.sink->OnError(x.origin_id, UnavailableError("peer unreachable"), true);
    });
    return;
  }
  r.to_generation = members_[r.to].generation;
  request.id = rid;
  if (request.first_token_within_ms > 0 && from >= 0) {
    scheduler_.RunAfter(FromMillis(request.first_token_within_ms),
                        [this, rid] { ForwardDeadline(rid); });
  }
  scheduler_.RunAfter(SampleDelay(), [this, rid, req = std::move(request)]() mutable {
    auto it = relays_.find(rid);
    if (it == relays_.end()) return;
    Relay& x = it->second;
    const Member& target = members_[x.to];
    if (!target.up || target.generation != x.to_generation) {
      x.done = true;
      Back(rid, [](Relay& y) {
        y.sink->OnError(y.origin_id, UnavailableError("peer unreachable"), true);
      });
      return;
    }
    x.delivered = true;
    target.node->Submit(std::move(req), relay_sink_.get());
  });
}

void SimCluster::ForwardDeadline(uint64_t rid) {
  auto it = relays_.find(rid);
  if (it == relays_.end()) return;
  Relay& x = it->second;
  if (x.done || (x.first_sent && x.first_at <= scheduler_.Now())) return;
  x.done = true;  // the target's later events are dropped, as on a closed connection
  x.given_up = true;
  const Member& entry = members_[x.from];
  if (entry.up && entry.generation == x.from_generation) {
    x.sink->OnError(x.origin_id,
                    DeadlineExceededError("no first token from the peer within the deadline"),
                    true);
  }
  scheduler_.RunAfter(SampleDelay(), [this, rid] {
    auto it = relays_.find(rid);
    if (it == relays_.end()) return;
    const Relay& y = it->second;
    const Member& target = members_[y.to];
    if (y.delivered && target.up && target.generation == y.to_generation) {
      target.node->Cancel(rid, relay_sink_.get());
    }
    relays_.erase(it);
  });
}

}  // namespace hearsay::sim
