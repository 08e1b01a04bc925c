#include "hearsay/launch/status_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace hearsay::launch {
namespace {

using nlohmann::json;

// `j[key]` as a number printed with `digits` decimals, "-" when absent or not a number.
std::string Num(const json& j, const char* key, int digits = 0, double scale = 1) {
  if (!j.is_object()) return "-";
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return "-";
  return fmt::format("{:.{}f}", it->get<double>() * scale, digits);
}

std::string Str(const json& j, const char* key) {
  if (!j.is_object()) return "-";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "-";
}

std::string Percent(const json& load, const char* part) {
  if (!load.is_object()) return "-";
  const double cap = load.value("kv_capacity_tokens", 0.0);
  if (cap <= 0 || !load.contains(part) || !load[part].is_number()) return "-";
  return fmt::format("{:.1f}", 100 * load[part].get<double>() / cap);
}

}  // namespace

std::string RenderStatusTable(const json& s, const std::map<std::string, json>& peers) {
  std::string out;
  const json& members = s.contains("members") ? s["members"] : json::array();
  int alive = 0;
  for (const json& m : members) alive += Str(m, "state") == "alive" ? 1 : 0;
  out += fmt::format("node {} · model {} · policy {} · health {} · {} members, {} alive\n\n",
                     Str(s, "node"), Str(s, "model"), Str(s, "policy"),
                     s.value("draining", false) ? "draining" : Str(s, "health"), members.size(),
                     alive);
  out += fmt::format(
      "{:<24} {:<8} {:>7} {:>7} {:>6} {:>5} {:>7} {:>7} {:>4} {:>6} | {:>6} {:>6} "
      "{:>6} {:>6} {:>9} {:>9}\n",
      "MEMBER", "STATE", "RTT ms", "WAIT ms", "QUEUED", "RUN", "KV use%", "KV pin%", "OVL", "AGE s",
      "REQS", "LOCAL", "FWD", "HIT %", "TTFT p50", "TTFT p99");
  for (const json& m : members) {
    const std::string id = Str(m, "id");
    const json& load = m.contains("load") ? m["load"] : json();
    const json* routing = nullptr;
    if (m.value("self", false)) {
      routing = s.contains("routing") ? &s["routing"] : nullptr;
    } else if (auto p = peers.find(id); p != peers.end() && p->second.contains("routing")) {
      routing = &p->second["routing"];
    }
    const json none;
    const json& r = routing ? *routing : none;
    std::string name = id + (m.value("self", false) ? " *" : "");
    if (name.size() > 24) name = name.substr(0, 23) + "~";
    out += fmt::format(
        "{:<24} {:<8} {:>7} {:>7} {:>6} {:>5} {:>7} {:>7} {:>4} {:>6} | {:>6} {:>6} {:>6} {:>6} "
        "{:>9} {:>9}\n",
        name, Str(m, "state"), Num(m, "rtt_ms", 2), Num(load, "queue_wait_ms", 1),
        Num(load, "queue_depth"), Num(load, "running"), Percent(load, "kv_used_tokens"),
        Percent(load, "kv_pinned_tokens"), m.value("overloaded", false) ? "yes" : "no",
        Num(m, "report_age_ms", 1, 0.001), Num(r, "requests"), Num(r, "served_local"),
        Num(r, "forwarded"), Num(r, "hit_rate", 1, 100), Num(r, "ttft_p50_ms", 1),
        Num(r, "ttft_p99_ms", 1));
  }
  out +=
      "\n* this node. Load from gossip (AGE: how old the report is); REQS, LOCAL, FWD: client "
      "requests entering at the node in the last 60 s, served there, forwarded; HIT: cached / "
      "prompt tokens; '-': unknown or that node's /status not reachable.\n";

  // What each member serves, from its gossiped service.
  out += "\nmodels (member: what it serves)\n";
  for (const json& m : members) {
    std::string models;
    if (m.contains("models") && m["models"].is_array()) {
      for (const json& name : m["models"]) {
        if (!name.is_string()) continue;
        models += (models.empty() ? "" : ", ") + name.get<std::string>();
      }
    }
    out += fmt::format("  {}{}: {}\n", Str(m, "id"), m.value("self", false) ? " *" : "",
                       models.empty() ? "-" : models);
  }

  // Who forwarded to whom, from every /status that could be read.
  std::vector<std::string> lines;
  auto add_row = [&](const std::string& from, const json& st) {
    if (!st.contains("routing") || !st["routing"].contains("served_by")) return;
    for (const auto& [to, n] : st["routing"]["served_by"].items()) {
      if (to != from && n.is_number()) {
        lines.push_back(fmt::format("  {} -> {}: {}", from, to, n.get<uint64_t>()));
      }
    }
  };
  add_row(Str(s, "node"), s);
  for (const auto& [id, st] : peers) add_row(id, st);
  out += "\nforwards, last 60 s (entry -> served by: requests)\n";
  if (lines.empty()) out += "  none\n";
  for (const std::string& l : lines) out += l + "\n";
  if (s.contains("routing")) {
    out += fmt::format("bounces {} · retries {} (this node, last 60 s)\n",
                       Num(s["routing"], "bounces"), Num(s["routing"], "retries"));
  }
  if (s.contains("gossip")) {
    const json& g = s["gossip"];
    out += fmt::format(
        "gossip: {} B/s sent, {} B/s received · oldest live view {} ms · suspicions {} (last 60 "
        "s), {} suspect now\n",
        Num(g, "bytes_sent_per_s"), Num(g, "bytes_received_per_s"), Num(g, "view_age_ms"),
        Num(g, "suspicions"), Num(g, "suspect_members"));
  }
  return out;
}

}  // namespace hearsay::launch
