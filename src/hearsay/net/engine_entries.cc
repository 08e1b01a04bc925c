#include "hearsay/net/engine_entries.h"

#include <algorithm>
#include <string>

#include "hearsay/gossip/service.h"

namespace hearsay::net {
namespace {

// An entry's keys: the engine settings an upstream has, and the model it serves.
constexpr EngineEntryKey kEntryKeys[] = {
    {"kind", "engine"},
    {"model", "model"},
    {"aliases", "model-aliases"},
    {"upstream", "upstream"},
    {"flavor", "upstream-flavor"},
    {"upstream_flavor", "upstream-flavor"},
    {"upstream_model", "upstream-model"},
    {"preset", "engine-preset"},
    {"capacity_tokens", "capacity-tokens"},
    {"upstream_slots_authoritative", "upstream-slots-authoritative"},
    {"upstream_queue_poll_ms", "upstream-queue-poll-ms"},
    {"upstream_slot_wait", "upstream-slot-wait"},
    {"upstream_prefix_hold_tokens", "upstream-prefix-hold-tokens"},
    {"upstream_models_poll_ms", "upstream-models-poll-ms"},
    {"upstream_first_token_timeout_ms", "upstream-first-token-timeout-ms"},
    {"upstream_answer_timeout_ms", "upstream-answer-timeout-ms"},
    {"kv_events", "kv-events"},
    {"kv_events_replay", "kv-events-replay"},
    {"kv_events_topic", "kv-events-topic"},
};

// Settings that say where one engine is, not what it serves: two replicas of a model differ in
// them and nothing else.
bool IsLocation(std::string_view flag) {
  return flag == "upstream" || flag == "kv-events" || flag == "kv-events-replay" ||
         flag == "kv-events-topic";
}

// A TOML value as ApplyFlag's text (arrays comma-separated); false for another type.
bool AsFlagText(const toml::node& node, std::string& out) {
  if (const auto* s = node.as_string()) {
    out = s->get();
  } else if (const auto* i = node.as_integer()) {
    if (i->get() < 0) return false;
    out = std::to_string(i->get());
  } else if (const auto* b = node.as_boolean()) {
    out = b->get() ? "true" : "false";
  } else if (const auto* a = node.as_array()) {
    out.clear();
    for (const toml::node& e : *a) {
      const auto* item = e.as_string();
      if (item == nullptr || item->get().find(',') != std::string::npos) return false;
      if (!out.empty()) out += ',';
      out += item->get();
    }
  } else {
    return false;
  }
  return true;
}

std::string EntryName(const DaemonConfig& c, size_t i) {
  std::string name = "engine[" + std::to_string(i) + "]";
  if (const std::string* m = c.engines[i].Find("model")) name += " (model " + *m + ")";
  return name;
}

// Every model name an engine configuration claims: its model and aliases.
std::vector<std::string> Names(const DaemonConfig& e) {
  std::vector<std::string> names = e.model_aliases;
  names.push_back(e.model);
  return names;
}

// The entry's settings that say what it serves, sorted, for comparing two entries.
std::vector<std::pair<std::string, std::string>> Serving(const EngineEntry& e) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& kv : e.settings) {
    if (!IsLocation(kv.first)) out.push_back(kv);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

const std::string* EngineEntry::Find(std::string_view flag) const {
  const std::string* found = nullptr;
  for (const auto& [f, v] : settings) {
    if (f == flag) found = &v;  // the last one given wins, as with flags
  }
  return found;
}

std::span<const EngineEntryKey> EngineEntryKeys() { return kEntryKeys; }

Result<DaemonConfig> DaemonConfig::EngineConfig(size_t index) const {
  DaemonConfig e = *this;
  e.engines.clear();
  e.engine = "openai";
  for (const auto& [flag, value] : engines.at(index).settings) {
    HEARSAY_RETURN_IF_ERROR(e.ApplyFlag(flag, value));
  }
  return e;
}

std::vector<DaemonConfig> DaemonConfig::EngineConfigs() const {
  if (engines.empty()) return {*this};
  std::vector<DaemonConfig> out;
  for (size_t i = 0; i < engines.size(); ++i) {
    Result<DaemonConfig> e = EngineConfig(i);
    if (e.ok()) out.push_back(std::move(*e));
  }
  return out;
}

Status ApplyEngineEntries(DaemonConfig& c, const toml::array& entries, std::string_view source) {
  std::vector<EngineEntry> out;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string where = std::string(source) + ": engine[" + std::to_string(i) + "]";
    const auto* table = entries[i].as_table();
    if (table == nullptr) return InvalidArgumentError(where + ": expected a table ([[engine]])");
    EngineEntry entry;
    for (const auto& [k, node] : *table) {
      const std::string key(k.str());
      const auto* known = std::find_if(std::begin(kEntryKeys), std::end(kEntryKeys),
                                       [&](const EngineEntryKey& ek) { return ek.key == key; });
      if (known == std::end(kEntryKeys)) {
        return InvalidArgumentError(where + ": unknown key '" + key +
                                    "' (see docs/daemon.md, models in a pool)");
      }
      std::string text;
      if (!AsFlagText(node, text)) {
        return InvalidArgumentError(where + ": key '" + key + "': wrong type");
      }
      // The type and range, checked now so that the error names the entry's key.
      DaemonConfig scratch;
      if (Status s = scratch.ApplyFlag(known->flag, text); !s.ok()) {
        return InvalidArgumentError(where + ": key '" + key + "': " + s.message());
      }
      entry.settings.emplace_back(std::string(known->flag), std::move(text));
    }
    out.push_back(std::move(entry));
  }
  c.engines = std::move(out);
  return OkStatus();
}

Status ValidateEngineEntries(const DaemonConfig& c) {
  if (c.engines.empty()) return OkStatus();
  if (c.engines.size() > gossip::kMaxServiceEngines) {
    return InvalidArgumentError(
        "engine: at most " + std::to_string(gossip::kMaxServiceEngines) +
        " [[engine]] entries (what one node's service carries in gossip); got " +
        std::to_string(c.engines.size()));
  }
  if (!c.upstream.empty() || !c.kv_events.empty()) {
    return InvalidArgumentError(
        "engine.upstream / engine.kv_events: with [[engine]] entries each entry names its own");
  }
  if (c.tokenizer == "engine") {
    return InvalidArgumentError(
        "node.tokenizer: engine is not supported with [[engine]] entries yet; use bytes");
  }
  std::vector<DaemonConfig> configs;
  for (size_t i = 0; i < c.engines.size(); ++i) {
    const std::string name = EntryName(c, i);
    if (c.engines[i].Find("model") == nullptr) {
      return InvalidArgumentError(name + ": no model (model = \"...\")");
    }
    Result<DaemonConfig> e = c.EngineConfig(i);
    if (!e.ok()) return InvalidArgumentError(name + ": " + e.status().message());
    if (e->engine == "openai" && e->upstream.empty()) {
      return InvalidArgumentError(name + ": no upstream (upstream = \"http://host:port\")");
    }
    if (Status s = e->Validate(); !s.ok()) return InvalidArgumentError(name + ": " + s.message());
    configs.push_back(std::move(*e));
  }
  for (size_t i = 0; i < configs.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      for (const std::string& n : Names(configs[i])) {
        const std::vector<std::string> other = Names(configs[j]);
        if (std::find(other.begin(), other.end(), n) == other.end()) continue;
        if (Serving(c.engines[i]) != Serving(c.engines[j])) {
          return InvalidArgumentError(EntryName(c, j) + " and " + EntryName(c, i) +
                                      " both claim model name '" + n +
                                      "' with different settings; replicas of one model must "
                                      "differ only in upstream and kv_events");
        }
      }
    }
  }
  return OkStatus();
}

}  // namespace hearsay::net
