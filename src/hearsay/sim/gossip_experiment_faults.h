// The gossip experiment's fault driver (gossip_experiment.h): it kills one node a third of the way
// in, times how long the survivors take to declare it dead, and watches every membership change
// for what goes wrong on healthy members (suspicions, false deaths) and why.
//
// Thread-safety: none; driven from the experiment's single thread.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "hearsay/common/ids.h"
#include "hearsay/env/time.h"
#include "hearsay/gossip/types.h"
#include "hearsay/sim/gossip_cluster.h"

namespace hearsay::sim::gossip_experiment {

class TrafficMeter;

class FaultDriver {
 public:
  // `nodes` nodes, of which `victim` dies at `kill_at` (virtual time since the start).
  FaultDriver(int nodes, int victim, Duration kill_at);

  int victim() const { return victim_; }
  Duration kill_at() const { return kill_at_; }
  bool killed() const { return killed_; }
  // Seconds from the kill until every survivor declared the victim dead; -1 until then.
  double detect_s() const { return detect_s_; }

  // Watches the cluster `c` from now on (before that, changes are ignored).
  void Bind(const GossipCluster* c) { cluster_ = c; }
  // GossipCluster::Options::on_member_changed.
  void OnMemberChanged(int observer, const NodeId& id, Generation g, gossip::MemberState s);

  // After the step that ends at `t` (`end`: the end of the measured window): kills the victim
  // when its time has come (its traffic counted into `traffic` first), then checks detection.
  void AfterStep(Duration t, Duration end, GossipCluster& c, TrafficMeter& traffic);

  uint64_t false_deaths() const { return false_deaths_; }
  // Each false death, with what explains it.
  const nlohmann::json& false_death_trace() const { return false_death_trace_; }
  // How long each suspicion of a healthy member lasted before its refutation arrived, in s.
  const std::vector<double>& cleared_suspicions() const { return cleared_suspicions_; }

  // Survivors that never declared the victim dead, and what they believed instead (at most 10).
  nlohmann::json Undetected(const GossipCluster& c) const;
  // The detection timeline, relative to the kill.
  nlohmann::json DetectTrace(const GossipCluster& c) const;

 private:
  // True when survivor k has declared the victim dead, or knows a later life of it.
  bool Declared(const GossipCluster& c, int k) const;

  const int n_;
  const int victim_;
  const Duration kill_at_;
  const GossipCluster* cluster_ = nullptr;
  bool killed_ = false;
  double detect_s_ = -1;
  uint64_t false_deaths_ = 0;
  // Each false death, with what explains it: how long the observer suspected the member, the
  // incarnation it knew against the member's own (higher: a refutation was made but did not
  // reach the observer in time; equal: the member never learned of its suspicion), and when
  // the observer last heard from it.
  nlohmann::json false_death_trace_ = nlohmann::json::array();
  std::map<std::pair<int, int>, TimePoint> suspected_at_;
  // How long each suspicion of a healthy member lasted before its refutation reached the
  // observer: the margin the minimum suspicion timeout leaves against a false death.
  std::map<std::pair<int, int>, TimePoint> open_suspicions_;
  std::vector<double> cleared_suspicions_;
  // Where the killed node's detection time goes: when each survivor began to suspect it and
  // when it declared it dead (first life only; the victim never restarts).
  std::vector<std::optional<TimePoint>> victim_suspect_;
  std::vector<std::optional<TimePoint>> victim_dead_;
};

}  // namespace hearsay::sim::gossip_experiment
