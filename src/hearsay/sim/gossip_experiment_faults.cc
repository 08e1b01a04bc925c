#include "hearsay/sim/gossip_experiment_faults.h"

#include <cstdlib>
#include <string>

#include "hearsay/sim/gossip_experiment_sampling.h"

namespace hearsay::sim::gossip_experiment {
namespace {

int IndexOf(const NodeId& id) { return std::atoi(id.c_str() + 1); }

}  // namespace

FaultDriver::FaultDriver(int nodes, int victim, Duration kill_at)
    : n_(nodes),
      victim_(victim),
      kill_at_(kill_at),
      victim_suspect_(static_cast<size_t>(nodes)),
      victim_dead_(static_cast<size_t>(nodes)) {}

void FaultDriver::OnMemberChanged(int observer, const NodeId& id, Generation g,
                                  gossip::MemberState s) {
  if (cluster_ == nullptr) return;
  const GossipCluster& c = *cluster_;
  const int j = IndexOf(id);
  if (j == victim_ && g == 1 && !c.up(j)) {
    auto& slot = s == gossip::MemberState::kSuspect ? victim_suspect_[static_cast<size_t>(observer)]
                                                    : victim_dead_[static_cast<size_t>(observer)];
    if ((s == gossip::MemberState::kSuspect || s == gossip::MemberState::kDead) && !slot) {
      slot = c.Now();
    }
    return;
  }
  if (j < 0 || j >= n_ || j == observer || !c.up(j) || c.generation(j) != g) return;
  const TimePoint now = c.Now();
  if (s == gossip::MemberState::kSuspect) {
    suspected_at_[{observer, j}] = now;
    open_suspicions_[{observer, j}] = now;
  }
  if (s == gossip::MemberState::kAlive) {
    auto open = open_suspicions_.find({observer, j});
    if (open != open_suspicions_.end()) {
      cleared_suspicions_.push_back(ToSeconds(now - open->second));
      open_suspicions_.erase(open);
    }
  }
  if (s != gossip::MemberState::kDead) return;
  open_suspicions_.erase({observer, j});
  ++false_deaths_;
  const auto view = c.node(observer).Member(id);
  auto since = suspected_at_.find({observer, j});
  const gossip::Node& obs = c.node(observer);
  false_death_trace_.push_back({
      {"t_s", ToSeconds(now.time_since_epoch())},
      {"observer", GossipCluster::Name(observer)},
      {"member", id},
      {"suspected_for_s", since == suspected_at_.end() ? -1.0 : ToSeconds(now - since->second)},
      {"incarnation_known", view ? view->incarnation : 0},
      {"incarnation_actual", c.node(j).incarnation()},
      {"heard_ago_s", view ? ToSeconds(now - view->last_heard) : -1.0},
      {"observer_local_health", obs.local_health()},
      {"member_local_health", c.node(j).local_health()},
      {"member_refutations", c.node(j).counters().refutations},
  });
}

bool FaultDriver::Declared(const GossipCluster& c, int k) const {
  const auto v = c.node(k).Member(GossipCluster::Name(victim_));
  return v && (v->state == gossip::MemberState::kDead || v->generation > 1);
}

void FaultDriver::AfterStep(Duration t, Duration end, GossipCluster& c, TrafficMeter& traffic) {
  if (!killed_ && t >= kill_at_) {
    killed_ = true;
    traffic.CountCrashed(c, victim_, t < end);
    c.Crash(victim_);
  }
  if (killed_ && detect_s_ < 0) {
    bool all = true;
    for (int k = 0; k < n_ && all; ++k) {
      if (k == victim_ || !c.up(k)) continue;
      all = Declared(c, k);
    }
    if (all) detect_s_ = ToSeconds(t - kill_at_);
  }
}

nlohmann::json FaultDriver::Undetected(const GossipCluster& c) const {
  nlohmann::json undetected = nlohmann::json::array();
  for (int k = 0; killed_ && detect_s_ < 0 && k < n_; ++k) {
    if (k == victim_ || !c.up(k)) continue;
    const auto v = c.node(k).Member(GossipCluster::Name(victim_));
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
  return undetected;
}

nlohmann::json FaultDriver::DetectTrace(const GossipCluster& c) const {
  // First accusation, the time every survivor suspected (or had declared) it, first and last
  // verdicts, and the last decider's own wait.
  nlohmann::json detect_trace = nlohmann::json::object();
  if (!killed_) return detect_trace;
  const TimePoint kill_time{kill_at_};
  auto rel = [&](TimePoint tp) { return ToSeconds(tp - kill_time); };
  std::optional<TimePoint> first_suspect, all_suspect, first_dead;
  int last = -1;
  bool everyone = true;
  for (int k = 0; k < n_; ++k) {
    if (k == victim_ || !c.up(k)) continue;
    const auto& su = victim_suspect_[static_cast<size_t>(k)];
    const auto& de = victim_dead_[static_cast<size_t>(k)];
    const std::optional<TimePoint> heard = su ? su : de;
    if (heard && (!first_suspect || *heard < *first_suspect)) first_suspect = heard;
    if (!heard) everyone = false;
    if (heard && (!all_suspect || *heard > *all_suspect)) all_suspect = heard;
    if (de && (!first_dead || *de < *first_dead)) first_dead = de;
    if (de && (last < 0 || *de > *victim_dead_[static_cast<size_t>(last)])) last = k;
  }
  if (first_suspect) detect_trace["first_suspect_s"] = rel(*first_suspect);
  if (all_suspect && everyone) detect_trace["all_suspect_s"] = rel(*all_suspect);
  if (first_dead) detect_trace["first_dead_s"] = rel(*first_dead);
  if (last >= 0) {
    const auto& su = victim_suspect_[static_cast<size_t>(last)];
    const TimePoint de = *victim_dead_[static_cast<size_t>(last)];
    detect_trace["last_observer"] = GossipCluster::Name(last);
    detect_trace["last_dead_s"] = rel(de);
    if (su) {
      detect_trace["last_suspect_s"] = rel(*su);
      detect_trace["last_wait_s"] = ToSeconds(de - *su);
    }
  }
  return detect_trace;
}

}  // namespace hearsay::sim::gossip_experiment
