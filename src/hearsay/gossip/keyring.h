// ClusterKey and Keyring: the shared secrets that authenticate and encrypt gossip.
//
// A ClusterKey is 32 secret bytes shared by every node of a cluster. Its text form is standard
// base64 with padding (44 characters), as printed by `hearsay keygen` and read from
// --cluster-key-file. The core never draws OS randomness, so a new key is made from bytes the
// caller supplies (the CLI passes 32 bytes from libsodium's randombytes_buf):
// ClusterKey::FromBytes(span).
//
// The raw key is never used directly: keyed BLAKE2b derives, with distinct labels,
//   - the key id: 4 public bytes carried in every envelope so a receiver tries the right key
//     first; it is a PRF output and reveals nothing about the key;
//   - the AEAD key the envelope encrypts with, domain-separated from every other use of the
//     cluster secret (for example the block-key namespace).
//
// A Keyring holds the installed keys, like memberlist/Serf's keyring: sending uses the primary
// key; receiving tries every installed key whose id matches the envelope's. Rotation without a
// restart and without false deaths: Install(new) on every node, then Use(new) on every node, then
// Remove(old) on every node (see docs/gossip-security.md).
//
// Ownership: ClusterKey is a value (copies copy the secret; the destructor wipes it). The node
// owns its Keyring; envelopes read it per call. Thread-safety: none; plain values, used on the
// core's thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/common/status.h"

namespace hearsay::gossip {

inline constexpr size_t kClusterKeyBytes = 32;
// Length of a key's text form: base64 of 32 bytes with one '=' of padding.
inline constexpr size_t kClusterKeyBase64Chars = 44;

// The public 4-byte identifier of a key (little-endian on the wire). Two different keys can share
// an id with probability 2^-32; the keyring and envelope handle that by trying each of them.
using KeyId = uint32_t;

class ClusterKey {
 public:
  // A key from exactly 32 bytes (for `hearsay keygen`: 32 bytes of OS randomness). Any other
  // length is INVALID_ARGUMENT.
  static Result<ClusterKey> FromBytes(std::span<const uint8_t> bytes);

  // A key from its text form: base64 (standard alphabet, with padding) of 32 bytes. Leading and
  // trailing whitespace (a key file's newline) is ignored. Errors are INVALID_ARGUMENT and say
  // what is wrong: empty, a bad character and its position, hex instead of base64, or a wrong
  // decoded length.
  static Result<ClusterKey> Parse(std::string_view text);

  ClusterKey(const ClusterKey&) = default;
  ClusterKey& operator=(const ClusterKey&) = default;
  ~ClusterKey();

  // The text form (44 characters, no newline); Parse(ToBase64()) gives back an equal key.
  std::string ToBase64() const;
  // The key id, derived from the key.
  KeyId id() const { return id_; }
  // The key id as 8 lowercase hex digits, for logs and `hearsay keys list`; safe to print.
  std::string IdHex() const;
  // The raw secret.
  std::span<const uint8_t, kClusterKeyBytes> bytes() const { return secret_; }
  // The XChaCha20-Poly1305 key the envelope uses: BLAKE2b keyed with the secret over a fixed
  // label, so gossip encryption never shares key material with other uses of the secret.
  std::span<const uint8_t, kClusterKeyBytes> aead_key() const { return aead_key_; }

  // Constant-time comparison of the secrets.
  friend bool operator==(const ClusterKey& a, const ClusterKey& b);

 private:
  explicit ClusterKey(std::span<const uint8_t, kClusterKeyBytes> secret);

  std::array<uint8_t, kClusterKeyBytes> secret_;
  std::array<uint8_t, kClusterKeyBytes> aead_key_;
  KeyId id_ = 0;
};

// The installed keys and which one is primary.
//
// Invariants:
//   - at most kMaxKeys keys, pairwise different (by secret);
//   - primary_ < keys_.size() whenever keys_ is non-empty;
//   - the primary key is never removed, so once a key is installed the keyring is never empty.
class Keyring {
 public:
  // The most keys a keyring holds; a rotation needs two, so this is generous.
  static constexpr size_t kMaxKeys = 16;

  // An empty keyring: Seal fails until a key is installed.
  Keyring() = default;

  // A keyring from a key file (what --cluster-key-file reads): one base64 key per line, the
  // first key primary; blank lines and lines starting with '#' are ignored. `hearsay keygen`
  // prints a one-key file. INVALID_ARGUMENT naming the line for a bad key, a repeated key, no
  // key at all, or more than kMaxKeys keys.
  static Result<Keyring> ParseFile(std::string_view text);
  // The key file for this keyring: primary first, then the others, one per line.
  std::string ToFile() const;
  // A keyring whose only key, `primary`, is primary.
  explicit Keyring(const ClusterKey& primary);

  // Makes `key` available for opening. The first key installed becomes primary. Installing an
  // installed key is OK and changes nothing. RESOURCE_EXHAUSTED beyond kMaxKeys.
  Status Install(const ClusterKey& key);
  // Makes the installed `key` primary, so it seals from now on. NOT_FOUND if not installed.
  Status Use(const ClusterKey& key);
  // Uninstalls `key`. NOT_FOUND if not installed; FAILED_PRECONDITION if it is primary (Use
  // another key first).
  Status Remove(const ClusterKey& key);

  // The key that seals, or nullptr if the keyring is empty.
  const ClusterKey* primary() const { return keys_.empty() ? nullptr : &keys_[primary_]; }
  // Every installed key, primary first, then in installation order.
  std::vector<ClusterKey> List() const;
  // Every installed key in installation order, without copying (valid until the next change).
  std::span<const ClusterKey> installed() const { return keys_; }
  // The installed keys whose id is `id`, primary first; usually zero or one.
  std::vector<const ClusterKey*> FindById(KeyId id) const;
  // True if `key` is installed.
  bool Contains(const ClusterKey& key) const;
  size_t size() const { return keys_.size(); }
  bool empty() const { return keys_.empty(); }

 private:
  // The index of `key` in keys_, or keys_.size().
  size_t IndexOf(const ClusterKey& key) const;

  std::vector<ClusterKey> keys_;
  size_t primary_ = 0;
};

}  // namespace hearsay::gossip
