// Fuzz target: a member's /health body, read by CertifiedKeySource::KeyFromHealth to bind the
// member's gossip signing key under mutual TLS, comes from the network. Properties checked (a
// violation aborts):
//   - KeyFromHealth never crashes, and a key it accepts is exactly 32 bytes;
//   - an accepted key, stated again in a minimal body for the same node and generation, gives
//     back the same key (EncodeKey and KeyFromHealth round-trip).
// The seed corpus (fuzz/corpus/certified_key_source_fuzz/) holds valid and near-valid bodies.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "hearsay/common/check.h"
#include "hearsay/net/certified_key_source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using hearsay::net::CertifiedKeySource;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  hearsay::Result<std::string> key = CertifiedKeySource::KeyFromHealth(body, "node-1", 7);
  if (!key.ok()) return 0;
  HEARSAY_CHECK(key->size() == 32);
  const std::string again = R"({"node":"node-1","generation":"7","signing_key":")" +
                            CertifiedKeySource::EncodeKey(*key) + R"("})";
  hearsay::Result<std::string> back = CertifiedKeySource::KeyFromHealth(again, "node-1", 7);
  HEARSAY_CHECK(back.ok() && *back == *key);
  return 0;
}
