#include "hearsay/net/api_keys.h"

#include <sodium.h>

#include <charconv>

namespace hearsay::net {

namespace {

constexpr std::string_view kHashPrefix = "blake2b256:";
constexpr std::string_view kKeyPrefix = "hsk_";
constexpr std::string_view kHashLabel = "hearsay/api-key/v1";

bool IsLowerHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

bool ValidId(std::string_view id) {
  if (id.empty() || id.size() > ApiKeys::kMaxIdBytes) return false;
  for (const char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z'))) return false;
  }
  return true;
}

std::optional<std::array<uint8_t, 32>> ParseHash(std::string_view text) {
  if (text.size() != kHashPrefix.size() + 64 || text.substr(0, kHashPrefix.size()) != kHashPrefix)
    return std::nullopt;
  text.remove_prefix(kHashPrefix.size());
  std::array<uint8_t, 32> out{};
  for (size_t i = 0; i < 32; ++i) {
    const char hi = text[2 * i], lo = text[2 * i + 1];
    if (!IsLowerHex(hi) || !IsLowerHex(lo)) return std::nullopt;
    auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
    out[i] = static_cast<uint8_t>(nibble(hi) << 4 | nibble(lo));
  }
  return out;
}

std::string Hex(std::span<const uint8_t> bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const uint8_t b : bytes) {
    out.push_back("0123456789abcdef"[b >> 4]);
    out.push_back("0123456789abcdef"[b & 0xf]);
  }
  return out;
}

std::optional<uint64_t> ParseLimit(std::string_view text) {
  if (text.empty() || text.size() > 10 || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || v > ApiKeys::kMaxLimit)
    return std::nullopt;
  return v;
}

Status LineError(size_t line, std::string_view what) {
  return InvalidArgumentError("api keys file, line " + std::to_string(line) + ": " +
                              std::string(what));
}

// Splits at runs of spaces and tabs; at most `max` fields (more: returns max + 1 fields).
std::vector<std::string_view> Fields(std::string_view line, size_t max) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size() && out.size() <= max) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t from = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > from) out.push_back(line.substr(from, i - from));
  }
  return out;
}

}  // namespace

bool ValidTenantName(std::string_view name) {
  if (name.empty() || name.size() > ApiKeys::kMaxTenantBytes) return false;
  for (const char c : name) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::array<uint8_t, 32> HashApiKey(std::string_view key) {
  std::array<uint8_t, 32> out{};
  crypto_generichash(out.data(), out.size(), reinterpret_cast<const uint8_t*>(key.data()),
                     key.size(), reinterpret_cast<const uint8_t*>(kHashLabel.data()),
                     kHashLabel.size());
  return out;
}

Result<ApiKeys> ApiKeys::Parse(std::string_view text) {
  if (text.size() > kMaxFileBytes) {
    return InvalidArgumentError("api keys file: larger than " + std::to_string(kMaxFileBytes) +
                                " bytes");
  }
  ApiKeys keys;
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.size() > kMaxLineBytes) return LineError(line_no, "longer than 512 bytes");
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    for (const char c : line) {
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t') {
        return LineError(line_no, "a control character");
      }
      if (static_cast<unsigned char>(c) >= 0x7f) return LineError(line_no, "a non-ASCII byte");
    }
    const std::vector<std::string_view> f = Fields(line, 6);
    if (f.empty() || f[0][0] == '#') continue;
    if (f.size() < 3) return LineError(line_no, "expected <id> blake2b256:<hex> <tenant> ...");
    if (f.size() > 6) return LineError(line_no, "too many fields");
    if (keys.entries_.size() >= kMaxEntries) {
      return LineError(line_no, "more than " + std::to_string(kMaxEntries) + " keys");
    }
    ApiKeyEntry e;
    if (!ValidId(f[0])) return LineError(line_no, "the id must be 1-32 of [a-z0-9]");
    e.id = std::string(f[0]);
    std::optional<std::array<uint8_t, 32>> hash = ParseHash(f[1]);
    if (!hash) return LineError(line_no, "the hash must be blake2b256: and 64 lower-case hex");
    e.hash = *hash;
    if (!ValidTenantName(f[2])) {
      return LineError(line_no, "the tenant name must be 1-64 of [A-Za-z0-9._-]");
    }
    e.tenant.name = std::string(f[2]);
    bool seen_rps = false, seen_tpm = false, seen_shared = false;
    for (size_t i = 3; i < f.size(); ++i) {
      const size_t eq = f[i].find('=');
      const std::string_view name = f[i].substr(0, eq);
      const std::string_view value =
          eq == std::string_view::npos ? std::string_view() : f[i].substr(eq + 1);
      if (eq == std::string_view::npos) return LineError(line_no, "expected name=value");
      if (name == "rps" || name == "tpm") {
        bool& seen = name == "rps" ? seen_rps : seen_tpm;
        if (seen) return LineError(line_no, "a repeated field");
        seen = true;
        std::optional<uint64_t> v = ParseLimit(value);
        if (!v) return LineError(line_no, "a limit is a number from 0 to 1000000000");
        (name == "rps" ? e.tenant.limits.rps : e.tenant.limits.tpm) = *v;
      } else if (name == "shared_cache") {
        if (seen_shared) return LineError(line_no, "a repeated field");
        seen_shared = true;
        if (value != "true" && value != "false") {
          return LineError(line_no, "shared_cache is true or false");
        }
        e.tenant.shared_cache = value == "true";
      } else {
        return LineError(line_no, "unknown field (rps, tpm, shared_cache)");
      }
    }
    if (keys.by_id_.count(e.id) != 0) return LineError(line_no, "a repeated id");
    auto [it, inserted] = keys.tenants_.emplace(e.tenant.name, e.tenant);
    if (!inserted && !(it->second == e.tenant)) {
      return LineError(line_no, "tenant " + e.tenant.name +
                                    " has other limits or shared_cache on an earlier line");
    }
    keys.by_id_.emplace(e.id, keys.entries_.size());
    keys.entries_.push_back(std::move(e));
  }
  return keys;
}

const Tenant* ApiKeys::Authenticate(std::string_view key) const {
  // hsk_<id>_<secret>: the id picks the line; the hash of the whole text must match it.
  if (key.size() > kKeyPrefix.size() + kMaxIdBytes + 1 + kSecretHexDigits ||
      key.substr(0, kKeyPrefix.size()) != kKeyPrefix) {
    return nullptr;
  }
  const std::string_view rest = key.substr(kKeyPrefix.size());
  const size_t sep = rest.find('_');
  if (sep == std::string_view::npos) return nullptr;
  const auto it = by_id_.find(std::string(rest.substr(0, sep)));
  const std::array<uint8_t, 32> presented = HashApiKey(key);
  if (it == by_id_.end()) return nullptr;
  const ApiKeyEntry& e = entries_[it->second];
  if (crypto_verify_32(presented.data(), e.hash.data()) != 0) return nullptr;
  return FindTenant(e.tenant.name);
}

const Tenant* ApiKeys::FindTenant(std::string_view name) const {
  const auto it = tenants_.find(name);
  return it == tenants_.end() ? nullptr : &it->second;
}

std::string FormatApiKeyLine(const ApiKeyEntry& e) {
  std::string line = e.id + " " + std::string(kHashPrefix) + Hex(e.hash) + " " + e.tenant.name;
  if (e.tenant.limits.rps != 0) line += " rps=" + std::to_string(e.tenant.limits.rps);
  if (e.tenant.limits.tpm != 0) line += " tpm=" + std::to_string(e.tenant.limits.tpm);
  if (e.tenant.shared_cache) line += " shared_cache=true";
  return line;
}

Result<NewApiKey> MakeApiKey(const Tenant& tenant, std::span<const uint8_t, 38> random) {
  if (!ValidTenantName(tenant.name)) {
    return InvalidArgumentError("the tenant name must be 1-64 of [A-Za-z0-9._-]");
  }
  if (tenant.limits.rps > ApiKeys::kMaxLimit || tenant.limits.tpm > ApiKeys::kMaxLimit) {
    return InvalidArgumentError("a limit is a number from 0 to 1000000000");
  }
  NewApiKey k;
  k.id = Hex(random.first(6));
  k.key = std::string(kKeyPrefix) + k.id + "_" + Hex(random.subspan(6, 32));
  ApiKeyEntry e;
  e.id = k.id;
  e.hash = HashApiKey(k.key);
  e.tenant = tenant;
  k.line = FormatApiKeyLine(e) + "\n";
  return k;
}

std::optional<std::string_view> BearerToken(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  constexpr std::string_view kScheme = "bearer";
  if (value.size() <= kScheme.size() + 1) return std::nullopt;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    const char c = value[i];
    if ((c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c) != kScheme[i]) return std::nullopt;
  }
  if (value[kScheme.size()] != ' ') return std::nullopt;
  std::string_view token = value.substr(kScheme.size() + 1);
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  if (token.empty()) return std::nullopt;
  return token;
}

}  // namespace hearsay::net
