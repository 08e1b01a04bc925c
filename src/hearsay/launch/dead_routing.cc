// The dead-routing invariant (see the header).
#include "hearsay/launch/dead_routing.h"

#include <nlohmann/json.hpp>
#include <set>

namespace hearsay::launch {

namespace {

bool DeclaredDead(const std::string& state) { return state == "dead" || state == "left"; }

}  // namespace

void DeadRoutingChecker::AddSample(double begin_ms, double end_ms,
                                   const std::vector<ClusterView>& views) {
  ++samples_;
  std::set<std::string> members;
  for (const ClusterView& v : views) {
    for (const MemberInfo& m : v.members) members.insert(m.node_id);
  }
  for (const std::string& member : members) {
    size_t viewers = 0;
    bool all_dead = true;
    for (const ClusterView& v : views) {
      if (v.self_id == member) continue;
      ++viewers;
      const MemberInfo* m = v.Find(member);
      if (m == nullptr || !DeclaredDead(m->state)) {
        all_dead = false;
        break;
      }
    }
    if (viewers == 0) continue;  // nobody else answered: this sample says nothing of it
    auto it = open_.find(member);
    if (all_dead) {
      if (it == open_.end()) {
        open_[member] = Open{end_ms, begin_ms};
      } else {
        it->second.to_ms = begin_ms;
      }
    } else if (it != open_.end()) {
      closed_.push_back({member, it->second.from_ms, it->second.to_ms});
      open_.erase(it);
    }
  }
}

std::vector<DeadSpan> DeadRoutingChecker::Spans() const {
  std::vector<DeadSpan> out = closed_;
  for (const auto& [member, open] : open_) out.push_back({member, open.from_ms, open.to_ms});
  return out;
}

std::vector<std::string> DeadRoutingChecker::Violations() const {
  const std::vector<DeadSpan> spans = Spans();
  std::vector<std::string> out;
  for (const Routing& r : routings_) {
    if (r.entry == r.member) continue;
    for (const DeadSpan& s : spans) {
      if (s.member != r.member || r.earliest_ms <= s.from_ms + grace_ms_ || r.latest_ms > s.to_ms) {
        continue;
      }
      out.push_back(r.what + ": " + r.entry + " routed a request to " + r.member + " " +
                    std::to_string(static_cast<long long>(r.earliest_ms - s.from_ms)) +
                    " ms after every other node had declared it dead (grace " +
                    std::to_string(static_cast<long long>(grace_ms_)) + " ms)");
      break;
    }
  }
  return out;
}

Result<std::vector<Routing>> RoutingsOfRecordLine(std::string_view line) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string()) {
    return InvalidArgumentError("a decision record line is not a JSON object with a \"kind\"");
  }
  std::vector<Routing> out;
  if (j["kind"] != "route") return out;
  const auto entry = j.find("entry");
  const auto arrived = j.find("arrived_ms");
  const auto attempts = j.find("attempts");
  if (entry == j.end() || !entry->is_string() || arrived == j.end() || !arrived->is_number() ||
      attempts == j.end() || !attempts->is_array()) {
    return InvalidArgumentError("a route record without entry, arrived_ms or attempts");
  }
  for (const nlohmann::json& a : *attempts) {
    const auto chosen = a.find("chosen");
    const auto at = a.find("at_ms");
    if (!a.is_object() || chosen == a.end() || !chosen->is_string() || at == a.end() ||
        !at->is_number()) {
      return InvalidArgumentError("a route attempt without chosen or at_ms");
    }
    const double when = arrived->get<double>() + at->get<double>();
    out.push_back(
        {entry->get<std::string>(), chosen->get<std::string>(), when, when, "decision record"});
  }
  return out;
}

}  // namespace hearsay::launch
