// GET /cluster parsing (see the header).
#include "hearsay/launch/cluster_view.h"

#include <charconv>
#include <nlohmann/json.hpp>

namespace hearsay::launch {
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

// A generation: a decimal string (what /cluster sends, since it exceeds 2^53) or a number.
uint64_t GenerationField(const json& obj) {
  const json* f = Field(obj, {"generation"});
  if (f == nullptr) return 0;
  if (f->is_number_unsigned()) return f->get<uint64_t>();
  if (!f->is_string()) return 0;
  const std::string& text = f->get_ref<const std::string&>();
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc{} && end == text.data() + text.size() ? v : 0;
}

Result<MemberInfo> ParseMember(const json& m, bool is_self) {
  MemberInfo info;
  info.node_id = StringField(m, {"id", "node_id"});
  info.state = StringField(m, {"state"});
  if (info.node_id.empty() || info.state.empty()) {
    return InvalidArgumentError("/cluster: a member without \"id\" or \"state\"");
  }
  info.generation = GenerationField(m);
  info.gossip_address = StringField(m, {"address", "gossip_address"});
  info.api_address = StringField(m, {"api_address"});
  info.cache_keys = CountField(m, {"cache_entries"});
  if (const json* rtt = Field(m, {"rtt_ms"}); rtt != nullptr && rtt->is_number()) {
    info.rtt_ms = rtt->get<double>();
  }
  info.is_self = is_self;
  return info;
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
  // "self" is this node itself: an object like a member's (without "state"), or just its id.
  const json* self = Field(doc, {"self", "node_id"});
  if (self != nullptr && self->is_string()) view.self_id = self->get<std::string>();
  if (self != nullptr && self->is_object()) view.self_id = StringField(*self, {"id", "node_id"});
  const json* members = Field(doc, {"members"});
  if (members == nullptr || !members->is_array()) {
    return InvalidArgumentError("/cluster: no \"members\" array");
  }
  for (const json& m : *members) {
    if (!m.is_object()) return InvalidArgumentError("/cluster: a member is not an object");
    HEARSAY_ASSIGN_OR_RETURN(MemberInfo info, ParseMember(m, /*is_self=*/false));
    info.is_self = !view.self_id.empty() && info.node_id == view.self_id;
    view.members.push_back(std::move(info));
  }
  // The node lists itself under "self" only; add it, alive (it answers), unless listed.
  if (self != nullptr && self->is_object() && view.Find(view.self_id) == nullptr) {
    json me = *self;
    if (!me.contains("state")) {
      const json* draining = Field(me, {"draining"});
      me["state"] = draining != nullptr && draining->is_boolean() && draining->get<bool>()
                        ? "leaving"
                        : "alive";
    }
    HEARSAY_ASSIGN_OR_RETURN(MemberInfo info, ParseMember(me, /*is_self=*/true));
    view.members.push_back(std::move(info));
  }
  return view;
}

}  // namespace hearsay::launch
