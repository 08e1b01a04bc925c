#include "hearsay/node/model_routing.h"

#include <algorithm>

namespace hearsay::node {
namespace {

ModelTarget TargetOf(const gossip::EngineService& e, std::string_view adapter) {
  return ModelTarget{e.model, std::string(adapter), e.tokenizer_fingerprint, e.block_tokens};
}

bool Has(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// FNV-1a over length-prefixed parts, finished with splitmix64: stable across hosts and builds.
class Hasher {
 public:
  void Add(uint64_t v) {
    for (int i = 0; i < 8; ++i) Byte(static_cast<uint8_t>(v >> (8 * i)));
  }
  void Add(std::string_view s) {
    Add(s.size());
    for (char c : s) Byte(static_cast<uint8_t>(c));
  }
  uint64_t Finish() const {
    uint64_t z = h_ + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  void Byte(uint8_t b) { h_ = (h_ ^ b) * 0x100000001b3ULL; }
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

}  // namespace

std::optional<ModelTarget> ResolveIn(const gossip::Service& service, std::string_view name) {
  if (service.engines.empty()) return std::nullopt;
  if (name.empty()) return TargetOf(service.engines.front(), "");
  if (const gossip::EngineService* e = gossip::FindModel(service, name)) return TargetOf(*e, "");
  for (const gossip::EngineService& e : service.engines) {
    if (Has(e.adapters, name)) return TargetOf(e, name);
  }
  return std::nullopt;
}

bool ServesTarget(const gossip::Service& service, const ModelTarget& target) {
  return std::any_of(service.engines.begin(), service.engines.end(), [&](const auto& e) {
    return e.model == target.model && e.tokenizer_fingerprint == target.tokenizer_fingerprint &&
           e.block_tokens == target.block_tokens &&
           (target.adapter.empty() || Has(e.adapters, target.adapter));
  });
}

bool ConflictsWith(const gossip::Service& service, const ModelTarget& target) {
  return std::any_of(service.engines.begin(), service.engines.end(), [&](const auto& e) {
    return e.model == target.model && (e.tokenizer_fingerprint != target.tokenizer_fingerprint ||
                                       e.block_tokens != target.block_tokens);
  });
}

uint64_t ModelNamespace(uint64_t ns, const ModelTarget& target) {
  Hasher h;
  h.Add("hearsay/model-namespace/v1");
  h.Add(ns);
  h.Add(target.model);
  h.Add(target.adapter);
  h.Add(target.tokenizer_fingerprint);
  h.Add(uint64_t{target.block_tokens});
  const uint64_t id = h.Finish();
  return id == 0 ? 1 : id;
}

std::string PrintableModelName(std::string_view name) {
  std::string out(name.substr(0, 256));
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return out;
}

}  // namespace hearsay::node
