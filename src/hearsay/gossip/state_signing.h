// Signed origin state: each node signs its own state (cache summary, load record, service record,
// usage record) with its own Ed25519 key, so a member holding the cluster key can lie about itself
// but cannot forge another member's state, not even when it relays that state
// (docs/gossip-security.md, "Signed origin state").
//
// What is signed is a *state statement*: (origin id, generation, version V, landmark stride,
// commitment to the origin's whole state at V). The commitment is a homomorphic multiset hash
// (LtHash16, 1,024 lanes of 16 bits: Bellare-Micciancio's construction as Facebook's LtHash uses
// it) over the origin's live summary keys with their block indices, its load record and its
// service record. It updates in O(1) per changed element, so any replica that knows the state at
// version F and receives a run (F, V] computes the commitment at V from its own state and the run,
// whatever the run omits (superseded writes) and whoever relays it, and checks the origin's
// signature over the statement at V. A run therefore needs exactly one signature: the one for its
// `to` version, which travels with it (wire.h, OriginDelta::signature).
//
// Modes (SignatureMode): off; ed25519 (real keys, real commitments, real verification); modeled
// (the simulator's cost model: deltas carry 64 bytes of signature and every verification is
// counted, but no cryptography runs and every signature "verifies").
//
// Thread-safety: plain values and pure functions; StateHash is a value type.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "hearsay/common/ids.h"
#include "hearsay/common/status.h"

namespace hearsay::gossip {

enum class SignatureMode : uint8_t { kOff = 0, kEd25519 = 1, kModeled = 2 };
// "off", "ed25519", "modeled"; and back (INVALID_ARGUMENT for anything else).
std::string_view SignatureModeName(SignatureMode mode);
Result<SignatureMode> ParseSignatureMode(std::string_view name);

inline constexpr size_t kSigningSeedBytes = 32;
inline constexpr size_t kSigningPublicKeyBytes = 32;
inline constexpr size_t kSignatureBytes = 64;
using Signature = std::array<uint8_t, kSignatureBytes>;
using PublicKey = std::array<uint8_t, kSigningPublicKeyBytes>;

// A node's Ed25519 key pair, derived from a 32-byte seed (the core never draws randomness: the
// daemon reads the seed from security.signing_key_file or draws it at start).
class SigningKey {
 public:
  static SigningKey FromSeed(std::span<const uint8_t, kSigningSeedBytes> seed);
  const PublicKey& public_key() const { return public_key_; }
  Signature Sign(std::span<const uint8_t> message) const;

 private:
  PublicKey public_key_{};
  std::array<uint8_t, 64> secret_key_{};
};

// True if `signature` is `key`'s signature of `message`.
bool VerifySignature(std::span<const uint8_t> key, std::span<const uint8_t> message,
                     const Signature& signature);

// LtHash16: a commitment to a multiset of byte strings, updated by Add and Remove in any order.
class StateHash {
 public:
  static constexpr size_t kLanes = 1024;
  void Add(std::span<const uint8_t> element) { Mix(element, true); }
  void Remove(std::span<const uint8_t> element) { Mix(element, false); }
  // BLAKE2b-256 of the lanes: what the statement signs.
  std::array<uint8_t, 32> Digest() const;
  friend bool operator==(const StateHash&, const StateHash&) = default;

 private:
  void Mix(std::span<const uint8_t> element, bool add);
  std::array<uint16_t, kLanes> lanes_{};
};

// The elements of an origin's state, as the commitment hashes them.
std::array<uint8_t, 13> CacheElement(uint64_t summary_key, uint32_t block_index);
// The statement signed for (id, generation) at `version`.
std::string StateStatement(const NodeId& id, Generation generation, uint64_t version,
                           uint32_t stride, const std::array<uint8_t, 32>& commitment);

// The seed in a signing key file: one line of standard base64 (44 characters) for 32 bytes, as
// `hearsay keygen` prints; blank lines and lines starting with '#' are ignored.
Result<std::array<uint8_t, kSigningSeedBytes>> ParseSigningKeyFile(std::string_view text);

}  // namespace hearsay::gossip
