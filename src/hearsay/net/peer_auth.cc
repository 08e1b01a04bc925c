#include "hearsay/net/peer_auth.h"

#include <sodium.h>

#include <array>

namespace hearsay::net {

namespace {
constexpr std::string_view kContext = "hearsay peer auth v1";
}  // namespace

std::string PeerAuthToken(const gossip::ClusterKey& key) {
  std::array<uint8_t, 32> mac{};
  crypto_generichash(mac.data(), mac.size(), reinterpret_cast<const uint8_t*>(kContext.data()),
                     kContext.size(), key.bytes().data(), key.bytes().size());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(64);
  for (uint8_t b : mac) {
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 15]);
  }
  sodium_memzero(mac.data(), mac.size());
  return hex;
}

PeerAuthenticator::PeerAuthenticator(const gossip::Keyring& keyring) {
  if (const gossip::ClusterKey* primary = keyring.primary()) token_ = PeerAuthToken(*primary);
  for (const gossip::ClusterKey& k : keyring.installed()) accepted_.push_back(PeerAuthToken(k));
}

bool PeerAuthenticator::Check(std::string_view token) const {
  if (insecure_) return true;
  bool ok = false;
  for (const std::string& a : accepted_) {
    if (a.size() == token.size() && sodium_memcmp(a.data(), token.data(), a.size()) == 0) {
      ok = true;
    }
  }
  return ok;
}

}  // namespace hearsay::net
