#include "hearsay/upstream/served_models.h"

#include <algorithm>
#include <limits>

#include "hearsay/upstream/untrusted_json.h"

namespace hearsay::upstream {
namespace {

using nlohmann::json;

// A non-negative integer field as a context length (capped), 0 when absent or of another type.
uint32_t ContextOf(const json& entry) {
  auto read = [](const json& v) -> uint32_t {
    if (!v.is_number()) return 0;
    const double d = v.get<double>();
    if (!(d > 0)) return 0;
    return static_cast<uint32_t>(std::min<double>(d, std::numeric_limits<uint32_t>::max()));
  };
  if (auto it = entry.find("max_model_len"); it != entry.end()) return read(*it);
  if (auto meta = entry.find("meta"); meta != entry.end() && meta->is_object()) {
    if (auto it = meta->find("n_ctx_train"); it != meta->end()) return read(*it);
  }
  return 0;
}

// The entry's string field `key`, or nullptr.
const std::string* StringField(const json& entry, const char* key) {
  auto it = entry.find(key);
  return it != entry.end() && it->is_string() ? it->get_ptr<const std::string*>() : nullptr;
}

}  // namespace

Result<ServedModels> ParseServedModels(std::string_view page) {
  if (page.size() > kMaxModelsPageBytes) {
    return InvalidArgumentError("/v1/models page over " + std::to_string(kMaxModelsPageBytes) +
                                " bytes");
  }
  const json doc = ParseUntrustedJson(page);
  if (!doc.is_object()) return InvalidArgumentError("/v1/models is not a JSON object");
  const auto data = doc.find("data");
  if (data == doc.end() || !data->is_array()) {
    return InvalidArgumentError("/v1/models has no \"data\" list");
  }
  if (data->size() > kMaxModelEntries) {
    return InvalidArgumentError("/v1/models lists " + std::to_string(data->size()) +
                                " entries, over " + std::to_string(kMaxModelEntries));
  }
  ServedModels out;
  auto find = [&out](std::string_view name) {
    return std::find_if(out.models.begin(), out.models.end(),
                        [&](const ServedModel& m) { return m.name == name; });
  };
  // Models first, so an adapter listed before its parent still finds it.
  for (const json& entry : *data) {
    if (!entry.is_object()) return InvalidArgumentError("/v1/models: an entry is not an object");
    const std::string* id = StringField(entry, "id");
    if (id == nullptr) return InvalidArgumentError("/v1/models: an entry has no string \"id\"");
    if (StringField(entry, "parent") != nullptr) continue;
    if (!IsValidModelName(*id)) {
      ++out.bad_names;
    } else if (find(*id) != out.models.end()) {
      continue;
    } else if (out.models.size() >= kMaxServedModels) {
      ++out.models_over_bound;
    } else {
      out.models.push_back(ServedModel{*id, ContextOf(entry), {}});
    }
  }
  for (const json& entry : *data) {
    const std::string* parent = StringField(entry, "parent");
    if (parent == nullptr) continue;
    const std::string& id = *StringField(entry, "id");
    const auto model = find(*parent);
    if (!IsValidModelName(id)) {
      ++out.bad_names;
    } else if (model == out.models.end()) {
      ++out.orphan_adapters;
    } else if (std::find(model->adapters.begin(), model->adapters.end(), id) !=
               model->adapters.end()) {
      continue;
    } else if (model->adapters.size() >= kMaxAdaptersPerModel) {
      ++out.adapters_over_bound;
    } else {
      model->adapters.push_back(id);
    }
  }
  if (out.models.empty()) {
    return NotFoundError("/v1/models lists no usable model (" + std::to_string(out.skipped()) +
                         " entries skipped)");
  }
  return out;
}

std::string DescribeServedModels(const ServedModels& models) {
  std::string s;
  for (const ServedModel& m : models.models) {
    if (!s.empty()) s += ", ";
    s += m.name;
    std::string detail;
    if (m.context_length > 0) detail = "ctx " + std::to_string(m.context_length);
    if (!m.adapters.empty()) {
      detail += (detail.empty() ? "" : ", ") + std::to_string(m.adapters.size()) +
                (m.adapters.size() == 1 ? " adapter" : " adapters");
    }
    if (!detail.empty()) s += " (" + detail + ")";
  }
  if (models.skipped() > 0) {
    s += "; skipped: " + std::to_string(models.bad_names) + " bad names, " +
         std::to_string(models.orphan_adapters) + " adapters without their model, " +
         std::to_string(models.models_over_bound) + " models and " +
         std::to_string(models.adapters_over_bound) + " adapters over the bounds";
  }
  return s;
}

}  // namespace hearsay::upstream
