#include "hearsay/sim/gossip_scenario.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hearsay/sim/gossip_cluster.h"

namespace hearsay::sim {
namespace {

using namespace std::chrono_literals;

const char* FaultName(GossipFault f) {
  switch (f) {
    case GossipFault::kNone:
      return "none";
    case GossipFault::kPartition:
      return "partition";
    case GossipFault::kOneWayPartition:
      return "one-way-partition";
    case GossipFault::kCrashRestart:
      return "crash-restart";
    case GossipFault::kMassRestart:
      return "mass-restart";
    case GossipFault::kSlowNode:
      return "slow-node";
    case GossipFault::kKill:
      return "kill";
    case GossipFault::kLeave:
      return "leave";
  }
  return "?";
}

// What a seed draws: the cluster, its link faults, the fault and when things happen.
struct Plan {
  int n = 0;
  simenv::LinkFaults faults;
  GossipFault fault = GossipFault::kNone;
  int victim = 0;
  int second = 0;
  int split = 0;  // the minority's size
  Duration slow_delay{};
  double scale = 1;
  Duration fault_at{};
  Duration heal_at{};
  Duration end{};
};

Plan DrawPlan(const GossipScenarioOptions& options, Rng& rng) {
  Plan p;
  p.n = static_cast<int>(rng.UniformInt(options.min_nodes, options.max_nodes));
  p.faults.latency = simenv::LatencyModel::Uniform(1ms, 10ms);
  p.faults.loss = options.fixed_loss >= 0 ? options.fixed_loss : rng.Uniform(0, 0.3);
  p.faults.duplicate = rng.Uniform(0, 0.5);
  p.faults.reorder = rng.Bernoulli(0.5) ? rng.Uniform(0, 0.3) : 0;
  p.faults.reorder_window = 50ms;
  p.fault = static_cast<GossipFault>(
      options.fault >= 0 ? options.fault : static_cast<int>(rng.Below(kNumGossipFaults)));
  p.victim = static_cast<int>(rng.Below(static_cast<uint64_t>(p.n)));
  p.second = static_cast<int>(rng.Below(static_cast<uint64_t>(p.n)));
  p.split = 1 + static_cast<int>(rng.Below(static_cast<uint64_t>(p.n / 2)));  // minority
  p.slow_delay = FromMillis(rng.Uniform(150, 400));
  p.scale = std::max(1.0, options.length_scale);
  p.fault_at = 5s;
  p.heal_at = std::chrono::duration_cast<Duration>(15s * p.scale);
  p.end = p.heal_at + options.converge_bound + 1s;
  return p;
}

std::string Describe(uint64_t seed, const Plan& p) {
  char plan[256];
  std::snprintf(plan, sizeof plan,
                "seed=%llu nodes=%d loss=%.3f dup=%.3f reorder=%.3f fault=%s victim=n%d "
                "second=n%d minority=%d slow_ms=%.0f scale=%.1f",
                static_cast<unsigned long long>(seed), p.n, p.faults.loss, p.faults.duplicate,
                p.faults.reorder, FaultName(p.fault), p.victim, p.second, p.split,
                ToMillis(p.slow_delay), p.scale);
  return plan;
}

GossipCluster::Options ClusterOptions(uint64_t seed, const GossipScenarioOptions& options,
                                      const Plan& p) {
  GossipCluster::Options co;
  co.nodes = p.n;
  co.seed = seed;
  co.faults = p.faults;
  co.secure = options.secure;
  co.config.landmark_stride = 4;
  co.config.min_tombstones = 32;
  co.config.signatures = options.signatures;
  if (options.landmark_budget_members > 0) {
    co.config.landmark_budget_members = options.landmark_budget_members;
  }
  return co;
}

// One run of a plan: the cluster, the fault driven at its time, and the checks at every step.
class ScenarioRun {
 public:
  ScenarioRun(uint64_t seed, const GossipScenarioOptions& options, const Plan& plan, Rng& rng,
              GossipScenarioResult* result)
      : options_(options),
        p_(plan),
        rng_(rng),
        result_(*result),
        c_(ClusterOptions(seed, options, plan)),
        inv_(c_) {}

  void Run() {
    c_.StartAll();
    SplitGroups();
    const Duration step = 100ms;
    const bool trace = std::getenv("HEARSAY_GOSSIP_TRACE") != nullptr;
    for (Duration t{}; t < p_.end;) {
      // Work: while before healing, every up node changes its cache and load a little.
      if (t < p_.heal_at) Work();
      if (t == p_.fault_at) InjectFault();
      if (restart_pending_ && c_.Now() >= restart_due_) {
        for (int i : restart_list_) c_.Restart(i);
        restart_pending_ = false;
      }
      if (!healed_ && t >= p_.heal_at) {
        c_.net().HealAll();
        inv_.SetConvergenceTarget();
        healed_ = true;
      }
      CheckDeparture(t);
      // Convergence after healing.
      if (healed_ && result_.converge_s < 0 && inv_.Converged()) {
        result_.converge_s = ToSeconds(t - p_.heal_at);
      }
      if (trace && (t.count() % 1'000'000'000 == 0)) PrintTrace(t);
      c_.RunFor(step);
      t += step;
      inv_.Check();
      if (inv_.violations().size() + result_.violations.size() > 5) break;
    }
    Finish();
  }

 private:
  bool Partitioned() const {
    return p_.fault == GossipFault::kPartition || p_.fault == GossipFault::kOneWayPartition;
  }

  // The minority group for partitions: nodes [0, split) after a rotation by victim. The majority
  // may legitimately declare the cut-off minority dead: it is marked unhealthy for observers on
  // both sides, but a majority node declaring a majority node dead still fails. A slow node gets
  // its slow links.
  void SplitGroups() {
    for (int k = 0; k < p_.n; ++k) {
      const int i = (p_.victim + k) % p_.n;
      (k < p_.split ? minority_ : majority_).push_back(GossipCluster::Name(i));
      if (k < p_.split && Partitioned()) inv_.MarkUnhealthy(i);
    }
    if (p_.fault != GossipFault::kSlowNode) return;
    for (int k = 0; k < p_.n; ++k) {
      if (k == p_.victim) continue;
      simenv::LinkFaults slow = p_.faults;
      slow.latency = simenv::LatencyModel::Uniform(p_.slow_delay, p_.slow_delay + 10ms);
      c_.net()
          .SetLinkFaults(GossipCluster::Name(p_.victim), GossipCluster::Name(k), slow)
          .IgnoreError();
    }
  }

  void Work() {
    for (int i = 0; i < p_.n; ++i) {
      if (!c_.up(i)) continue;
      std::vector<prefix::BlockEvent> ev;
      for (int e = 0; e < 4; ++e) {
        const uint64_t k = rng_.Below(64);
        const bool add = rng_.Bernoulli(0.6);
        ev.push_back({add ? prefix::BlockEvent::Kind::kAdded : prefix::BlockEvent::Kind::kRemoved,
                      (static_cast<uint64_t>(i) << 32) + k * 4 + key_base_,
                      static_cast<uint32_t>((k % 8) * 4)});
      }
      c_.node(i).PublishCacheEvents(ev);
      if (rng_.Bernoulli(0.2)) {
        gossip::LoadReport l;
        l.queue_depth = static_cast<uint32_t>(rng_.Below(100));
        l.running = static_cast<uint32_t>(rng_.Below(16));
        c_.node(i).SetLoad(l);
      }
    }
  }

  void InjectFault() {
    switch (p_.fault) {
      case GossipFault::kPartition:
        c_.net().Partition({minority_, majority_});
        break;
      case GossipFault::kOneWayPartition:
        for (const auto& a : minority_) {
          for (const auto& b : majority_) c_.net().BlockLink(a, b);
        }
        break;
      case GossipFault::kCrashRestart:
        restart_list_ = {p_.victim};
        if (p_.second != p_.victim) restart_list_.push_back(p_.second);
        for (int i : restart_list_) c_.Crash(i);
        restart_due_ = c_.Now() + 3s;
        restart_pending_ = true;
        break;
      case GossipFault::kMassRestart:
        for (int i = 0; i < p_.n; ++i) c_.Crash(i);
        for (int i = 0; i < p_.n; ++i) restart_list_.push_back(i);
        restart_due_ = c_.Now() + 2s;
        restart_pending_ = true;
        break;
      case GossipFault::kKill:
        killed_generation_ = c_.generation(p_.victim);
        c_.Crash(p_.victim);
        break;
      case GossipFault::kLeave:
        c_.Leave(p_.victim);
        break;
      case GossipFault::kNone:
      case GossipFault::kSlowNode:
        break;
    }
  }

  // Detection of the killed (or departed) node, and no departed node seen as dead.
  void CheckDeparture(Duration t) {
    const GossipFault fault = p_.fault;
    const int victim = p_.victim;
    if ((fault == GossipFault::kKill || fault == GossipFault::kLeave) && result_.detect_s < 0 &&
        t > p_.fault_at) {
      const Generation g = fault == GossipFault::kKill ? killed_generation_ : c_.generation(victim);
      if (inv_.AllSeeDead(victim, g)) result_.detect_s = ToSeconds(t - p_.fault_at);
      if (t - p_.fault_at > options_.detect_bound) {
        result_.violations.push_back(GossipCluster::Name(victim) + " not declared " +
                                     (fault == GossipFault::kKill ? "dead" : "left") +
                                     " by all within the bound");
        result_.detect_s = 1e9;
      }
    }
    if (fault == GossipFault::kLeave && t > p_.fault_at) {
      for (int k = 0; k < p_.n; ++k) {
        if (k == victim || !c_.up(k)) continue;
        auto v = c_.node(k).Member(GossipCluster::Name(victim));
        if (v && v->state == gossip::MemberState::kDead) {
          result_.violations.push_back(GossipCluster::Name(k) + " saw the leaving node as dead");
          break;
        }
      }
    }
  }

  void PrintTrace(Duration t) {
    const int victim = p_.victim;
    std::string line = "t=" + std::to_string(ToSeconds(t)) + " n" + std::to_string(victim) + ":";
    for (int k = 0; k < p_.n; ++k) {
      if (k == victim || !c_.up(k)) continue;
      auto v = c_.node(k).Member(GossipCluster::Name(victim));
      line +=
          " n" + std::to_string(k) + "=" +
          (v ? std::string(gossip::MemberStateName(v->state)) + "/" + std::to_string(v->incarnation)
             : "?") +
          "/lh" + std::to_string(c_.node(k).local_health());
    }
    std::printf("%s\n", line.c_str());
  }

  void Finish() {
    if (result_.converge_s < 0) {
      std::string why;
      inv_.Converged(&why);
      result_.violations.push_back("no convergence within the bound after healing: " + why);
    }
    for (const auto& v : inv_.violations()) {
      if (v.find("declared healthy") != std::string::npos) ++result_.false_deaths;
      result_.violations.push_back(v);
    }
    result_.trace_hash = c_.scheduler().trace_hash();
  }

  const GossipScenarioOptions& options_;
  const Plan& p_;
  Rng& rng_;
  GossipScenarioResult& result_;
  GossipCluster c_;
  GossipInvariants inv_;
  std::vector<Address> minority_, majority_;
  const uint64_t key_base_ = 1;
  bool healed_ = false;
  Generation killed_generation_ = 0;
  TimePoint restart_due_{};
  bool restart_pending_ = false;
  std::vector<int> restart_list_;
};

}  // namespace

GossipScenarioResult RunGossipScenario(uint64_t seed, const GossipScenarioOptions& options) {
  GossipScenarioResult result;
  result.seed = seed;
  Rng rng(seed ^ 0x5eed5eed5eedULL);
  const Plan plan = DrawPlan(options, rng);
  result.plan = Describe(seed, plan);
  ScenarioRun(seed, options, plan, rng, &result).Run();
  return result;
}

}  // namespace hearsay::sim
