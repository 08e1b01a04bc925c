#include "hearsay/sim/cluster_spec.h"

#include <algorithm>
#include <charconv>

#include "hearsay/engine/cost_model.h"

namespace hearsay::sim {

namespace {

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

bool ModelNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-' || c == '/';
}

Status Bad(std::string_view group, const std::string& what) {
  return InvalidArgumentError("--cluster group '" + std::string(group) + "': " + what);
}

}  // namespace

int ClusterSpec::nodes() const {
  int n = 0;
  for (const ClusterGroup& g : groups) n += g.count;
  return n;
}

const ClusterGroup& ClusterSpec::GroupOf(int node) const {
  for (const ClusterGroup& g : groups) {
    if (node < g.count) return g;
    node -= g.count;
  }
  return groups.back();
}

std::vector<std::string> ClusterSpec::Models() const {
  std::vector<std::string> out;
  for (const ClusterGroup& g : groups) {
    for (const std::string& m : g.models) {
      if (std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
    }
  }
  return out;
}

Result<ClusterSpec> ParseClusterSpec(std::string_view text) {
  if (text.empty()) return InvalidArgumentError("--cluster is empty (PRESET:COUNT[:MODELS],...)");
  ClusterSpec spec;
  int total = 0;
  size_t with_models = 0;
  for (std::string_view group : Split(text, ',')) {
    const std::vector<std::string_view> parts = Split(group, ':');
    if (parts.size() < 2 || parts.size() > 3) {
      return Bad(group, "expected PRESET:COUNT or PRESET:COUNT:MODEL+MODEL...");
    }
    ClusterGroup g;
    g.preset = std::string(parts[0]);
    if (Result<engine::CostModel> m = engine::CostModel::FromPreset(g.preset); !m.ok()) {
      return Status(m.status().code(),
                    "--cluster group '" + std::string(group) + "': " + m.status().message());
    }
    const std::string_view count = parts[1];
    const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), g.count);
    if (ec != std::errc() || end != count.data() + count.size()) {
      return Bad(group, "the count '" + std::string(count) + "' is not a number");
    }
    if (g.count < 1 || g.count > kMaxClusterNodes) {
      return Bad(group, "the count must be in [1, " + std::to_string(kMaxClusterNodes) + "]");
    }
    total += g.count;
    if (total > kMaxClusterNodes) {
      return Bad(group, "too many nodes: at most " + std::to_string(kMaxClusterNodes) + " in all");
    }
    if (parts.size() == 3) {
      for (std::string_view m : Split(parts[2], '+')) {
        if (m.empty()) return Bad(group, "an empty model name");
        if (m.size() > kMaxModelNameBytes) {
          return Bad(group,
                     "a model name longer than " + std::to_string(kMaxModelNameBytes) + " bytes");
        }
        if (!std::all_of(m.begin(), m.end(), ModelNameChar)) {
          return Bad(group, "model names may hold only letters, digits and . _ / -");
        }
        if (std::find(g.models.begin(), g.models.end(), m) != g.models.end()) {
          return Bad(group, "model '" + std::string(m) + "' listed twice");
        }
        g.models.emplace_back(m);
      }
      ++with_models;
    }
    spec.groups.push_back(std::move(g));
  }
  if (with_models != 0 && with_models != spec.groups.size()) {
    return InvalidArgumentError(
        "--cluster: either every group names its models or none does (then every node serves "
        "the workload's one model)");
  }
  return spec;
}

}  // namespace hearsay::sim
