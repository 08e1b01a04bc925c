#include "hearsay/sim/gossip_experiment.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "hearsay/env/rng.h"
#include "hearsay/sim/gossip_cluster.h"

namespace hearsay::sim {
namespace {

using namespace std::chrono_literals;
using prefix::BlockEvent;
using prefix::BlockKey;

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The shared prompt distribution: system prompts, and conversations chained after one each.
class PromptModel {
 public:
  static constexpr int kSystems = 200;
  static constexpr int kConversations = 20000;

  explicit PromptModel(uint64_t seed) : conv_zipf_(kConversations, 0.9), seed_(seed) {
    Rng rng(seed);
    for (int s = 0; s < kSystems; ++s) {
      sys_len_.push_back(static_cast<int>(rng.UniformInt(4, 64)));
    }
  }

  // The block-key chain of one request drawn from `rng`.
  std::vector<BlockKey> Draw(Rng& rng) const {
    const uint64_t conv = conv_zipf_.Sample(rng);
    const uint64_t h = Mix(conv ^ seed_);
    const int sys = static_cast<int>(h % kSystems);
    const int conv_len = 4 + static_cast<int>((h >> 20) % 125);
    std::vector<BlockKey> chain;
    chain.reserve(static_cast<size_t>(sys_len_[sys] + conv_len));
    BlockKey k = Mix(seed_ ^ 0xabcdef);
    for (int i = 0; i < sys_len_[sys]; ++i) {
      k = Mix(k ^ Mix((static_cast<uint64_t>(sys) << 32) | static_cast<uint64_t>(i)));
      chain.push_back(k);
    }
    for (int i = 0; i < conv_len; ++i) {
      k = Mix(k ^ Mix(((conv + 1) << 24) ^ static_cast<uint64_t>(i) ^ 0x5555));
      chain.push_back(k);
    }
    return chain;
  }

 private:
  ZipfSampler conv_zipf_;
  uint64_t seed_;
  std::vector<int> sys_len_;
};

// A node's own prefix cache: LRU over leaves, like the radix tree, emitting block events.
class SyntheticCache {
 public:
  explicit SyntheticCache(size_t capacity) : capacity_(capacity) {}

  // Inserts (or touches) `chain`; appends the resulting events.
  void Insert(const std::vector<BlockKey>& chain, std::vector<BlockEvent>* events) {
    const uint64_t now = ++clock_;
    BlockKey parent = 0;
    for (size_t i = 0; i < chain.size(); ++i) {
      const BlockKey k = chain[i];
      auto it = blocks_.find(k);
      if (it != blocks_.end()) {
        Touch(k, it->second, now);
      } else {
        if (i > 0) {
          Block& p = blocks_.at(parent);
          if (p.children++ == 0) leaves_.erase({p.last_use, parent});
        }
        blocks_.emplace(k, Block{parent, static_cast<uint32_t>(i), 0, now, i > 0});
        leaves_.insert({now, k});
        events->push_back({BlockEvent::Kind::kAdded, k, static_cast<uint32_t>(i)});
      }
      parent = k;
    }
    while (blocks_.size() > capacity_ && !leaves_.empty()) {
      const auto [use, k] = *leaves_.begin();
      leaves_.erase(leaves_.begin());
      const Block b = blocks_.at(k);
      blocks_.erase(k);
      events->push_back({BlockEvent::Kind::kRemoved, k, b.index});
      if (b.has_parent) {
        Block& p = blocks_.at(b.parent);
        if (--p.children == 0) leaves_.insert({p.last_use, b.parent});
      }
    }
  }

  // Leading blocks of `chain` held.
  uint32_t Matched(const std::vector<BlockKey>& chain) const {
    uint32_t n = 0;
    for (BlockKey k : chain) {
      if (!blocks_.contains(k)) break;
      ++n;
    }
    return n;
  }
  bool Contains(BlockKey k) const { return blocks_.contains(k); }

 private:
  struct Block {
    BlockKey parent;
    uint32_t index;
    uint32_t children;
    uint64_t last_use;
    bool has_parent;
  };
  void Touch(BlockKey k, Block& b, uint64_t now) {
    if (b.children == 0) {
      leaves_.erase({b.last_use, k});
      leaves_.insert({now, k});
    }
    b.last_use = now;
  }

  size_t capacity_;
  uint64_t clock_ = 0;
  std::unordered_map<BlockKey, Block> blocks_;
  std::set<std::pair<uint64_t, BlockKey>> leaves_;
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

int IndexOf(const NodeId& id) { return std::atoi(id.c_str() + 1); }

}  // namespace

nlohmann::json RunGossipExperiment(const GossipExperimentOptions& o) {
  if (o.nodes < 2 || o.nodes > 4096) return {{"error", "nodes must be in [2, 4096]"}};
  if (!(o.loss >= 0 && o.loss <= 1)) return {{"error", "loss must be in [0, 1]"}};
  if (!(o.duration_s > 0 && o.duration_s <= 3600)) {
    return {{"error", "duration must be in (0, 3600] seconds"}};
  }
  if (!(o.churn >= 0 && o.churn <= 1e6)) return {{"error", "churn must be in [0, 1e6]"}};
  if (o.landmark_stride == 0) return {{"error", "landmark stride must be >= 1"}};

  const int n = o.nodes;
  uint64_t false_deaths = 0;
  GossipCluster* cluster_ptr = nullptr;
  GossipCluster::Options co;
  co.nodes = n;
  co.seed = o.seed;
  co.seed_nodes = std::min(3, n);
  co.faults.latency = simenv::LatencyModel::Uniform(500us, 2ms);
  co.faults.loss = o.loss;
  co.config.landmark_stride = o.landmark_stride;
  co.config.landmark_budget_members = o.landmark_budget_members;
  co.config.relayed_evidence = o.relayed_evidence;
  co.config.silence_probe_mult = o.silence_probe_mult;
  co.share_replicas = o.share_replicas;
  co.model_caches = false;  // figures come from the replicas themselves
  // Each false death, with what explains it: how long the observer suspected the member, the
  // incarnation it knew against the member's own (higher: a refutation was made but did not
  // reach the observer in time; equal: the member never learned of its suspicion), and when
  // the observer last heard from it.
  nlohmann::json false_death_trace = nlohmann::json::array();
  std::map<std::pair<int, int>, TimePoint> suspected_at;
  // How long each suspicion of a healthy member lasted before its refutation reached the
  // observer: the margin the minimum suspicion timeout leaves against a false death.
  std::map<std::pair<int, int>, TimePoint> open_suspicions;
  std::vector<double> cleared_suspicions;
  // Where the killed node's detection time goes: when each survivor began to suspect it and
  // when it declared it dead (first life only; the victim never restarts).
  const int victim = n > 3 ? n / 2 : n - 1;
  std::vector<std::optional<TimePoint>> victim_suspect(static_cast<size_t>(n));
  std::vector<std::optional<TimePoint>> victim_dead(static_cast<size_t>(n));
  co.on_member_changed = [&](int observer, const NodeId& id, Generation g, gossip::MemberState s) {
    if (cluster_ptr == nullptr) return;
    const int j = IndexOf(id);
    if (j == victim && g == 1 && !cluster_ptr->up(j)) {
      auto& slot = s == gossip::MemberState::kSuspect
                       ? victim_suspect[static_cast<size_t>(observer)]
                       : victim_dead[static_cast<size_t>(observer)];
      if ((s == gossip::MemberState::kSuspect || s == gossip::MemberState::kDead) && !slot) {
        slot = cluster_ptr->Now();
      }
      return;
    }
    if (j < 0 || j >= n || j == observer || !cluster_ptr->up(j) ||
        cluster_ptr->generation(j) != g) {
      return;
    }
    const TimePoint now = cluster_ptr->Now();
    if (s == gossip::MemberState::kSuspect) {
      suspected_at[{observer, j}] = now;
      open_suspicions[{observer, j}] = now;
    }
    if (s == gossip::MemberState::kAlive) {
      auto open = open_suspicions.find({observer, j});
      if (open != open_suspicions.end()) {
        cleared_suspicions.push_back(ToSeconds(now - open->second));
        open_suspicions.erase(open);
      }
    }
    if (s != gossip::MemberState::kDead) return;
    open_suspicions.erase({observer, j});
    ++false_deaths;
    const auto view = cluster_ptr->node(observer).Member(id);
    auto since = suspected_at.find({observer, j});
    const gossip::Node& obs = cluster_ptr->node(observer);
    false_death_trace.push_back({
        {"t_s", ToSeconds(now.time_since_epoch())},
        {"observer", GossipCluster::Name(observer)},
        {"member", id},
        {"suspected_for_s", since == suspected_at.end() ? -1.0 : ToSeconds(now - since->second)},
        {"incarnation_known", view ? view->incarnation : 0},
        {"incarnation_actual", cluster_ptr->node(j).incarnation()},
        {"heard_ago_s", view ? ToSeconds(now - view->last_heard) : -1.0},
        {"observer_local_health", obs.local_health()},
        {"member_local_health", cluster_ptr->node(j).local_health()},
        {"member_refutations", cluster_ptr->node(j).counters().refutations},
    });
  };
  GossipCluster c(co);
  cluster_ptr = &c;
  PromptModel prompts(o.seed);
  Rng rng(o.seed * 31 + 7);
  std::vector<SyntheticCache> caches(static_cast<size_t>(n), SyntheticCache(o.cache_blocks));
  std::vector<Rng> node_rng;
  for (int i = 0; i < n; ++i) node_rng.push_back(rng.Fork());
  c.StartAll();

  const Duration warmup = 5s;
  const Duration measured = FromSeconds(o.duration_s);
  const Duration kill_at = warmup + measured / 3;
  const Duration step = 50ms;
  const Duration tick = 10ms;

  struct Sample {
    int origin;
    BlockKey key;
    Duration t0;
    std::vector<bool> known;  // by node: has held the entry since t0
  };
  std::vector<Sample> active;
  std::vector<double> convergence;
  uint64_t censored = 0, evicted_first = 0;
  const double sample_prob =
      std::min(1.0, 600.0 / std::max(1.0, o.churn * 0.5 / o.landmark_stride * n * o.duration_s));

  uint64_t events_total = 0;
  double bytes_before = 0, msgs_before = 0, bytes_killed = 0, msgs_killed = 0;
  double detect_s = -1;
  bool killed = false;
  bool started_measuring = false;
  bool ended = false;
  uint64_t acc_total = 0, acc_ok = 0, acc_exact = 0, acc_nonzero = 0;
  double acc_abs_err = 0;
  double acc_stride_sum = 0;
  const int query_rounds = 10;
  double health_sum = 0;
  uint64_t health_samples = 0;
  int health_max = 0;
  int rounds_done = 0;

  // Per node, at the start of the measured window: what its replicas had received, so the JSON
  // can say what the window's bytes carried (over the nodes up at its end).
  struct Received {
    uint64_t entries = 0, redundant = 0, runs = 0, snapshots = 0, stale = 0;
  };
  auto received = [&](int i) {
    const gossip::Counters& k = c.node(i).counters();
    return Received{k.entries_received, k.entries_redundant, k.deltas_applied, k.snapshots_applied,
                    k.deltas_stale};
  };
  std::vector<Received> received_before(static_cast<size_t>(n));
  Received window;
  // Bytes by message type (index 0: piggybacked membership updates), as bytes are counted.
  std::array<double, 16> window_types_before{}, window_types_after{};
  auto add_types = [&](int i, std::array<double, 16>& to) {
    const gossip::Counters& k = c.node(i).counters();
    to[0] += static_cast<double>(k.update_bytes_sent);
    for (size_t t = 1; t < to.size(); ++t) to[t] += static_cast<double>(k.bytes_sent_by_type[t]);
  };
  auto sum_counters = [&](double* bytes, double* msgs) {
    *bytes = 0;
    *msgs = 0;
    for (int i = 0; i < n; ++i) {
      if (!c.up(i)) continue;
      *bytes += static_cast<double>(c.node(i).counters().bytes_sent);
      *msgs += static_cast<double>(c.node(i).counters().msgs_sent);
    }
  };

  Duration t{};
  const Duration end = warmup + measured;
  const Duration hard_end = end + 30s;
  std::vector<double> credit(static_cast<size_t>(n), 0.0);
  std::vector<BlockEvent> events;
  while (t < hard_end) {
    const bool measuring = t >= warmup && t < end;
    if (!started_measuring && t >= warmup) {
      started_measuring = true;
      sum_counters(&bytes_before, &msgs_before);
      for (int i = 0; i < n; ++i) {
        if (c.up(i)) received_before[static_cast<size_t>(i)] = received(i);
        if (c.up(i)) add_types(i, window_types_before);
      }
    }
    if (!ended && t >= end) {
      ended = true;
      double b = 0, m = 0;
      sum_counters(&b, &m);
      bytes_killed += b;
      msgs_killed += m;
      for (int i = 0; i < n; ++i) {
        if (!c.up(i)) continue;
        add_types(i, window_types_after);
        const Received now = received(i), was = received_before[static_cast<size_t>(i)];
        window.entries += now.entries - was.entries;
        window.redundant += now.redundant - was.redundant;
        window.runs += now.runs - was.runs;
        window.snapshots += now.snapshots - was.snapshots;
        window.stale += now.stale - was.stale;
      }
    }
    if (t >= end && detect_s >= 0) break;
    // Workload, in 10 ms ticks within each 50 ms step.
    if (t < end) {
      for (Duration sub{}; sub < step; sub += tick) {
        // Each node earns churn * tick events of credit and issues requests while it has
        // credit; a request's events are charged after the fact, so the rate holds on average.
        for (int i = 0; i < n; ++i) {
          if (!c.up(i)) continue;
          credit[i] += o.churn * ToSeconds(tick);
          int attempts = 0;
          while (credit[i] > 0 && attempts++ < 64) {
            events.clear();
            caches[i].Insert(prompts.Draw(node_rng[i]), &events);
            if (events.empty()) continue;
            credit[i] -= static_cast<double>(events.size());
            events_total += events.size();
            c.node(i).PublishCacheEvents(events);
            if (measuring) {
              for (const auto& e : events) {
                if (e.kind == BlockEvent::Kind::kAdded &&
                    e.block_index % c.node(i).landmark_stride() == 0 &&
                    node_rng[i].Bernoulli(sample_prob)) {
                  active.push_back({i, e.key, t + sub, std::vector<bool>(n, false)});
                }
              }
            }
          }
        }
        c.RunFor(tick);
      }
    } else {
      c.RunFor(step);
    }
    t += step;
    // Kill.
    if (!killed && t >= kill_at) {
      killed = true;
      bytes_killed += static_cast<double>(c.node(victim).counters().bytes_sent);
      msgs_killed += static_cast<double>(c.node(victim).counters().msgs_sent);
      if (t < end) add_types(victim, window_types_after);
      c.Crash(victim);
    }
    if (killed && detect_s < 0) {
      bool all = true;
      for (int k = 0; k < n && all; ++k) {
        if (k == victim || !c.up(k)) continue;
        auto v = c.node(k).Member(GossipCluster::Name(victim));
        all = v && (v->state == gossip::MemberState::kDead || v->generation > 1);
      }
      if (all) detect_s = ToSeconds(t - kill_at);
    }
    if (measuring) {
      for (int i = 0; i < n; ++i) {
        if (!c.up(i)) continue;
        health_sum += c.node(i).local_health();
        ++health_samples;
        health_max = std::max(health_max, c.node(i).local_health());
      }
    }
    // Convergence of sampled entries.
    const int live = [&] {
      int k = 0;
      for (int i = 0; i < n; ++i) k += c.up(i) ? 1 : 0;
      return k;
    }();
    for (size_t s = 0; s < active.size();) {
      Sample& sm = active[s];
      bool done = false;
      if (!c.up(sm.origin) || !caches[sm.origin].Contains(sm.key)) {
        ++evicted_first;
        done = true;
      } else {
        // A node that has held the entry counts as knowing it (the origin still holds it, and
        // replicas only move forward), so each step asks only the others, and stops at the
        // first miss beyond what 99% allows. Scanning every replica for every sample each step
        // was a third of the run time at N = 64 (a cache miss per replica hash table).
        const int need = static_cast<int>(std::ceil(0.99 * (live - 1)));
        const int allowed_misses = (live - 1) - need;
        int have = 0, misses = 0;
        const NodeId origin = GossipCluster::Name(sm.origin);
        for (int k = 0; k < n; ++k) {
          if (k == sm.origin || !c.up(k)) continue;
          if (sm.known[static_cast<size_t>(k)]) {
            ++have;
            continue;
          }
          if (misses > allowed_misses) continue;
          const gossip::OriginStore* st = c.node(k).PeerStore(origin);
          if (st != nullptr && st->Contains(sm.key)) {
            sm.known[static_cast<size_t>(k)] = true;
            ++have;
          } else {
            ++misses;
          }
        }
        if (have >= need) {
          convergence.push_back(ToSeconds(t - sm.t0));
          done = true;
        } else if (t - sm.t0 > 30s) {
          ++censored;
          convergence.push_back(30);
          done = true;
        }
      }
      if (done) {
        active[s] = std::move(active.back());
        active.pop_back();
      } else {
        ++s;
      }
    }
    // Accuracy queries, spread over the measured window.
    if (measuring && rounds_done < query_rounds &&
        t - warmup >= measured * (rounds_done + 1) / (query_rounds + 1)) {
      ++rounds_done;
      const int q = o.accuracy_queries / query_rounds;
      for (int k = 0; k < q; ++k) {
        const int i = static_cast<int>(rng.Below(static_cast<uint64_t>(n)));
        const int j = static_cast<int>(rng.Below(static_cast<uint64_t>(n)));
        if (i == j || !c.up(i) || !c.up(j)) continue;
        const std::vector<BlockKey> chain = prompts.Draw(rng);
        const uint32_t truth = caches[j].Matched(chain);
        const uint32_t est = c.node(i).EstimateMatchedBlocks(GossipCluster::Name(j), chain);
        const double err = std::abs(static_cast<double>(truth) - static_cast<double>(est));
        // Within the peer's stated granularity: its own stride as node i knows it (the base
        // stride if nothing of it has reached i yet, as EstimateMatchedBlocks assumes).
        const uint32_t known = c.node(i).PeerStride(GossipCluster::Name(j));
        const uint32_t stride = known != 0 ? known : o.landmark_stride;
        ++acc_total;
        acc_stride_sum += stride;
        acc_ok += err < stride ? 1 : 0;
        acc_exact += err == 0 ? 1 : 0;
        acc_nonzero += truth > 0 ? 1 : 0;
        acc_abs_err += err;
      }
    }
  }
  double bytes_after = 0, msgs_after = 0;
  bytes_after = bytes_killed;
  msgs_after = msgs_killed;
  const double node_seconds = (n - 1) * o.duration_s + ToSeconds(kill_at - warmup);
  uint64_t snapshots = 0, gaps = 0, stale = 0, entries = 0, redundant = 0, streamed = 0, msgs = 0;
  uint64_t probes = 0, probe_failures = 0, probes_heard = 0, probes_relayed = 0, refutations = 0;
  uint64_t evidence_notices = 0, silence_probes = 0, restrides = 0, stride_mismatches = 0,
           stride_runs = 0;
  double stride_sum = 0;
  uint32_t stride_max = 0;
  int up_nodes = 0;
  std::array<double, 16> bytes_by_type{};
  for (int i = 0; i < n; ++i) {
    if (!c.up(i)) continue;
    const gossip::Counters& k = c.node(i).counters();
    snapshots += k.snapshots_sent;
    gaps += k.deltas_gap;
    stale += k.deltas_stale;
    entries += k.entries_received;
    redundant += k.entries_redundant;
    streamed += k.stream_msgs_sent;
    msgs += k.msgs_sent;
    probes += k.probes;
    probe_failures += k.probe_failures;
    probes_heard += k.probes_heard;
    probes_relayed += k.probes_relayed;
    refutations += k.refutations;
    evidence_notices += k.evidence_notices;
    silence_probes += k.silence_probes;
    restrides += k.restrides;
    stride_mismatches += k.deltas_stride_mismatch;
    stride_runs += k.stride_runs_applied;
    stride_sum += c.node(i).landmark_stride();
    stride_max = std::max(stride_max, c.node(i).landmark_stride());
    ++up_nodes;
    for (size_t t = 0; t < bytes_by_type.size(); ++t) {
      bytes_by_type[t] += static_cast<double>(k.bytes_sent_by_type[t]);
    }
  }
  // Survivors that never declared the killed node dead, and what they believed instead.
  nlohmann::json undetected = nlohmann::json::array();
  for (int k = 0; killed && detect_s < 0 && k < n; ++k) {
    if (k == victim || !c.up(k)) continue;
    const auto v = c.node(k).Member(GossipCluster::Name(victim));
    if (v && (v->state == gossip::MemberState::kDead || v->generation > 1)) continue;
    nlohmann::json u = {{"observer", GossipCluster::Name(k)}, {"knows_it", v.has_value()}};
    if (v) {
      u["state"] = std::string(gossip::MemberStateName(v->state));
      u["incarnation"] = v->incarnation;
      u["state_for_s"] = ToSeconds(c.Now() - v->state_since);
      u["heard_ago_s"] = ToSeconds(c.Now() - v->last_heard);
    }
    undetected.push_back(u);
    if (undetected.size() >= 10) break;
  }
  // The detection timeline, relative to the kill: first accusation, the time every survivor
  // suspected (or had declared) it, first and last verdicts, and the last decider's own wait.
  nlohmann::json detect_trace = nlohmann::json::object();
  if (killed) {
    const TimePoint kill_time{kill_at};
    auto rel = [&](TimePoint tp) { return ToSeconds(tp - kill_time); };
    std::optional<TimePoint> first_suspect, all_suspect, first_dead;
    int last = -1;
    bool everyone = true;
    for (int k = 0; k < n; ++k) {
      if (k == victim || !c.up(k)) continue;
      const auto& su = victim_suspect[static_cast<size_t>(k)];
      const auto& de = victim_dead[static_cast<size_t>(k)];
      const std::optional<TimePoint> heard = su ? su : de;
      if (heard && (!first_suspect || *heard < *first_suspect)) first_suspect = heard;
      if (!heard) everyone = false;
      if (heard && (!all_suspect || *heard > *all_suspect)) all_suspect = heard;
      if (de && (!first_dead || *de < *first_dead)) first_dead = de;
      if (de && (last < 0 || *de > *victim_dead[static_cast<size_t>(last)])) last = k;
    }
    if (first_suspect) detect_trace["first_suspect_s"] = rel(*first_suspect);
    if (all_suspect && everyone) detect_trace["all_suspect_s"] = rel(*all_suspect);
    if (first_dead) detect_trace["first_dead_s"] = rel(*first_dead);
    if (last >= 0) {
      const auto& su = victim_suspect[static_cast<size_t>(last)];
      const TimePoint de = *victim_dead[static_cast<size_t>(last)];
      detect_trace["last_observer"] = GossipCluster::Name(last);
      detect_trace["last_dead_s"] = rel(de);
      if (su) {
        detect_trace["last_suspect_s"] = rel(*su);
        detect_trace["last_wait_s"] = ToSeconds(de - *su);
      }
    }
  }
  nlohmann::json j;
  j["nodes"] = n;
  j["detect_trace"] = detect_trace;
  j["undetected_by"] = undetected;
  j["loss"] = o.loss;
  j["duration_s"] = o.duration_s;
  j["churn"] = o.churn;
  j["seed"] = o.seed;
  j["landmark_stride"] = o.landmark_stride;
  j["share_replicas"] = o.share_replicas;
  j["cache_blocks"] = o.cache_blocks;
  j["convergence_p99_s"] = Percentile(convergence, 0.5);
  j["convergence_p99_s_tail"] = Percentile(convergence, 0.99);
  j["convergence_samples"] = convergence.size();
  j["convergence_censored"] = censored;
  j["detect_s"] = detect_s;
  j["false_deaths"] = false_deaths;
  j["false_death_trace"] = false_death_trace;
  j["false_suspicions"] = cleared_suspicions.size();
  j["false_suspicion_s_p50"] = Percentile(cleared_suspicions, 0.5);
  j["false_suspicion_s_p99"] = Percentile(cleared_suspicions, 0.99);
  j["false_suspicion_s_max"] = Percentile(cleared_suspicions, 1.0);
  j["bytes_per_node_s"] = (bytes_after - bytes_before) / node_seconds;
  j["msgs_per_node_s"] = (msgs_after - msgs_before) / node_seconds;
  j["summary_accuracy"] = acc_total ? static_cast<double>(acc_ok) / acc_total : -1;
  j["summary_exact"] = acc_total ? static_cast<double>(acc_exact) / acc_total : -1;
  j["summary_mean_abs_error_blocks"] = acc_total ? acc_abs_err / acc_total : -1;
  j["summary_stride_mean"] = acc_total ? acc_stride_sum / acc_total : -1;
  // What each surviving node received per second of the measured window.
  const double window_node_s = (n - 1) * o.duration_s;
  j["window_received_per_node_s"] = {
      {"run_entries", static_cast<double>(window.entries) / window_node_s},
      {"run_entries_redundant", static_cast<double>(window.redundant) / window_node_s},
      {"runs_applied", static_cast<double>(window.runs) / window_node_s},
      {"snapshots_applied", static_cast<double>(window.snapshots) / window_node_s},
      {"deltas_stale", static_cast<double>(window.stale) / window_node_s}};
  j["landmark_budget_members"] = o.landmark_budget_members;
  j["landmark_stride_mean"] = up_nodes ? stride_sum / up_nodes : 0.0;
  j["landmark_stride_max"] = stride_max;
  j["restrides"] = restrides;
  j["deltas_stride_mismatch"] = stride_mismatches;
  j["stride_runs_applied"] = stride_runs;
  j["summary_queries"] = acc_total;
  j["summary_queries_with_match"] = acc_nonzero;
  j["events_per_node_s"] = static_cast<double>(events_total) / (n * ToSeconds(end));
  j["snapshots_sent"] = snapshots;
  j["deltas_gap"] = gaps;
  j["deltas_stale"] = stale;
  j["entries_received"] = entries;
  j["entries_redundant"] = redundant;
  // Failure-detector health (over the whole run, survivors only): the share of probes that
  // failed, the share saved by hearing from the target, refutations per node, and the local
  // health score (0..8, probe interval multiplier - 1) over the measured window.
  j["probe_failure_share"] = probes ? static_cast<double>(probe_failures) / probes : 0.0;
  j["probe_heard_share"] = probes ? static_cast<double>(probes_heard) / probes : 0.0;
  j["probe_relayed_share"] = probes ? static_cast<double>(probes_relayed) / probes : 0.0;
  j["refutations_per_node"] = static_cast<double>(refutations) / n;
  j["evidence_notices_per_node"] = static_cast<double>(evidence_notices) / n;
  j["silence_probe_mult"] = o.silence_probe_mult;
  j["silence_probes_per_node"] = static_cast<double>(silence_probes) / n;
  j["local_health_mean"] = health_samples ? health_sum / static_cast<double>(health_samples) : 0.0;
  j["local_health_max"] = health_max;
  j["stream_msg_share"] = msgs ? static_cast<double>(streamed) / static_cast<double>(msgs) : 0.0;
  // Share of all bytes sent over the whole run (warm-up included), by message type.
  nlohmann::json shares = nlohmann::json::object();
  double all_bytes = 0;
  for (double b : bytes_by_type) all_bytes += b;
  for (uint8_t t = 1; t <= gossip::kMaxMsgType; ++t) {
    if (bytes_by_type[t] > 0 && all_bytes > 0) {
      shares[std::string(gossip::MsgTypeName(static_cast<gossip::MsgType>(t)))] =
          std::round(1000 * bytes_by_type[t] / all_bytes) / 1000;
    }
  }
  j["bytes_share_by_type"] = shares;
  // The measured window's bytes per node-second by message type (as bytes_per_node_s), and of
  // them the piggybacked membership updates (body bytes).
  nlohmann::json window_types = nlohmann::json::object();
  for (uint8_t t = 1; t <= gossip::kMaxMsgType; ++t) {
    const double b = window_types_after[t] - window_types_before[t];
    if (b > 0) {
      window_types[std::string(gossip::MsgTypeName(static_cast<gossip::MsgType>(t)))] =
          b / node_seconds;
    }
  }
  j["window_bytes_per_node_s_by_type"] = window_types;
  j["window_update_bytes_per_node_s"] =
      (window_types_after[0] - window_types_before[0]) / node_seconds;
  return j;
}

}  // namespace hearsay::sim
