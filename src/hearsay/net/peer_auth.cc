#include "hearsay/net/peer_auth.h"

#include <sodium.h>

#include <array>

namespace hearsay::net {

namespace {
constexpr std::string_view kContext = "hearsay peer auth v1";
}  // namespace

std::string DerivedToken(const gossip::ClusterKey& key, std::string_view context) {
  std::array<uint8_t, 32> mac{};
  crypto_generichash(mac.data(), mac.size(), reinterpret_cast<const uint8_t*>(context.data()),
                     context.size(), key.bytes().data(), key.bytes().size());
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

std::string PeerAuthToken(const gossip::ClusterKey& key) { return DerivedToken(key, kContext); }

PeerAuthenticator::PeerAuthenticator(const gossip::Keyring& keyring) { Update(keyring); }

PeerAuthenticator::PeerAuthenticator(PeerAuthenticator&& other) noexcept
    : insecure_(other.insecure_) {
  std::lock_guard<std::mutex> lock(other.mu_);
  token_ = std::move(other.token_);
  accepted_ = std::move(other.accepted_);
}

void PeerAuthenticator::Update(const gossip::Keyring& keyring) {
  if (insecure_) return;
  std::string token;
  if (const gossip::ClusterKey* primary = keyring.primary()) token = PeerAuthToken(*primary);
  std::vector<std::string> accepted;
  for (const gossip::ClusterKey& k : keyring.installed()) accepted.push_back(PeerAuthToken(k));
  std::lock_guard<std::mutex> lock(mu_);
  token_ = std::move(token);
  accepted_ = std::move(accepted);
}

bool PeerAuthenticator::Check(std::string_view token) const {
  if (insecure_) return true;
  std::lock_guard<std::mutex> lock(mu_);
  bool ok = false;
  for (const std::string& a : accepted_) {
    if (a.size() == token.size() && sodium_memcmp(a.data(), token.data(), a.size()) == 0) {
      ok = true;
    }
  }
  return ok;
}

std::string PeerAuthenticator::token() const {
  std::lock_guard<std::mutex> lock(mu_);
  return token_;
}

}  // namespace hearsay::net
