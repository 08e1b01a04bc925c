#include "hearsay/gossip/keyring.h"

#include <sodium.h>

#include <algorithm>
#include <cstring>

namespace hearsay::gossip {
namespace {

// Labels for the values derived from a key. Changing one is a wire-format change.
constexpr std::string_view kKeyIdLabel = "hearsay/gossip/key-id/v1";
constexpr std::string_view kAeadKeyLabel = "hearsay/gossip/aead-key/v1";

void KeyedBlake2b(std::span<const uint8_t, kClusterKeyBytes> key, std::string_view label,
                  std::span<uint8_t> out) {
  // Only fails for out-of-range lengths, which are constants here.
  const int rc = crypto_generichash(out.data(), out.size(),
                                    reinterpret_cast<const unsigned char*>(label.data()),
                                    label.size(), key.data(), key.size());
  HEARSAY_CHECK(rc == 0);
}

bool IsBase64Char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/';
}

bool IsHexChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

std::string Describe(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x21 && u < 0x7f) return std::string("'") + c + "'";
  static constexpr char kHex[] = "0123456789abcdef";
  return std::string("byte 0x") + kHex[u >> 4] + kHex[u & 15];
}

}  // namespace

ClusterKey::ClusterKey(std::span<const uint8_t, kClusterKeyBytes> secret) {
  std::copy(secret.begin(), secret.end(), secret_.begin());
  KeyedBlake2b(secret_, kAeadKeyLabel, aead_key_);
  std::array<uint8_t, crypto_generichash_BYTES_MIN> digest;
  KeyedBlake2b(secret_, kKeyIdLabel, digest);
  id_ = static_cast<KeyId>(digest[0]) | static_cast<KeyId>(digest[1]) << 8 |
        static_cast<KeyId>(digest[2]) << 16 | static_cast<KeyId>(digest[3]) << 24;
}

ClusterKey::~ClusterKey() {
  sodium_memzero(secret_.data(), secret_.size());
  sodium_memzero(aead_key_.data(), aead_key_.size());
}

Result<ClusterKey> ClusterKey::FromBytes(std::span<const uint8_t> bytes) {
  if (bytes.size() != kClusterKeyBytes) {
    return InvalidArgumentError("a cluster key is " + std::to_string(kClusterKeyBytes) +
                                " bytes, got " + std::to_string(bytes.size()));
  }
  return ClusterKey(bytes.first<kClusterKeyBytes>());
}

Result<ClusterKey> ClusterKey::Parse(std::string_view text) {
  while (!text.empty() && IsSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsSpace(text.back())) text.remove_suffix(1);
  if (text.empty()) {
    return InvalidArgumentError("cluster key is empty; generate one with `hearsay keygen`");
  }
  if (text.size() == 2 * kClusterKeyBytes && std::all_of(text.begin(), text.end(), IsHexChar)) {
    return InvalidArgumentError(
        "cluster key looks like hex; expected base64 of 32 bytes (44 characters), as printed by "
        "`hearsay keygen`");
  }
  // Padding is at most two '=' at the very end; anything else outside the alphabet is named.
  size_t body = text.size();
  while (body > 0 && text.size() - body < 2 && text[body - 1] == '=') --body;
  for (size_t i = 0; i < body; ++i) {
    const char c = text[i];
    if (IsBase64Char(c)) continue;
    std::string why =
        "cluster key is not base64: " + Describe(c) + " at position " + std::to_string(i + 1);
    if (c == '-' || c == '_') why += " (URL-safe base64; use the standard alphabet with + and /)";
    if (IsSpace(c)) why += " (whitespace inside the key)";
    return InvalidArgumentError(why);
  }
  if (text.size() != kClusterKeyBase64Chars) {
    return InvalidArgumentError("cluster key must be " + std::to_string(kClusterKeyBase64Chars) +
                                " base64 characters (32 bytes), got " +
                                std::to_string(text.size()) + " characters");
  }
  std::array<uint8_t, kClusterKeyBytes + 2> decoded;
  size_t decoded_len = 0;
  const char* end = nullptr;
  if (sodium_base642bin(decoded.data(), decoded.size(), text.data(), text.size(), nullptr,
                        &decoded_len, &end, sodium_base64_VARIANT_ORIGINAL) != 0 ||
      end != text.data() + text.size()) {
    sodium_memzero(decoded.data(), decoded.size());
    return InvalidArgumentError(
        "cluster key is not valid base64 (bad padding: 32 bytes encode as 43 characters and "
        "one '=')");
  }
  if (decoded_len != kClusterKeyBytes) {
    sodium_memzero(decoded.data(), decoded.size());
    return InvalidArgumentError("cluster key must decode to 32 bytes, got " +
                                std::to_string(decoded_len));
  }
  ClusterKey key(std::span<const uint8_t, kClusterKeyBytes>(decoded.data(), kClusterKeyBytes));
  sodium_memzero(decoded.data(), decoded.size());
  return key;
}

std::string ClusterKey::ToBase64() const {
  std::array<char, kClusterKeyBase64Chars + 1> out;
  sodium_bin2base64(out.data(), out.size(), secret_.data(), secret_.size(),
                    sodium_base64_VARIANT_ORIGINAL);
  return std::string(out.data(), kClusterKeyBase64Chars);
}

std::string ClusterKey::IdHex() const {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(8, '0');
  for (int i = 0; i < 8; ++i) out[i] = kHex[(id_ >> (28 - 4 * i)) & 15];
  return out;
}

bool operator==(const ClusterKey& a, const ClusterKey& b) {
  return sodium_memcmp(a.secret_.data(), b.secret_.data(), kClusterKeyBytes) == 0;
}

Keyring::Keyring(const ClusterKey& primary) { keys_.push_back(primary); }

Result<Keyring> Keyring::ParseFile(std::string_view text) {
  Keyring ring;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    ++line_no;
    while (!line.empty() && IsSpace(line.front())) line.remove_prefix(1);
    if (line.empty() || line.front() == '#') continue;
    auto key = ClusterKey::Parse(line);
    if (!key.ok()) {
      return InvalidArgumentError("key file line " + std::to_string(line_no) + ": " +
                                  key.status().message());
    }
    if (ring.Contains(*key)) {
      return InvalidArgumentError("key file line " + std::to_string(line_no) +
                                  ": key repeats an earlier line");
    }
    const Status installed = ring.Install(*key);
    if (!installed.ok()) {
      return InvalidArgumentError("key file line " + std::to_string(line_no) + ": " +
                                  installed.message());
    }
  }
  if (ring.empty()) {
    return InvalidArgumentError("key file holds no key; generate one with `hearsay keygen`");
  }
  return ring;
}

std::string Keyring::ToFile() const {
  std::string out;
  for (const ClusterKey& key : List()) {
    out += key.ToBase64();
    out += '\n';
  }
  return out;
}

size_t Keyring::IndexOf(const ClusterKey& key) const {
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i] == key) return i;
  }
  return keys_.size();
}

Status Keyring::Install(const ClusterKey& key) {
  if (IndexOf(key) != keys_.size()) return OkStatus();
  if (keys_.size() >= kMaxKeys) {
    return ResourceExhaustedError("keyring is full (" + std::to_string(kMaxKeys) +
                                  " keys); remove an old key first");
  }
  keys_.push_back(key);
  return OkStatus();
}

Status Keyring::Use(const ClusterKey& key) {
  const size_t i = IndexOf(key);
  if (i == keys_.size()) {
    return NotFoundError("key " + key.IdHex() + " is not installed; install it first");
  }
  primary_ = i;
  return OkStatus();
}

Status Keyring::Remove(const ClusterKey& key) {
  const size_t i = IndexOf(key);
  if (i == keys_.size()) return NotFoundError("key " + key.IdHex() + " is not installed");
  if (i == primary_) {
    return FailedPreconditionError("key " + key.IdHex() +
                                   " is the primary key; use another key before removing it");
  }
  keys_.erase(keys_.begin() + static_cast<std::ptrdiff_t>(i));
  if (primary_ > i) --primary_;
  return OkStatus();
}

std::vector<ClusterKey> Keyring::List() const {
  std::vector<ClusterKey> out;
  out.reserve(keys_.size());
  if (!keys_.empty()) out.push_back(keys_[primary_]);
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (i != primary_) out.push_back(keys_[i]);
  }
  return out;
}

std::vector<const ClusterKey*> Keyring::FindById(KeyId id) const {
  std::vector<const ClusterKey*> out;
  if (!keys_.empty() && keys_[primary_].id() == id) out.push_back(&keys_[primary_]);
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (i != primary_ && keys_[i].id() == id) out.push_back(&keys_[i]);
  }
  return out;
}

bool Keyring::Contains(const ClusterKey& key) const { return IndexOf(key) != keys_.size(); }

}  // namespace hearsay::gossip
