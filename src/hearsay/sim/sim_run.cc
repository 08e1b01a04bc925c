#include "hearsay/sim/sim_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>

#include "hearsay/common/percentile.h"
#include "hearsay/engine/cost_model.h"
#include "hearsay/gossip/state_signing.h"
#include "hearsay/node/router_cost.h"
#include "hearsay/sim/central_router.h"
#include "hearsay/sim/cluster_spec.h"
#include "hearsay/sim/sim_cluster.h"
#include "hearsay/sim/sim_metrics.h"
#include "hearsay/sim/specialist_drift.h"
#include "hearsay/workload/arrivals.h"
#include "hearsay/workload/chat_workload.h"
#include "hearsay/workload/mmlu_workload.h"
#include "hearsay/workload/model_mix.h"
#include "hearsay/workload/trace_workload.h"

namespace hearsay::sim {

namespace {

// Decode steps are assumed to share their iteration with this many sequences.
constexpr double kAssumedDecodeBatch = 32;
// The host group every node names when the engines share one host (--host-cores).
constexpr char kSimHostGroup[] = "sim-host";

std::string ArrivalsOf(const SimConfig& c) {
  if (!c.arrivals.empty()) return c.arrivals;
  return c.workload == "trace" ? "trace" : "poisson";
}

workload::ArrivalOptions MakeArrivals(const SimConfig& c, double rate) {
  workload::ArrivalOptions a;
  a.kind =
      ArrivalsOf(c) == "bursty" ? workload::ArrivalKind::kGamma : workload::ArrivalKind::kPoisson;
  a.rate_per_s = rate;
  a.cv = c.burst_cv;
  return a;
}

workload::EntryOptions MakeEntry(const SimConfig& c) {
  workload::EntryOptions e;
  e.mode = c.entry == "sticky" ? workload::EntryMode::kSticky : workload::EntryMode::kUniform;
  e.nodes = static_cast<uint32_t>(c.nodes);
  e.clients = c.entry_clients > 0 ? c.entry_clients
                                  : std::max<uint32_t>(64, static_cast<uint32_t>(c.nodes) * 16);
  return e;
}

// Builds the configured single-model workload at arrival rate `rate` (ignored for trace
// timestamps).
Result<std::unique_ptr<workload::Workload>> MakeBaseWorkload(
    const SimConfig& c, double rate, const std::shared_ptr<const workload::Trace>& trace,
    uint64_t requests) {
  Rng rng(c.seed * 0x2545f4914f6cdd1dULL + 3);
  if (c.workload == "mmlu") {
    workload::MmluOptions o;
    o.num_requests = requests;
    o.popularity = workload::MmluPopularity::kZipf;
    o.zipf_s = c.zipf;
    o.variants = c.variants;
    o.output = c.cot ? workload::MmluOutput::kChainOfThought : workload::MmluOutput::kFaithful;
    o.arrivals = MakeArrivals(c, rate);
    o.entry = MakeEntry(c);
    HEARSAY_ASSIGN_OR_RETURN(workload::MmluWorkload w,
                             workload::MmluWorkload::Create(o, std::move(rng)));
    return std::unique_ptr<workload::Workload>(new workload::MmluWorkload(std::move(w)));
  }
  if (c.workload == "chat") {
    workload::ChatOptions o;
    o.system_zipf_s = c.zipf;
    o.num_conversations =
        std::max<uint64_t>(1, static_cast<uint64_t>(static_cast<double>(requests) / o.MeanTurns()));
    o.arrivals = MakeArrivals(c, rate);
    o.entry = MakeEntry(c);
    HEARSAY_ASSIGN_OR_RETURN(workload::ChatWorkload w,
                             workload::ChatWorkload::Create(o, std::move(rng)));
    return std::unique_ptr<workload::Workload>(new workload::ChatWorkload(std::move(w)));
  }
  workload::TraceWorkloadOptions o;
  o.max_requests = requests;
  if (ArrivalsOf(c) != "trace") o.arrivals = MakeArrivals(c, rate);
  o.entry = MakeEntry(c);
  HEARSAY_ASSIGN_OR_RETURN(workload::TraceWorkload w,
                           workload::TraceWorkload::Create(trace, o, std::move(rng)));
  return std::unique_ptr<workload::Workload>(new workload::TraceWorkload(std::move(w)));
}

// The machines of a run: SimConfig::cluster resolved, or `nodes` alike engines.
struct Pool {
  int nodes = 0;
  // Per node: its engine's cost model.
  std::vector<engine::CostParams> costs;
  // The models of the pool (empty: one unnamed model).
  std::vector<std::string> models;
  // Per node: the indexes (into models) of the models it serves; empty = every model.
  std::vector<std::vector<uint32_t>> serves;
  // Per node: the service it gossips (empty without models).
  std::vector<gossip::Service> services;
  bool unequal = false;  // from a --cluster spec
};

Result<Pool> ResolvePool(const SimConfig& c) {
  Pool p;
  if (c.cluster.empty()) {
    HEARSAY_ASSIGN_OR_RETURN(engine::CostModel m, engine::CostModel::FromPreset(c.engine_preset));
    p.nodes = c.nodes;
    p.costs.assign(static_cast<size_t>(c.nodes), m.params());
    p.serves.resize(static_cast<size_t>(c.nodes));
    if (!c.model.empty()) {
      // One named model on every node, as a daemon serves its configured model.
      p.models = {c.model};
      gossip::EngineService e;
      e.kind = "sim";
      e.model = c.model;
      e.tokenizer_fingerprint = 1;
      e.block_tokens = c.block_tokens;
      gossip::Service service;
      service.engines.push_back(std::move(e));
      p.services.assign(static_cast<size_t>(c.nodes), service);
    }
    return p;
  }
  HEARSAY_ASSIGN_OR_RETURN(ClusterSpec spec, ParseClusterSpec(c.cluster));
  p.unequal = true;
  p.nodes = spec.nodes();
  p.models = spec.Models();
  for (int i = 0; i < p.nodes; ++i) {
    const ClusterGroup& g = spec.GroupOf(i);
    HEARSAY_ASSIGN_OR_RETURN(engine::CostModel m, engine::CostModel::FromPreset(g.preset));
    p.costs.push_back(m.params());
    std::vector<uint32_t> serves;
    gossip::Service service;
    for (const std::string& name : g.models) {
      const auto it = std::find(p.models.begin(), p.models.end(), name);
      serves.push_back(static_cast<uint32_t>(it - p.models.begin()));
      // One simulated engine serves them all, each model in its own cache namespace; every
      // node tokenizes a model alike (same fingerprint and block size), so they share keys.
      gossip::EngineService e;
      e.kind = "sim";
      e.model = name;
      e.tokenizer_fingerprint = 1;
      e.block_tokens = c.block_tokens;
      service.engines.push_back(std::move(e));
    }
    p.serves.push_back(std::move(serves));
    p.services.push_back(std::move(service));
  }
  return p;
}

// The configured workload (over the pool's models when it has several), at `rate`. `c.nodes`
// must be the pool's size.
Result<std::unique_ptr<workload::Workload>> MakeWorkload(
    const SimConfig& c, const Pool& pool, double rate,
    const std::shared_ptr<const workload::Trace>& trace, uint64_t requests) {
  HEARSAY_ASSIGN_OR_RETURN(std::unique_ptr<workload::Workload> base,
                           MakeBaseWorkload(c, rate, trace, requests));
  if (pool.models.size() <= 1) return base;
  workload::ModelMixOptions mo;
  mo.models = static_cast<uint32_t>(pool.models.size());
  mo.zipf_s = c.model_zipf;
  mo.seed = c.seed * 0x9e3779b97f4a7c15ULL + 11;
  HEARSAY_ASSIGN_OR_RETURN(std::unique_ptr<workload::ModelMixWorkload> mix,
                           workload::ModelMixWorkload::Create(mo, std::move(base)));
  return std::unique_ptr<workload::Workload>(std::move(mix));
}

// The config with `nodes` set to the pool's size (a --cluster spec gives its own).
SimConfig WithPoolSize(const SimConfig& c, const Pool& pool) {
  SimConfig r = c;
  r.nodes = pool.nodes;
  return r;
}

// The mean service time of one request on one engine, in ms: the prefill work of its whole
// prompt (no cache credit) plus its decode steps, with the per-iteration overhead t0 shared by
// the tokens of a full iteration (prefill) or by kAssumedDecodeBatch sequences (decode).
double ServiceMs(const engine::CostParams& p, double prompt, double output, double budget) {
  const double prefill = p.a_ms_per_token * prompt + p.b_ms_per_token2 * prompt * prompt / 2 +
                         p.t0_ms * prompt / budget;
  const double decode = output * (p.d1_ms_per_seq + p.d2_ms_per_ctx_token * (prompt + output / 2) +
                                  p.t0_ms / kAssumedDecodeBatch);
  return prefill + decode;
}

// Receives every client request's events (at its entry node).
class ClientSink final : public ResponseSink {
 public:
  ClientSink(simenv::VirtualScheduler& s, size_t expected, bool record,
             std::unordered_map<NodeId, int32_t> node_index,
             std::vector<std::vector<uint32_t>> serves)
      : s_(s), record_(record), node_index_(std::move(node_index)), serves_(std::move(serves)) {
    arrival_.reserve(expected);
    ttft_ms_.reserve(expected);
    if (record_) records_.reserve(expected);
  }
  void Arrived(const workload::Request& r, TimePoint origin) {
    if (r.id >= arrival_.size()) {
      arrival_.resize(r.id + 1);
      model_.resize(r.id + 1);
    }
    arrival_[r.id] = s_.Now();
    model_[r.id] = r.model;
    if (!record_) return;
    if (r.id >= records_.size()) records_.resize(r.id + 1);
    RequestRecord& rec = records_[r.id];
    rec.id = r.id;
    rec.arrival_ms = ToMillis(s_.Now() - origin);
    rec.entry_node = r.entry_node;
    rec.subject = r.subject >= 0 ? r.subject : r.variant;
    rec.model = r.model;
    rec.prompt_tokens = static_cast<uint32_t>(r.prompt.size());
    rec.shareable_prefix_tokens = r.shareable_prefix_tokens;
  }
  void OnFirstToken(uint64_t id, const PeerFirstToken& first) override {
    const double ttft = ToMillis(s_.Now() - arrival_[id]);
    ttft_ms_.push_back(ttft);
    const auto it = node_index_.find(first.served_by);
    const int32_t served = it == node_index_.end() ? -1 : it->second;
    if (served >= 0 && !Serves(served, model_[id])) ++wrong_model_;
    if (!record_ || id >= records_.size()) return;
    RequestRecord& rec = records_[id];
    rec.ttft_ms = ttft;
    rec.cached_tokens = first.cached_tokens;
    rec.served_node = served;
  }
  bool Serves(int32_t node, uint32_t model) const {
    const std::vector<uint32_t>& m = serves_[static_cast<size_t>(node)];
    return m.empty() || std::find(m.begin(), m.end(), model) != m.end();
  }
  void OnComplete(uint64_t id, const PeerUsage&) override {
    e2e_sum_ms_ += ToMillis(s_.Now() - arrival_[id]);
    ++done_;
    last_ = s_.Now();
  }
  void OnError(uint64_t, const Status&, bool) override {
    ++failed_;
    last_ = s_.Now();
  }
  uint64_t finished() const { return done_ + failed_; }

  simenv::VirtualScheduler& s_;
  bool record_;
  std::unordered_map<NodeId, int32_t> node_index_;
  std::vector<std::vector<uint32_t>> serves_;
  std::vector<TimePoint> arrival_;
  std::vector<uint32_t> model_;
  uint64_t wrong_model_ = 0;
  std::vector<double> ttft_ms_;
  std::vector<RequestRecord> records_;
  double e2e_sum_ms_ = 0;
  uint64_t done_ = 0;
  uint64_t failed_ = 0;
  TimePoint last_{};
};

}  // namespace

nlohmann::json ToJson(const SimSummary& s) {
  nlohmann::json j;
  j["mean_ttft_ms"] = s.mean_ttft_ms;
  j["p50_ttft_ms"] = s.p50_ttft_ms;
  j["p90_ttft_ms"] = s.p90_ttft_ms;
  j["p99_ttft_ms"] = s.p99_ttft_ms;
  j["mean_e2e_ms"] = s.mean_e2e_ms;
  j["hit_rate"] = s.hit_rate;
  j["forwarded_frac"] = s.forwarded_frac;
  j["load_cov"] = s.load_cov;
  j["gossip_bytes_per_node_s"] = s.gossip_bytes_per_node_s;
  j["requests"] = s.requests;
  j["failed"] = s.failed;
  j["retries"] = s.retries;
  j["bounces"] = s.bounces;
  j["wrong_model"] = s.wrong_model;
  j["sim_seconds"] = s.sim_seconds;
  j["per_node_work"] = s.per_node_work;
  j["per_node_served"] = s.per_node_served;
  j["arrival_rate_per_s"] = s.arrival_rate_per_s;
  j["sim_requests_per_wall_s"] = s.sim_requests_per_wall_s;
  j["wall_seconds"] = s.wall_seconds;
  if (!s.records.empty()) {
    j["specialist_drift"] = s.specialist_drift;
    j["specialist_share"] = s.specialist_share;
  }
  return j;
}

namespace {

uint64_t ClusterSeedOf(const SimConfig& c) { return c.cluster_seed != 0 ? c.cluster_seed : c.seed; }

// Arrival rate: rho x nodes / mean service time, measured on a probe of the workload.
Result<double> ArrivalRate(const SimConfig& config, const Pool& pool,
                           const engine::SimEngineOptions& eo,
                           std::shared_ptr<const workload::Trace> trace, uint64_t total) {
  if (config.rate_per_s > 0) return config.rate_per_s;
  HEARSAY_ASSIGN_OR_RETURN(std::unique_ptr<workload::Workload> probe,
                           MakeWorkload(config, pool, 1.0, trace, std::min<uint64_t>(total, 2000)));
  double prompt = 0, output = 0, n = 0;
  while (std::optional<workload::Request> r = probe->Next()) {
    prompt += static_cast<double>(r->prompt.size());
    output += std::max<double>(1, r->output_tokens);
    n += 1;
    if (n >= 2000) break;
  }
  if (n == 0) return InvalidArgumentError("the workload produced no requests");
  double rate = 0;
  for (const engine::CostParams& p : pool.costs) {
    const double service_ms =
        ServiceMs(p, prompt / n, output / n, static_cast<double>(eo.token_budget));
    HEARSAY_ASSIGN_OR_RETURN(double one,
                             workload::RateForUtilization(config.rho, FromMillis(service_ms), 1));
    rate += one;
  }
  return rate;
}

SimClusterOptions ClusterOptions(const SimConfig& config, const Pool& pool,
                                 const engine::CostModel& cost,
                                 const engine::SimEngineOptions& eo) {
  SimClusterOptions co;
  co.nodes = pool.nodes;
  if (pool.unequal) {
    co.node_costs = pool.costs;
    co.price_by_measured_prefill = true;
  }
  if (!pool.models.empty()) co.node_services = pool.services;
  if (config.host_cores > 0) {
    // One host: every node says so, as the daemons of `hearsay demo --engine llama` do.
    co.node_services.resize(static_cast<size_t>(pool.nodes));
    for (gossip::Service& s : co.node_services) s.host_group = kSimHostGroup;
  }
  co.seed = ClusterSeedOf(config);
  co.delay_ms = config.delay_ms;
  co.delay_jitter = config.delay_jitter;
  co.loss = config.loss;
  co.gossip = GossipConfigOf(config);
  co.policy = config.policy;
  co.policy_options.cost = node::RouterCostModel(cost.params());
  co.engine = eo;
  co.block_tokens = config.block_tokens;
  co.liars = config.liars;
  co.slanderers = config.slanderers;
  co.trimmed_listers = static_cast<size_t>(config.trimmed_listers);
  co.trust = config.trust;
  co.forward_deadline_factor = config.forward_deadline_factor;
  co.publish_interval = PublishIntervalOf(config);
  return co;
}

// The figures of a finished run from its client sink and cluster (all but the arrival rate and
// the wall-clock figures).
SimSummary Summarize(const SimConfig& config, ClientSink& sink, SimCluster& cluster,
                     TimePoint start, uint64_t bytes_at_start) {
  SimSummary s;
  s.requests = sink.done_;
  s.failed = sink.failed_;
  s.wrong_model = sink.wrong_model_;  // plus the forwards refused, below
  s.sim_seconds = std::max(0.0, ToSeconds(sink.last_ - start));
  std::vector<double>& ttft = sink.ttft_ms_;
  s.mean_ttft_ms = Mean(ttft);
  std::sort(ttft.begin(), ttft.end());
  s.p50_ttft_ms = Percentile(ttft, 0.50);
  s.p90_ttft_ms = Percentile(ttft, 0.90);
  s.p99_ttft_ms = Percentile(ttft, 0.99);
  s.mean_e2e_ms = sink.done_ == 0 ? 0 : sink.e2e_sum_ms_ / static_cast<double>(sink.done_);
  uint64_t prompt = 0, cached = 0, forwarded = 0, clients = 0;
  for (int i = 0; i < cluster.size(); ++i) {
    if (!cluster.up(i)) continue;
    const node::NodeStats& st = cluster.node(i).stats();
    prompt += st.served_prompt_tokens;
    cached += st.served_cached_tokens;
    forwarded += st.forwarded_out;
    clients += st.client_requests;
    s.retries += st.forward_failures;
    s.bounces += st.forwards_bounced;
    s.wrong_model += st.forwards_wrong_model;
    s.per_node_work.push_back(
        static_cast<double>(st.served_prompt_tokens - st.served_cached_tokens));
    s.per_node_served.push_back(st.served);
  }
  s.hit_rate = prompt == 0 ? 0 : static_cast<double>(cached) / static_cast<double>(prompt);
  s.forwarded_frac =
      clients == 0 ? 0 : static_cast<double>(forwarded) / static_cast<double>(clients);
  s.load_cov = CoefficientOfVariation(s.per_node_work);
  if (s.sim_seconds > 0) {
    s.gossip_bytes_per_node_s = static_cast<double>(cluster.gossip_bytes_sent() - bytes_at_start) /
                                config.nodes / s.sim_seconds;
  }
  s.records = std::move(sink.records_);
  if (config.record_requests) {
    const DriftStats d = SpecialistDrift(s.records, kDriftWindowMs, kDriftMinRequests);
    s.specialist_drift = d.drift;
    s.specialist_share = d.specialist_share;
  }
  return s;
}

}  // namespace

gossip::Config GossipConfigOf(const SimConfig& config) {
  gossip::Config g;
  g.gossip_interval = FromMillis(config.gossip_ms);
  g.probe_interval = std::max(FromMillis(100), 5 * g.gossip_interval);
  g.probe_timeout = g.probe_interval / 2;
  g.landmark_stride = config.landmark_stride;
  g.signatures =
      gossip::ParseSignatureMode(config.signatures).value_or(gossip::SignatureMode::kOff);
  return g;
}

Duration PublishIntervalOf(const SimConfig& config) {
  return std::max(FromMillis(10), FromMillis(config.gossip_ms) / 2);
}

Result<std::unique_ptr<workload::Workload>> MakeRunWorkload(const SimConfig& in) {
  HEARSAY_RETURN_IF_ERROR(ValidateSimConfig(in));
  if (in.workload == "trace") return InvalidArgumentError("MakeRunWorkload: not for traces");
  HEARSAY_ASSIGN_OR_RETURN(const Pool pool, ResolvePool(in));
  const SimConfig config = WithPoolSize(in, pool);
  engine::SimEngineOptions eo;
  HEARSAY_ASSIGN_OR_RETURN(const double rate,
                           ArrivalRate(config, pool, eo, nullptr, config.requests));
  return MakeWorkload(config, pool, rate, nullptr, config.requests);
}

Result<WorkloadFootprint> MeasureWorkload(const SimConfig& in) {
  HEARSAY_RETURN_IF_ERROR(ValidateSimConfig(in));
  HEARSAY_ASSIGN_OR_RETURN(const Pool pool, ResolvePool(in));
  const SimConfig config = WithPoolSize(in, pool);
  std::shared_ptr<const workload::Trace> trace;
  uint64_t total = config.requests;
  if (config.workload == "trace") {
    HEARSAY_ASSIGN_OR_RETURN(
        workload::Trace t, workload::Trace::LoadFile(config.trace_path, workload::TraceOptions{}));
    const uint64_t n = t.size();
    trace = std::make_shared<const workload::Trace>(std::move(t));
    total = total == 0 ? n : std::min<uint64_t>(total, n);
  }
  prefix::BlockKeyerOptions ko;
  ko.tokens_per_block = config.block_tokens;
  HEARSAY_ASSIGN_OR_RETURN(
      prefix::BlockKeyer keyer,
      prefix::BlockKeyer::Create("hearsay-footprint-secret-0123456789", "sim-model", "", ko));
  HEARSAY_ASSIGN_OR_RETURN(std::unique_ptr<workload::Workload> w,
                           MakeWorkload(config, pool, 1.0, trace, total));
  std::unordered_map<prefix::BlockKey, uint32_t> seen;
  std::vector<prefix::BlockKey> keys;
  WorkloadFootprint f;
  while (std::optional<workload::Request> r = w->Next()) {
    keys.clear();
    keyer.AppendKeys(r->prompt, &keys);
    for (prefix::BlockKey k : keys) ++seen[k];
    f.max_request_tokens =
        std::max<uint64_t>(f.max_request_tokens, r->prompt.size() + std::max(1u, r->output_tokens));
    if (++f.requests >= total) break;
  }
  for (const auto& [k, n] : seen) f.reused_tokens += n >= 2 ? config.block_tokens : 0;
  return f;
}

Result<double> ArrivalRateOf(const SimConfig& in) {
  HEARSAY_RETURN_IF_ERROR(ValidateSimConfig(in));
  if (in.workload == "trace") return InvalidArgumentError("ArrivalRateOf: not for traces");
  HEARSAY_ASSIGN_OR_RETURN(const Pool pool, ResolvePool(in));
  engine::SimEngineOptions eo;
  return ArrivalRate(WithPoolSize(in, pool), pool, eo, nullptr, in.requests);
}

Result<SimSummary> RunSim(const SimConfig& config, const ProgressFn& progress) {
  return RunSimRecorded(config, progress, nullptr);
}

Result<SimSummary> RunSimRecorded(const SimConfig& in, const ProgressFn& progress,
                                  node::DecisionRecorder* recorder) {
  const auto wall_start = std::chrono::steady_clock::now();
  HEARSAY_RETURN_IF_ERROR(ValidateSimConfig(in));
  HEARSAY_ASSIGN_OR_RETURN(const Pool pool, ResolvePool(in));
  const SimConfig config = WithPoolSize(in, pool);
  // A central router prices with the first node's model.
  const engine::CostModel cost(pool.costs.front());

  std::shared_ptr<const workload::Trace> trace;
  uint64_t total = config.requests;
  if (config.workload == "trace") {
    HEARSAY_ASSIGN_OR_RETURN(
        workload::Trace t, workload::Trace::LoadFile(config.trace_path, workload::TraceOptions{}));
    const uint64_t n = t.size();
    trace = std::make_shared<const workload::Trace>(std::move(t));
    total = total == 0 ? n : std::min<uint64_t>(total, n);
    if (total == 0) return InvalidArgumentError("the trace is empty");
  }

  engine::SimEngineOptions eo;
  eo.cost = cost.params();
  eo.kv_capacity_tokens = config.capacity_tokens;
  if (config.max_running > 0) eo.max_running = config.max_running;
  if (config.engine_cache == "slots") eo.cache_layout = engine::CacheLayout::kSlots;
  // Engines that share one host's cores share one SharedHost (the options' copies share it).
  if (config.host_cores > 0) {
    eo.host = std::make_shared<engine::SharedHost>(config.host_cores, config.host_contention);
  }

  HEARSAY_ASSIGN_OR_RETURN(const double rate, ArrivalRate(config, pool, eo, trace, total));
  HEARSAY_ASSIGN_OR_RETURN(std::unique_ptr<workload::Workload> workload,
                           MakeWorkload(config, pool, rate, trace, total));

  const int routers = EffectiveRouters(config);
  RouterTier* tier_ptr = nullptr;
  HEARSAY_ASSIGN_OR_RETURN(std::unique_ptr<SimCluster> cluster, SimCluster::Create([&] {
                             SimClusterOptions co = ClusterOptions(config, pool, cost, eo);
                             co.recorder = recorder;
                             if (routers > 0) {
                               // The nodes serve what the routers send them; their own policy
                               // never chooses (every request carries the hop marker).
                               co.policy = "local";
                               co.cache_events = [&tier_ptr](
                                                     int n, std::span<const prefix::BlockEvent> e) {
                                 if (tier_ptr != nullptr) tier_ptr->OnCacheEvents(n, e);
                               };
                             }
                             return co;
                           }()));
  std::unique_ptr<RouterTier> tier;
  if (routers > 0) {
    RouterTierOptions to;
    to.policy = config.policy;
    to.policy_options.cost = node::RouterCostModel(cost.params());
    to.replicas = routers;
    to.replica_sync = config.replica_sync;
    to.seed = ClusterSeedOf(config);
    HEARSAY_ASSIGN_OR_RETURN(tier, RouterTier::Create(*cluster, to));
    tier_ptr = tier.get();
  }

  simenv::VirtualScheduler& sched = cluster->scheduler();
  cluster->StartAll();
  if (tier) tier->Start();
  sched.RunFor(FromMillis(config.warmup_ms));
  const TimePoint start = sched.Now();
  const uint64_t bytes_at_start = cluster->gossip_bytes_sent();
  if (config.slow_node >= 0) {
    SimCluster* c = cluster.get();
    sched.RunAfter(FromMillis(config.slow_at_s * 1000),
                   [c, n = config.slow_node, f = config.slow_factor] {
                     if (c->up(n)) c->engine(n).SetSlowdown(f);
                   });
  }

  std::unordered_map<NodeId, int32_t> node_index;
  for (int i = 0; i < cluster->size(); ++i) node_index.emplace(SimCluster::Name(i), i);
  ClientSink sink(sched, total, config.record_requests, std::move(node_index), pool.serves);
  std::optional<workload::Request> next = workload->Next();
  uint64_t issued = 0;
  // Each arrival schedules the next one, so only one arrival timer is pending at a time.
  std::function<void()> arm = [&] {
    if (!next) return;
    sched.RunAfter((start + next->arrival) - sched.Now(), [&] {
      workload::Request r = std::move(*next);
      next = workload->Next();
      if (issued + 1 >= total) next.reset();
      ++issued;
      sink.Arrived(r, start);
      PeerRequest pr;
      pr.id = r.id;
      pr.prompt = std::move(r.prompt);
      pr.max_output_tokens = std::max<uint32_t>(1, r.output_tokens);
      pr.scripted_output = std::move(r.scripted_output);
      if (!pool.models.empty()) pr.model = pool.models[r.model];
      if (tier) {
        tier->Submit(static_cast<int>(r.entry_node), std::move(pr), &sink);
      } else {
        cluster->node(static_cast<int>(r.entry_node) % cluster->size())
            .Submit(std::move(pr), &sink);
      }
      arm();
    });
  };
  arm();

  const uint64_t step = std::max<uint64_t>(1, total / 200);
  uint64_t next_report = step;
  while (next || sink.finished() < issued) {
    if (!sched.Step()) break;
    if (progress && sink.finished() >= next_report) {
      progress(sink.finished(), total);
      next_report = sink.finished() + step;
    }
  }
  if (progress) progress(sink.finished(), total);

  SimSummary s = Summarize(config, sink, *cluster, start, bytes_at_start);
  // Behind a router every request crosses the network to its engine.
  if (tier) s.forwarded_frac = s.requests + s.failed > 0 ? 1.0 : 0.0;
  s.arrival_rate_per_s = rate;
  s.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  s.sim_requests_per_wall_s =
      s.wall_seconds > 0 ? static_cast<double>(s.requests) / s.wall_seconds : 0;
  return s;
}

}  // namespace hearsay::sim
