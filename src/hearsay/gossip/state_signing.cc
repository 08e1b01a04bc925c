#include "hearsay/gossip/state_signing.h"

#include <sodium.h>

#include <cstdlib>
#include <cstring>

#include "hearsay/gossip/keyring.h"

namespace hearsay::gossip {

std::string_view SignatureModeName(SignatureMode mode) {
  switch (mode) {
    case SignatureMode::kOff:
      return "off";
    case SignatureMode::kEd25519:
      return "ed25519";
    case SignatureMode::kModeled:
      return "modeled";
  }
  return "off";
}

Result<SignatureMode> ParseSignatureMode(std::string_view name) {
  for (SignatureMode m : {SignatureMode::kOff, SignatureMode::kEd25519, SignatureMode::kModeled}) {
    if (name == SignatureModeName(m)) return m;
  }
  return InvalidArgumentError("signatures: want off, ed25519 or modeled");
}

SigningKey SigningKey::FromSeed(std::span<const uint8_t, kSigningSeedBytes> seed) {
  SigningKey k;
  if (sodium_init() < 0) std::abort();
  crypto_sign_seed_keypair(k.public_key_.data(), k.secret_key_.data(), seed.data());
  return k;
}

Signature SigningKey::Sign(std::span<const uint8_t> message) const {
  Signature sig{};
  crypto_sign_detached(sig.data(), nullptr, message.data(), message.size(), secret_key_.data());
  return sig;
}

bool VerifySignature(std::span<const uint8_t> key, std::span<const uint8_t> message,
                     const Signature& signature) {
  if (key.size() != kSigningPublicKeyBytes) return false;
  return crypto_sign_verify_detached(signature.data(), message.data(), message.size(),
                                     key.data()) == 0;
}

void StateHash::Mix(std::span<const uint8_t> element, bool add) {
  // Each element expands to 2,048 pseudo-random bytes: ChaCha20's key stream under
  // BLAKE2b-256("hearsay/gossip/state-element/v1" || element).
  static constexpr char kDomain[] = "hearsay/gossip/state-element/v1";
  std::array<uint8_t, crypto_stream_chacha20_KEYBYTES> key{};
  crypto_generichash_state st;
  crypto_generichash_init(&st, nullptr, 0, key.size());
  crypto_generichash_update(&st, reinterpret_cast<const uint8_t*>(kDomain), sizeof(kDomain) - 1);
  crypto_generichash_update(&st, element.data(), element.size());
  crypto_generichash_final(&st, key.data(), key.size());
  std::array<uint8_t, kLanes * 2> stream{};
  const std::array<uint8_t, crypto_stream_chacha20_NONCEBYTES> nonce{};
  crypto_stream_chacha20(stream.data(), stream.size(), nonce.data(), key.data());
  for (size_t i = 0; i < kLanes; ++i) {
    const auto v = static_cast<uint16_t>(stream[2 * i] | stream[2 * i + 1] << 8);
    lanes_[i] = static_cast<uint16_t>(add ? lanes_[i] + v : lanes_[i] - v);
  }
}

std::array<uint8_t, 32> StateHash::Digest() const {
  std::array<uint8_t, kLanes * 2> bytes{};
  for (size_t i = 0; i < kLanes; ++i) {
    bytes[2 * i] = static_cast<uint8_t>(lanes_[i]);
    bytes[2 * i + 1] = static_cast<uint8_t>(lanes_[i] >> 8);
  }
  std::array<uint8_t, 32> out{};
  crypto_generichash(out.data(), out.size(), bytes.data(), bytes.size(), nullptr, 0);
  return out;
}

std::array<uint8_t, 13> CacheElement(uint64_t summary_key, uint32_t block_index) {
  std::array<uint8_t, 13> e{};
  e[0] = 'C';
  for (int i = 0; i < 8; ++i) e[1 + i] = static_cast<uint8_t>(summary_key >> (8 * i));
  for (int i = 0; i < 4; ++i) e[9 + i] = static_cast<uint8_t>(block_index >> (8 * i));
  return e;
}

std::string StateStatement(const NodeId& id, Generation generation, uint64_t version,
                           uint32_t stride, const std::array<uint8_t, 32>& commitment) {
  std::string s = "hearsay/gossip/state/v2";
  s.push_back(static_cast<char>(id.size()));
  s += id;
  for (uint64_t v : {uint64_t{generation}, version, uint64_t{stride}}) {
    for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
  }
  s.append(reinterpret_cast<const char*>(commitment.data()), commitment.size());
  return s;
}

Result<std::array<uint8_t, kSigningSeedBytes>> ParseSigningKeyFile(std::string_view text) {
  auto ring = Keyring::ParseFile(text);
  if (!ring.ok()) return ring.status();
  if (ring->size() != 1) {
    return InvalidArgumentError("signing key file: want exactly one key (from `hearsay keygen`)");
  }
  std::array<uint8_t, kSigningSeedBytes> seed{};
  const auto bytes = ring->primary()->bytes();
  static_assert(kSigningSeedBytes == kClusterKeyBytes);
  std::memcpy(seed.data(), bytes.data(), seed.size());
  return seed;
}

}  // namespace hearsay::gossip
