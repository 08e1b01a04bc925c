// GET /cluster parsing (see the header).
#include "hearsay/harness/cluster_view.h"

#include <nlohmann/json.hpp>

namespace hearsay::harness {
namespace {

using nlohmann::json;

// The first of `names` present in `obj`, or nullptr.
const json* Field(const json& obj, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    auto it = obj.find(n);
    if (it != obj.end() && !it->is_null()) return &*it;
  }
  return nullptr;
}

std::string StringField(const json& obj, std::initializer_list<const char*> names) {
  const json* f = Field(obj, names);
  return f != nullptr && f->is_string() ? f->get<std::string>() : std::string();
}

uint64_t CountField(const json& obj, std::initializer_list<const char*> names) {
  const json* f = Field(obj, names);
  return f != nullptr && f->is_number_unsigned() ? f->get<uint64_t>() : 0;
}

}  // namespace

const MemberInfo* ClusterView::Find(std::string_view node_id) const {
  for (const MemberInfo& m : members) {
    if (m.node_id == node_id) return &m;
  }
  return nullptr;
}

Result<ClusterView> ParseClusterView(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgumentError("/cluster: not a JSON object");
  }
  ClusterView view;
  if (const json* self = Field(doc, {"self", "node_id"}); self != nullptr) {
    if (self->is_string()) view.self_id = self->get<std::string>();
    if (self->is_object()) view.self_id = StringField(*self, {"node_id", "id"});
  }
  const json* members = Field(doc, {"members"});
  if (members == nullptr || !members->is_array()) {
    return InvalidArgumentError("/cluster: no \"members\" array");
  }
  for (const json& m : *members) {
    if (!m.is_object()) return InvalidArgumentError("/cluster: a member is not an object");
    MemberInfo info;
    info.node_id = StringField(m, {"node_id", "id"});
    info.state = StringField(m, {"state"});
    if (info.node_id.empty() || info.state.empty()) {
      return InvalidArgumentError("/cluster: a member without \"node_id\" or \"state\"");
    }
    info.generation = CountField(m, {"generation"});
    info.gossip_address = StringField(m, {"gossip_address", "address"});
    info.api_address = StringField(m, {"api_address", "http_address"});
    if (const json* cache = Field(m, {"cache_summary", "cache"}); cache != nullptr) {
      info.cache_keys = cache->is_object() ? CountField(*cache, {"keys", "size", "entries"})
                                           : CountField(m, {"cache_summary"});
    } else {
      info.cache_keys = CountField(m, {"cache_keys"});
    }
    const json* is_self = Field(m, {"self", "is_self"});
    info.is_self = (is_self != nullptr && is_self->is_boolean() && is_self->get<bool>()) ||
                   (!view.self_id.empty() && info.node_id == view.self_id);
    view.members.push_back(std::move(info));
  }
  return view;
}

}  // namespace hearsay::harness
