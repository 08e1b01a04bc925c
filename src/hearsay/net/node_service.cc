#include "hearsay/net/node_service.h"

#include <xxhash.h>

#include <algorithm>

#include "hearsay/net/prompt_tokenizer.h"

namespace hearsay::net {
namespace {

std::string KindOf(const DaemonConfig& c) {
  if (c.engine == "sim") return "sim";
  return c.upstream_flavor == "generic" ? "openai" : c.upstream_flavor;
}

// Appends `name` to `names` unless it is already there or equal to `model`; false (and nothing
// appended) past `limit` or for a name the service cannot carry.
bool AddName(std::vector<std::string>& names, const std::string& name, const std::string& model,
             size_t limit) {
  if (name == model || std::find(names.begin(), names.end(), name) != names.end()) return true;
  if (names.size() >= limit || !gossip::IsServiceName(name)) return false;
  names.push_back(name);
  return true;
}

// Drops adapters, from the engine with the most, until the whole record fits its byte limit;
// counts each one left out.
void FitService(NodeServiceResult* out) {
  while (!gossip::ValidateService(out->service).ok()) {
    auto it = std::max_element(
        out->service.engines.begin(), out->service.engines.end(),
        [](const auto& a, const auto& b) { return a.adapters.size() < b.adapters.size(); });
    if (it == out->service.engines.end() || it->adapters.empty()) break;
    it->adapters.pop_back();
    ++out->names_left_out;
  }
}

}  // namespace

uint64_t TokenizerFingerprint(const DaemonConfig& config, std::string_view engine_model) {
  std::string what = KeyingDescription(config);
  // The block size is carried on its own; the key namespace does not change the tokens.
  what = what.substr(0, what.find(" block_size="));
  if (config.tokenizer == "engine") what += " engine_model=" + std::string(engine_model);
  return XXH3_64bits(what.data(), what.size());
}

NodeServiceResult BuildNodeService(const DaemonConfig& c,
                                   const std::optional<upstream::ServedModels>& served) {
  NodeServiceResult out;
  const uint32_t block = static_cast<uint32_t>(c.block_size);
  auto engine_for = [&](const std::string& model, const upstream::ServedModel* listed) {
    gossip::EngineService e;
    e.kind = KindOf(c);
    e.model = model;
    e.context_tokens = static_cast<uint32_t>(c.context_tokens);
    if (listed != nullptr && listed->context_length > 0) {
      e.context_tokens = std::min(e.context_tokens, listed->context_length);
    }
    e.block_tokens = block;
    const std::string engine_model =
        !c.upstream_model.empty() ? c.upstream_model : (listed ? listed->name : model);
    e.tokenizer_fingerprint = TokenizerFingerprint(c, engine_model);
    if (listed != nullptr) {
      for (const std::string& a : listed->adapters) {
        if (!AddName(e.adapters, a, "", gossip::kMaxServiceAdapters)) ++out.names_left_out;
      }
    }
    return e;
  };
  const upstream::ServedModel* first =
      served && !served->models.empty() ? &served->models.front() : nullptr;
  gossip::EngineService main = engine_for(c.model, first);
  for (const std::string& a : c.model_aliases) {
    if (!AddName(main.aliases, a, c.model, gossip::kMaxServiceAliases)) ++out.names_left_out;
  }
  if (first != nullptr &&
      !AddName(main.aliases, first->name, c.model, gossip::kMaxServiceAliases)) {
    ++out.names_left_out;
  }
  out.service.engines.push_back(std::move(main));
  out.service.host_group = c.host_group;
  if (served && c.upstream_model.empty()) {
    for (size_t i = 1; i < served->models.size(); ++i) {
      const upstream::ServedModel& m = served->models[i];
      const bool taken =
          std::any_of(out.service.engines.begin(), out.service.engines.end(), [&](const auto& e) {
            return e.model == m.name ||
                   std::find(e.aliases.begin(), e.aliases.end(), m.name) != e.aliases.end();
          });
      if (taken) continue;
      if (out.service.engines.size() >= gossip::kMaxServiceEngines) {
        ++out.names_left_out;
        continue;
      }
      out.service.engines.push_back(engine_for(m.name, &m));
    }
  }
  // Within the per-name limits the total size still has to fit: drop adapters from the end.
  FitService(&out);
  return out;
}

NodeServiceResult BuildNodeService(std::span<const DaemonConfig> configs,
                                   std::span<const std::optional<upstream::ServedModels>> served,
                                   std::vector<std::vector<std::string>>* models) {
  NodeServiceResult out;
  if (models != nullptr) models->assign(configs.size(), {});
  for (size_t i = 0; i < configs.size(); ++i) {
    const std::optional<upstream::ServedModels> none;
    NodeServiceResult one = BuildNodeService(configs[i], i < served.size() ? served[i] : none);
    out.names_left_out += one.names_left_out;
    for (gossip::EngineService& e : one.service.engines) {
      if (models != nullptr) (*models)[i].push_back(e.model);
      if (gossip::FindModel(out.service, e.model) != nullptr) continue;  // a replica
      if (out.service.engines.size() >= gossip::kMaxServiceEngines) {
        ++out.names_left_out;
        continue;
      }
      out.service.engines.push_back(std::move(e));
    }
  }
  // The group is the node's: every engine entry carries the same one.
  if (!configs.empty()) out.service.host_group = configs.front().host_group;
  // Each part fits on its own; together they may not: drop adapters from the end.
  FitService(&out);
  return out;
}

}  // namespace hearsay::net
