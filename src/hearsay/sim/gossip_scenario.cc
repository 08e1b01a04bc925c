#include "hearsay/sim/gossip_scenario.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

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

}  // namespace

GossipScenarioResult RunGossipScenario(uint64_t seed, const GossipScenarioOptions& options) {
  GossipScenarioResult result;
  result.seed = seed;
  Rng rng(seed ^ 0x5eed5eed5eedULL);
  const int n = static_cast<int>(rng.UniformInt(options.min_nodes, options.max_nodes));
  simenv::LinkFaults faults;
  faults.latency = simenv::LatencyModel::Uniform(1ms, 10ms);
  faults.loss = options.fixed_loss >= 0 ? options.fixed_loss : rng.Uniform(0, 0.3);
  faults.duplicate = rng.Uniform(0, 0.5);
  faults.reorder = rng.Bernoulli(0.5) ? rng.Uniform(0, 0.3) : 0;
  faults.reorder_window = 50ms;
  const GossipFault fault = static_cast<GossipFault>(
      options.fault >= 0 ? options.fault : static_cast<int>(rng.Below(kNumGossipFaults)));
  const int victim = static_cast<int>(rng.Below(static_cast<uint64_t>(n)));
  const int second = static_cast<int>(rng.Below(static_cast<uint64_t>(n)));
  const int split = 1 + static_cast<int>(rng.Below(static_cast<uint64_t>(n / 2)));  // minority
  const Duration slow_delay = FromMillis(rng.Uniform(150, 400));
  const double scale = std::max(1.0, options.length_scale);
  const Duration warmup = 4s;
  const Duration fault_at = 5s;
  const Duration heal_at = std::chrono::duration_cast<Duration>(15s * scale);
  const Duration end = heal_at + options.converge_bound + 1s;

  char plan[256];
  std::snprintf(plan, sizeof plan,
                "seed=%llu nodes=%d loss=%.3f dup=%.3f reorder=%.3f fault=%s victim=n%d "
                "second=n%d minority=%d slow_ms=%.0f scale=%.1f",
                static_cast<unsigned long long>(seed), n, faults.loss, faults.duplicate,
                faults.reorder, FaultName(fault), victim, second, split, ToMillis(slow_delay),
                scale);
  result.plan = plan;

  GossipCluster::Options co;
  co.nodes = n;
  co.seed = seed;
  co.faults = faults;
  co.secure = options.secure;
  co.config.landmark_stride = 4;
  co.config.min_tombstones = 32;
  if (options.landmark_budget_members > 0) {
    co.config.landmark_budget_members = options.landmark_budget_members;
  }
  GossipCluster c(co);
  GossipInvariants inv(c);
  c.StartAll();

  // Minority group for partitions: nodes [0, split) after a rotation by victim.
  std::vector<Address> minority, majority;
  for (int k = 0; k < n; ++k) {
    const int i = (victim + k) % n;
    (k < split ? minority : majority).push_back(GossipCluster::Name(i));
    if (k < split && (fault == GossipFault::kPartition || fault == GossipFault::kOneWayPartition)) {
      inv.MarkUnhealthy(i);
    }
  }
  if (fault == GossipFault::kPartition || fault == GossipFault::kOneWayPartition) {
    // The majority may legitimately declare the cut-off minority dead: mark it unhealthy for
    // observers on both sides, but a majority node declaring a majority node dead still fails.
  }
  if (fault == GossipFault::kSlowNode) {
    for (int k = 0; k < n; ++k) {
      if (k == victim) continue;
      simenv::LinkFaults slow = faults;
      slow.latency = simenv::LatencyModel::Uniform(slow_delay, slow_delay + 10ms);
      c.net()
          .SetLinkFaults(GossipCluster::Name(victim), GossipCluster::Name(k), slow)
          .IgnoreError();
    }
  }

  const Duration step = 100ms;
  const bool trace = std::getenv("HEARSAY_GOSSIP_TRACE") != nullptr;
  Duration t{};
  uint64_t key_base = 1;
  bool healed = false;
  Generation killed_generation = 0;
  TimePoint restart_due{};
  bool restart_pending = false;
  std::vector<int> restart_list;
  while (t < end) {
    // Work: while before healing, every up node changes its cache and load a little.
    if (t < heal_at) {
      for (int i = 0; i < n; ++i) {
        if (!c.up(i)) continue;
        std::vector<prefix::BlockEvent> ev;
        for (int e = 0; e < 4; ++e) {
          const uint64_t k = rng.Below(64);
          const bool add = rng.Bernoulli(0.6);
          ev.push_back({add ? prefix::BlockEvent::Kind::kAdded : prefix::BlockEvent::Kind::kRemoved,
                        (static_cast<uint64_t>(i) << 32) + k * 4 + key_base,
                        static_cast<uint32_t>((k % 8) * 4)});
        }
        c.node(i).PublishCacheEvents(ev);
        if (rng.Bernoulli(0.2)) {
          gossip::LoadReport l;
          l.queue_depth = static_cast<uint32_t>(rng.Below(100));
          l.running = static_cast<uint32_t>(rng.Below(16));
          c.node(i).SetLoad(l);
        }
      }
    }
    // Faults.
    if (t == fault_at) {
      switch (fault) {
        case GossipFault::kPartition:
          c.net().Partition({minority, majority});
          break;
        case GossipFault::kOneWayPartition:
          for (const auto& a : minority) {
            for (const auto& b : majority) c.net().BlockLink(a, b);
          }
          break;
        case GossipFault::kCrashRestart:
          restart_list = {victim};
          if (second != victim) restart_list.push_back(second);
          for (int i : restart_list) c.Crash(i);
          restart_due = c.Now() + 3s;
          restart_pending = true;
          break;
        case GossipFault::kMassRestart:
          for (int i = 0; i < n; ++i) c.Crash(i);
          for (int i = 0; i < n; ++i) restart_list.push_back(i);
          restart_due = c.Now() + 2s;
          restart_pending = true;
          break;
        case GossipFault::kKill:
          killed_generation = c.generation(victim);
          c.Crash(victim);
          break;
        case GossipFault::kLeave:
          c.Leave(victim);
          break;
        case GossipFault::kNone:
        case GossipFault::kSlowNode:
          break;
      }
    }
    if (restart_pending && c.Now() >= restart_due) {
      for (int i : restart_list) c.Restart(i);
      restart_pending = false;
    }
    if (!healed && t >= heal_at) {
      c.net().HealAll();
      inv.SetConvergenceTarget();
      healed = true;
    }
    // Detection of the killed (or departed) node.
    if ((fault == GossipFault::kKill || fault == GossipFault::kLeave) && result.detect_s < 0 &&
        t > fault_at) {
      const Generation g = fault == GossipFault::kKill ? killed_generation : c.generation(victim);
      if (inv.AllSeeDead(victim, g)) result.detect_s = ToSeconds(t - fault_at);
      if (t - fault_at > options.detect_bound) {
        result.violations.push_back("n" + std::to_string(victim) + " not declared " +
                                    (fault == GossipFault::kKill ? "dead" : "left") +
                                    " by all within the bound");
        result.detect_s = 1e9;
      }
    }
    if (fault == GossipFault::kLeave && t > fault_at) {
      for (int k = 0; k < n; ++k) {
        if (k == victim || !c.up(k)) continue;
        auto v = c.node(k).Member(GossipCluster::Name(victim));
        if (v && v->state == gossip::MemberState::kDead) {
          result.violations.push_back("n" + std::to_string(k) + " saw the leaving node as dead");
          break;
        }
      }
    }
    // Convergence after healing.
    if (healed && result.converge_s < 0 && inv.Converged()) {
      result.converge_s = ToSeconds(t - heal_at);
    }
    if (trace && (t.count() % 1'000'000'000 == 0)) {
      std::string line = "t=" + std::to_string(ToSeconds(t)) + " n" + std::to_string(victim) + ":";
      for (int k = 0; k < n; ++k) {
        if (k == victim || !c.up(k)) continue;
        auto v = c.node(k).Member(GossipCluster::Name(victim));
        line += " n" + std::to_string(k) + "=" +
                (v ? std::string(gossip::MemberStateName(v->state)) + "/" +
                         std::to_string(v->incarnation)
                   : "?") +
                "/lh" + std::to_string(c.node(k).local_health());
      }
      std::printf("%s\n", line.c_str());
    }
    c.RunFor(step);
    t += step;
    inv.Check();
    if (inv.violations().size() + result.violations.size() > 5) break;
  }
  if (result.converge_s < 0) {
    std::string why;
    inv.Converged(&why);
    result.violations.push_back("no convergence within the bound after healing: " + why);
  }
  for (const auto& v : inv.violations()) {
    if (v.find("declared healthy") != std::string::npos) ++result.false_deaths;
    result.violations.push_back(v);
  }
  result.trace_hash = c.scheduler().trace_hash();
  return result;
}

}  // namespace hearsay::sim
