// Fuzz target: the API-keys file (api_keys.h) is read from disk on every reload and may be edited
// by hand or by a tool; its parser must stay bounded on any bytes. Properties checked (a
// violation aborts):
//   - Parse never crashes, and what it accepts holds at most kMaxEntries keys, each with a valid
//     id and tenant name and limits within kMaxLimit;
//   - an accepted file, written back line by line (FormatApiKeyLine), parses to the same entries
//     and tenants (the format round-trips);
//   - the input, presented as a key, authenticates only if it is a key the table holds: its hash
//     equals the stored hash of the entry its id names.
// The seed corpus (fuzz/corpus/api_keys_fuzz/) holds valid and near-valid files.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "hearsay/common/check.h"
#include "hearsay/net/api_keys.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hearsay::net;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  hearsay::Result<ApiKeys> keys = ApiKeys::Parse(text);
  if (!keys.ok()) return 0;
  HEARSAY_CHECK(keys->entries().size() <= ApiKeys::kMaxEntries);
  std::string written;
  for (const ApiKeyEntry& e : keys->entries()) {
    HEARSAY_CHECK(ValidTenantName(e.tenant.name));
    HEARSAY_CHECK(!e.id.empty() && e.id.size() <= ApiKeys::kMaxIdBytes);
    HEARSAY_CHECK(e.tenant.limits.rps <= ApiKeys::kMaxLimit);
    HEARSAY_CHECK(e.tenant.limits.tpm <= ApiKeys::kMaxLimit);
    HEARSAY_CHECK(keys->FindTenant(e.tenant.name) != nullptr);
    written += FormatApiKeyLine(e) + "\n";
  }
  hearsay::Result<ApiKeys> again = ApiKeys::Parse(written);
  HEARSAY_CHECK(again.ok());
  HEARSAY_CHECK(again->entries().size() == keys->entries().size());
  for (size_t i = 0; i < keys->entries().size(); ++i) {
    HEARSAY_CHECK(again->entries()[i].id == keys->entries()[i].id);
    HEARSAY_CHECK(again->entries()[i].hash == keys->entries()[i].hash);
    HEARSAY_CHECK(again->entries()[i].tenant == keys->entries()[i].tenant);
  }
  HEARSAY_CHECK(again->tenants() == keys->tenants());
  // The input as a presented key: accepted only with the hash its id's entry stores.
  if (const Tenant* t = keys->Authenticate(text)) {
    bool found = false;
    for (const ApiKeyEntry& e : keys->entries()) {
      found |= e.hash == HashApiKey(text) && e.tenant.name == t->name;
    }
    HEARSAY_CHECK(found);
  }
  return 0;
}
