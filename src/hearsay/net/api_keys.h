// API keys: who may use a node's OpenAI API, as which tenant, within which limits.
//
// The API-keys file (--api-keys-file, docs/security.md "Tenants") holds one key per line:
//
//   # comments and blank lines are ignored
//   <id> blake2b256:<64 hex> <tenant> [rps=N] [tpm=N] [shared_cache=true|false]
//
// A key, as a client sends it (`Authorization: Bearer <key>`), is `hsk_<id>_<64 hex>`: its id
// (which names the line, and is not secret) and 32 random bytes. The file holds only the hash of
// the whole key text: BLAKE2b-256 keyed with the label "hearsay/api-key/v1". A slow password hash
// (crypto_pwhash) protects low-entropy secrets against guessing; a key of 256 random bits cannot
// be guessed, so one fast keyed hash is enough, and a request pays about a microsecond for it
// rather than tens of milliseconds. Whoever reads the file learns tenants and ids, not keys.
//
// A tenant's limits (requests per second, tokens per minute; 0 or absent: none) and whether its
// requests share the public cache namespace (shared_cache) are set by its first line; a later
// line of the same tenant that states other values is an error, so one tenant has one set of
// limits.
//
// The parser reads untrusted bytes and is bounded: at most kMaxFileBytes, kMaxEntries lines with a
// key, kMaxLineBytes per line, tenant names of [A-Za-z0-9._-]{1,64}; anything else is an error
// naming the line. A file is taken whole or not at all (a reload keeps the previous table).
//
// Thread-safety: ApiKeys is immutable after Parse; its const methods may be called from any
// thread.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hearsay/common/status.h"

namespace hearsay::net {

// A tenant's limits; 0 means no limit.
struct TenantLimits {
  uint64_t rps = 0;  // requests per second (a token bucket holding max(1, rps))
  uint64_t tpm = 0;  // tokens per minute: prompt tokens plus max_tokens, charged at admission

  friend bool operator==(const TenantLimits&, const TenantLimits&) = default;
};

struct Tenant {
  std::string name;
  TenantLimits limits;
  // Its requests use the shared (public) cache namespace instead of the tenant's own.
  bool shared_cache = false;

  friend bool operator==(const Tenant&, const Tenant&) = default;
};

struct ApiKeyEntry {
  std::string id;
  std::array<uint8_t, 32> hash{};
  Tenant tenant;
};

class ApiKeys {
 public:
  static constexpr size_t kMaxFileBytes = size_t{1} << 20;
  static constexpr size_t kMaxEntries = 10000;
  static constexpr size_t kMaxLineBytes = 512;
  static constexpr size_t kMaxTenantBytes = 64;
  static constexpr size_t kMaxIdBytes = 32;
  static constexpr uint64_t kMaxLimit = 1'000'000'000;
  // The length of a key's secret part, in hex digits (32 bytes).
  static constexpr size_t kSecretHexDigits = 64;

  // Parses the file's text. INVALID_ARGUMENT naming the line for anything outside the format or
  // its bounds, a repeated id, or a tenant whose lines disagree on its limits.
  [[nodiscard]] static Result<ApiKeys> Parse(std::string_view text);

  // The tenant of the key `key` (the bearer token's text), or nullptr for an unknown or wrong
  // key. The hash comparison is constant-time (crypto_verify_32).
  const Tenant* Authenticate(std::string_view key) const;

  const std::vector<ApiKeyEntry>& entries() const { return entries_; }
  // The tenant named `name`, or nullptr.
  const Tenant* FindTenant(std::string_view name) const;
  // Every tenant, by name.
  const std::map<std::string, Tenant, std::less<>>& tenants() const { return tenants_; }

 private:
  std::vector<ApiKeyEntry> entries_;
  std::unordered_map<std::string, size_t> by_id_;
  std::map<std::string, Tenant, std::less<>> tenants_;
};

// The stored hash of a key's text.
std::array<uint8_t, 32> HashApiKey(std::string_view key);

// True if `name` is a valid tenant name.
bool ValidTenantName(std::string_view name);

// A new key and its line for the file. `random` gives the id (first 6 bytes) and the secret (the
// next 32 bytes): 38 bytes from the OS's random generator.
struct NewApiKey {
  std::string id;
  std::string key;   // shown once, never stored
  std::string line;  // to append to the file, with its newline
};
[[nodiscard]] Result<NewApiKey> MakeApiKey(const Tenant& tenant,
                                           std::span<const uint8_t, 38> random);

// The file's line for an entry (without a newline).
std::string FormatApiKeyLine(const ApiKeyEntry& entry);

// The token of an `Authorization: Bearer <token>` value ("Bearer" in any case), or nullopt.
std::optional<std::string_view> BearerToken(std::string_view authorization);

}  // namespace hearsay::net
