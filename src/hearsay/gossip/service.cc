#include "hearsay/gossip/service.h"

#include <algorithm>

#include "hearsay/gossip/wire.h"

namespace hearsay::gossip {
namespace {

size_t StringSize(const std::string& s) { return VarintSize(s.size()) + s.size(); }

size_t NamesSize(const std::vector<std::string>& names) {
  size_t n = VarintSize(names.size());
  for (const auto& s : names) n += StringSize(s);
  return n;
}

void PutNames(ByteWriter& w, const std::vector<std::string>& names) {
  w.PutVarint(names.size());
  for (const auto& s : names) w.PutString(s);
}

std::string ReadName(ByteReader& r, size_t max_bytes) {
  std::string s = r.ReadString(max_bytes);
  if (r.ok() && !IsServiceName(s, max_bytes)) r.Fail("service name not printable ASCII");
  return s;
}

std::vector<std::string> ReadNames(ByteReader& r, size_t max_count) {
  std::vector<std::string> out;
  const size_t n = r.ReadCount(max_count, 2);
  out.reserve(n);
  for (size_t i = 0; i < n && r.ok(); ++i) out.push_back(ReadName(r, kMaxServiceNameBytes));
  return out;
}

uint32_t ReadU32Varint(ByteReader& r) {
  const uint64_t v = r.ReadVarint();
  if (v > UINT32_MAX) r.Fail("service count out of range");
  return static_cast<uint32_t>(v);
}

// Smallest engine: kind and model of one byte each, no aliases or adapters, 8-byte fingerprint.
constexpr size_t kMinEngineBytes = 2 + 2 + 1 + 1 + 1 + 8 + 1;

}  // namespace

bool IsServiceName(std::string_view name, size_t max_bytes) {
  if (name.empty() || name.size() > max_bytes) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

Status ValidateService(const Service& service) {
  if (service.engines.size() > kMaxServiceEngines) {
    return InvalidArgumentError("a node serves at most " + std::to_string(kMaxServiceEngines) +
                                " engines");
  }
  for (const EngineService& e : service.engines) {
    if (!IsServiceName(e.kind, kMaxServiceKindBytes)) {
      return InvalidArgumentError("engine kind must be 1.." + std::to_string(kMaxServiceKindBytes) +
                                  " printable ASCII bytes");
    }
    if (!IsServiceName(e.model)) {
      return InvalidArgumentError("model name must be 1.." + std::to_string(kMaxServiceNameBytes) +
                                  " printable ASCII bytes");
    }
    if (e.aliases.size() > kMaxServiceAliases) {
      return InvalidArgumentError("model " + e.model + " has more than " +
                                  std::to_string(kMaxServiceAliases) + " aliases");
    }
    if (e.adapters.size() > kMaxServiceAdapters) {
      return InvalidArgumentError("model " + e.model + " has more than " +
                                  std::to_string(kMaxServiceAdapters) + " adapters");
    }
    for (const auto* names : {&e.aliases, &e.adapters}) {
      for (const std::string& n : *names) {
        if (!IsServiceName(n)) {
          return InvalidArgumentError("alias and adapter names of model " + e.model +
                                      " must be 1.." + std::to_string(kMaxServiceNameBytes) +
                                      " printable ASCII bytes");
        }
      }
    }
  }
  if (!service.host_group.empty() && !IsServiceName(service.host_group, kMaxHostGroupBytes)) {
    return InvalidArgumentError("host group must be 1.." + std::to_string(kMaxHostGroupBytes) +
                                " bytes of printable ASCII");
  }
  if (EncodedSize(ServiceRecord{UINT64_MAX, service}) > kMaxServiceBytes) {
    return InvalidArgumentError("service record above " + std::to_string(kMaxServiceBytes) +
                                " bytes");
  }
  return OkStatus();
}

const EngineService* FindModel(const Service& service, std::string_view name) {
  for (const EngineService& e : service.engines) {
    if (e.model == name) return &e;
  }
  for (const EngineService& e : service.engines) {
    if (std::find(e.aliases.begin(), e.aliases.end(), name) != e.aliases.end()) return &e;
  }
  return nullptr;
}

bool ServesModel(const Service& service, std::string_view model, std::string_view adapter) {
  for (const EngineService& e : service.engines) {
    if (e.model != model) continue;
    if (adapter.empty() ||
        std::find(e.adapters.begin(), e.adapters.end(), adapter) != e.adapters.end()) {
      return true;
    }
  }
  return false;
}

void PutServiceRecord(ByteWriter& w, const ServiceRecord& record) {
  w.PutVarint(record.version);
  w.PutVarint(record.service.engines.size());
  for (const EngineService& e : record.service.engines) {
    w.PutString(e.kind);
    w.PutString(e.model);
    PutNames(w, e.aliases);
    w.PutVarint(e.context_tokens);
    PutNames(w, e.adapters);
    w.PutU64(e.tokenizer_fingerprint);
    w.PutVarint(e.block_tokens);
  }
  w.PutString(record.service.host_group);
}

ServiceRecord ReadServiceRecord(ByteReader& r) {
  const size_t start = r.remaining();
  ServiceRecord rec;
  rec.version = r.ReadVarint();
  const size_t n = r.ReadCount(kMaxServiceEngines, kMinEngineBytes);
  rec.service.engines.reserve(n);
  for (size_t i = 0; i < n && r.ok(); ++i) {
    EngineService e;
    e.kind = ReadName(r, kMaxServiceKindBytes);
    e.model = ReadName(r, kMaxServiceNameBytes);
    e.aliases = ReadNames(r, kMaxServiceAliases);
    e.context_tokens = ReadU32Varint(r);
    e.adapters = ReadNames(r, kMaxServiceAdapters);
    e.tokenizer_fingerprint = r.ReadU64();
    e.block_tokens = ReadU32Varint(r);
    rec.service.engines.push_back(std::move(e));
    // Checked as it grows, so a hostile record stops at the bound, not at the message's end.
    if (r.ok() && start - r.remaining() > kMaxServiceBytes) r.Fail("service record too large");
  }
  rec.service.host_group = r.ReadString(kMaxHostGroupBytes);
  if (r.ok() && !rec.service.host_group.empty() &&
      !IsServiceName(rec.service.host_group, kMaxHostGroupBytes)) {
    r.Fail("host group not printable ASCII");
  }
  if (r.ok() && start - r.remaining() > kMaxServiceBytes) r.Fail("service record too large");
  return rec;
}

size_t EncodedSize(const ServiceRecord& record) {
  size_t n = VarintSize(record.version) + VarintSize(record.service.engines.size());
  for (const EngineService& e : record.service.engines) {
    n += StringSize(e.kind) + StringSize(e.model) + NamesSize(e.aliases) +
         VarintSize(e.context_tokens) + NamesSize(e.adapters) + 8 + VarintSize(e.block_tokens);
  }
  return n + StringSize(record.service.host_group);
}

std::string ServiceSummary(const Service& service) {
  std::string out;
  for (const EngineService& e : service.engines) {
    if (!out.empty()) out += ", ";
    out += e.kind + ":" + e.model;
    if (!e.aliases.empty() || !e.adapters.empty()) {
      out += "(+" + std::to_string(e.aliases.size()) + " aliases, " +
             std::to_string(e.adapters.size()) + " adapters)";
    }
  }
  if (!service.host_group.empty()) out += " on host group " + service.host_group;
  return out;
}

}  // namespace hearsay::gossip
