#include "hearsay/gossip/envelope.h"

#include <sodium.h>

#include <algorithm>
#include <cstring>

namespace hearsay::gossip {
namespace {

constexpr uint8_t kMagic0 = 'H';
constexpr uint8_t kMagic1 = 'S';
constexpr uint8_t kKnownFlags = kEnvelopeFlagInsecure | kEnvelopeFlagStream;
constexpr size_t kMaxHeaderBytes = kEnvelopeFixedPrefix + kMaxSenderBytes + kEnvelopeFixedSuffix;
constexpr size_t kNonceBytes = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
constexpr std::string_view kClusterLabel = "hearsay/gossip/cluster/v1";

static_assert(kNonceBytes == 24);
static_assert(crypto_aead_xchacha20poly1305_ietf_ABYTES == kEnvelopeTagBytes);
static_assert(crypto_aead_xchacha20poly1305_ietf_KEYBYTES == kClusterKeyBytes);

void PutLe(uint8_t* p, uint64_t v, int width) {
  for (int i = 0; i < width; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t GetLe(const uint8_t* p, int width) {
  uint64_t v = 0;
  for (int i = 0; i < width; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

// BLAKE2b-256(label || cluster id): its first 4 bytes are the header's cluster tag, and all 32
// go into the associated data, so the full cluster id is authenticated without being sent.
std::array<uint8_t, 32> ClusterDigest(std::string_view cluster_id) {
  std::array<uint8_t, 32> out;
  crypto_generichash_state st;
  crypto_generichash_init(&st, nullptr, 0, out.size());
  crypto_generichash_update(&st, reinterpret_cast<const unsigned char*>(kClusterLabel.data()),
                            kClusterLabel.size());
  crypto_generichash_update(&st, reinterpret_cast<const unsigned char*>(cluster_id.data()),
                            cluster_id.size());
  crypto_generichash_final(&st, out.data(), out.size());
  return out;
}

// Unique per (key, sender, generation, channel, counter); see the header for why.
std::array<uint8_t, kNonceBytes> MakeNonce(KeyId key_id, std::span<const uint8_t> sender,
                                           Generation generation, Channel channel,
                                           uint64_t counter) {
  std::array<uint8_t, kNonceBytes> nonce;
  const uint64_t word = counter | (channel == Channel::kStream ? kMaxEnvelopeCounter : 0);
  PutLe(nonce.data(), word, 8);
  PutLe(nonce.data() + 8, generation, 8);
  std::array<uint8_t, 4> id;
  PutLe(id.data(), key_id, 4);
  std::array<uint8_t, 16> tag;
  crypto_generichash_state st;
  crypto_generichash_init(&st, nullptr, 0, tag.size());
  crypto_generichash_update(&st, id.data(), id.size());
  crypto_generichash_update(&st, sender.data(), sender.size());
  crypto_generichash_final(&st, tag.data(), tag.size());
  std::copy_n(tag.begin(), 8, nonce.begin() + 16);
  return nonce;
}

Status ValidateIds(std::string_view cluster_id, std::string_view sender) {
  if (cluster_id.empty() || cluster_id.size() > kMaxClusterIdBytes) {
    return InvalidArgumentError("cluster id must be 1.." + std::to_string(kMaxClusterIdBytes) +
                                " bytes, got " + std::to_string(cluster_id.size()));
  }
  if (sender.empty() || sender.size() > kMaxSenderBytes) {
    return InvalidArgumentError("node id must be 1.." + std::to_string(kMaxSenderBytes) +
                                " bytes, got " + std::to_string(sender.size()));
  }
  return OkStatus();
}

}  // namespace

std::string_view DropReasonName(DropReason reason) {
  switch (reason) {
    case DropReason::kOversized:
      return "oversized";
    case DropReason::kTruncated:
      return "truncated";
    case DropReason::kMalformed:
      return "malformed";
    case DropReason::kUnknownVersion:
      return "unknown-version";
    case DropReason::kWrongCluster:
      return "wrong-cluster";
    case DropReason::kSecurityMismatch:
      return "security-mismatch";
    case DropReason::kUnauthenticated:
      return "unauthenticated";
    case DropReason::kReplayed:
      return "replayed";
  }
  return "unknown";
}

uint64_t DropCounters::total() const {
  uint64_t sum = 0;
  for (uint64_t n : by_reason) sum += n;
  return sum;
}

// ---- Sealer ----

Sealer::Sealer(std::string_view cluster_id, NodeId sender, Generation generation,
               const Keyring* keyring, EnvelopeOptions options)
    : sender_(std::move(sender)),
      generation_(generation),
      keyring_(keyring),
      options_(options),
      cluster_digest_(ClusterDigest(cluster_id)) {
  cluster_tag_ = static_cast<uint32_t>(GetLe(cluster_digest_.data(), 4));
}

Result<Sealer> Sealer::Create(std::string_view cluster_id, NodeId sender, Generation generation,
                              const Keyring* keyring, EnvelopeOptions options) {
  if (keyring == nullptr) {
    return InvalidArgumentError("a secure sealer needs a keyring (or use the insecure sealer)");
  }
  HEARSAY_RETURN_IF_ERROR(ValidateIds(cluster_id, sender));
  return Sealer(cluster_id, std::move(sender), generation, keyring, options);
}

Result<Sealer> Sealer::CreateInsecureUnauthenticated(std::string_view cluster_id, NodeId sender,
                                                     Generation generation,
                                                     EnvelopeOptions options) {
  HEARSAY_RETURN_IF_ERROR(ValidateIds(cluster_id, sender));
  return Sealer(cluster_id, std::move(sender), generation, nullptr, options);
}

size_t Sealer::SealedBytes(size_t plaintext_bytes) const {
  return kEnvelopeFixedPrefix + sender_.size() + kEnvelopeFixedSuffix + plaintext_bytes +
         (insecure() ? 0 : kEnvelopeTagBytes);
}

size_t Sealer::MaxPlaintextBytes(Channel channel) const {
  const size_t overhead = SealedBytes(0);
  const size_t max = std::min<size_t>(options_.MaxBytes(channel), UINT32_MAX);
  return max > overhead ? max - overhead : 0;
}

Result<std::vector<uint8_t>> Sealer::Seal(Channel channel, std::span<const uint8_t> plaintext) {
  const size_t lane = static_cast<size_t>(channel);
  HEARSAY_CHECK(lane < next_counter_.size());
  const ClusterKey* key = nullptr;
  if (!insecure()) {
    key = keyring_->primary();
    if (key == nullptr) return FailedPreconditionError("keyring has no key to seal with");
  }
  if (plaintext.size() > MaxPlaintextBytes(channel)) {
    return ResourceExhaustedError("a " + std::to_string(plaintext.size()) +
                                  "-byte message does not fit the channel's " +
                                  std::to_string(options_.MaxBytes(channel)) + "-byte envelope");
  }
  const uint64_t counter = next_counter_[lane];
  if (counter >= kMaxEnvelopeCounter) {
    return ResourceExhaustedError("envelope counter exhausted; restart with a new generation");
  }

  const size_t header_bytes = kEnvelopeFixedPrefix + sender_.size() + kEnvelopeFixedSuffix;
  const size_t body_bytes = plaintext.size() + (insecure() ? 0 : kEnvelopeTagBytes);
  std::vector<uint8_t> out(header_bytes + body_bytes);
  uint8_t* p = out.data();
  p[0] = kMagic0;
  p[1] = kMagic1;
  p[2] = kEnvelopeVersion;
  p[3] = static_cast<uint8_t>((insecure() ? kEnvelopeFlagInsecure : 0) |
                              (channel == Channel::kStream ? kEnvelopeFlagStream : 0));
  PutLe(p + 4, cluster_tag_, 4);
  PutLe(p + 8, key == nullptr ? 0 : key->id(), 4);
  p[12] = static_cast<uint8_t>(sender_.size());
  std::memcpy(p + kEnvelopeFixedPrefix, sender_.data(), sender_.size());
  uint8_t* suffix = p + kEnvelopeFixedPrefix + sender_.size();
  PutLe(suffix, generation_, 8);
  PutLe(suffix + 8, counter, 8);
  PutLe(suffix + 16, body_bytes, 4);
  uint8_t* body = p + header_bytes;

  if (insecure()) {
    if (!plaintext.empty()) std::memcpy(body, plaintext.data(), plaintext.size());
  } else {
    std::array<uint8_t, kMaxHeaderBytes + 32> ad;
    std::memcpy(ad.data(), p, header_bytes);
    std::memcpy(ad.data() + header_bytes, cluster_digest_.data(), cluster_digest_.size());
    const auto nonce =
        MakeNonce(key->id(), {reinterpret_cast<const uint8_t*>(sender_.data()), sender_.size()},
                  generation_, channel, counter);
    unsigned long long written = 0;
    crypto_aead_xchacha20poly1305_ietf_encrypt(body, &written, plaintext.data(), plaintext.size(),
                                               ad.data(), header_bytes + cluster_digest_.size(),
                                               nullptr, nonce.data(), key->aead_key().data());
    HEARSAY_CHECK(written == body_bytes);
  }
  next_counter_[lane] = counter + 1;
  return out;
}

// ---- Opener ----

Opener::Opener(std::string_view cluster_id, const Keyring* keyring, EnvelopeOptions options)
    : keyring_(keyring),
      options_(options),
      cluster_digest_(ClusterDigest(cluster_id)),
      replay_(options.max_tracked_senders) {
  cluster_tag_ = static_cast<uint32_t>(GetLe(cluster_digest_.data(), 4));
}

Result<Opener> Opener::Create(std::string_view cluster_id, const Keyring* keyring,
                              EnvelopeOptions options) {
  if (keyring == nullptr) {
    return InvalidArgumentError("a secure opener needs a keyring (or use the insecure opener)");
  }
  HEARSAY_RETURN_IF_ERROR(ValidateIds(cluster_id, "-"));
  return Opener(cluster_id, keyring, options);
}

Result<Opener> Opener::CreateInsecureUnauthenticated(std::string_view cluster_id,
                                                     EnvelopeOptions options) {
  HEARSAY_RETURN_IF_ERROR(ValidateIds(cluster_id, "-"));
  return Opener(cluster_id, nullptr, options);
}

Status Opener::Drop(DropReason reason, std::string_view detail) {
  ++drops_.by_reason[static_cast<size_t>(reason)];
  std::string message = std::string(DropReasonName(reason)) + ": " + std::string(detail);
  switch (reason) {
    case DropReason::kOversized:
      return ResourceExhaustedError(std::move(message));
    case DropReason::kTruncated:
    case DropReason::kMalformed:
      return DataLossError(std::move(message));
    case DropReason::kUnknownVersion:
      return UnimplementedError(std::move(message));
    case DropReason::kWrongCluster:
      return PermissionDeniedError(std::move(message));
    case DropReason::kSecurityMismatch:
      return FailedPreconditionError(std::move(message));
    case DropReason::kUnauthenticated:
      return UnauthenticatedError(std::move(message));
    case DropReason::kReplayed:
      return AlreadyExistsError(std::move(message));
  }
  return InternalError(std::move(message));
}

Result<Opened> Opener::Open(Channel channel, std::span<const uint8_t> bytes) {
  const size_t max_bytes = options_.MaxBytes(channel);
  if (bytes.size() > max_bytes) {
    return Drop(DropReason::kOversized, std::to_string(bytes.size()) + " bytes exceed the " +
                                            std::to_string(max_bytes) + "-byte limit");
  }
  // Fields are checked in wire order, each as soon as its bytes are there, so a prefix of a
  // valid envelope is always "truncated".
  const uint8_t* p = bytes.data();
  const size_t size = bytes.size();
  if (size >= 1 && p[0] != kMagic0) return Drop(DropReason::kMalformed, "bad magic");
  if (size >= 2 && p[1] != kMagic1) return Drop(DropReason::kMalformed, "bad magic");
  if (size >= 3 && p[2] != kEnvelopeVersion) {
    return Drop(DropReason::kUnknownVersion, "version " + std::to_string(p[2]));
  }
  if (size < kEnvelopeFixedPrefix) return Drop(DropReason::kTruncated, "header cut short");
  const uint8_t flags = p[3];
  if ((flags & ~kKnownFlags) != 0) return Drop(DropReason::kMalformed, "reserved flag bits set");
  const Channel flagged = (flags & kEnvelopeFlagStream) ? Channel::kStream : Channel::kDatagram;
  if (flagged != channel) return Drop(DropReason::kMalformed, "sealed for the other channel");
  if (static_cast<uint32_t>(GetLe(p + 4, 4)) != cluster_tag_) {
    return Drop(DropReason::kWrongCluster, "cluster tag does not match");
  }
  const bool sealed_insecure = (flags & kEnvelopeFlagInsecure) != 0;
  if (sealed_insecure != insecure()) {
    return Drop(DropReason::kSecurityMismatch, sealed_insecure
                                                   ? "insecure envelope at a secure node"
                                                   : "encrypted envelope at an insecure node");
  }
  const KeyId key_id = static_cast<KeyId>(GetLe(p + 8, 4));
  if (sealed_insecure && key_id != 0) {
    return Drop(DropReason::kMalformed, "insecure envelope names a key");
  }
  const size_t sender_len = p[12];
  if (sender_len == 0) return Drop(DropReason::kMalformed, "empty sender");
  const size_t header_bytes = kEnvelopeFixedPrefix + sender_len + kEnvelopeFixedSuffix;
  if (size < header_bytes) return Drop(DropReason::kTruncated, "header cut short");
  const std::span<const uint8_t> sender = bytes.subspan(kEnvelopeFixedPrefix, sender_len);
  const uint8_t* suffix = p + kEnvelopeFixedPrefix + sender_len;
  const Generation generation = GetLe(suffix, 8);
  const uint64_t counter = GetLe(suffix + 8, 8);
  const size_t body_bytes = static_cast<size_t>(GetLe(suffix + 16, 4));
  if (counter >= kMaxEnvelopeCounter) return Drop(DropReason::kMalformed, "counter out of range");
  if (body_bytes > max_bytes - header_bytes) {
    return Drop(DropReason::kOversized, "announced body exceeds the limit");
  }
  if (size - header_bytes < body_bytes) return Drop(DropReason::kTruncated, "body cut short");
  if (size - header_bytes > body_bytes) return Drop(DropReason::kMalformed, "trailing bytes");
  if (!sealed_insecure && body_bytes < kEnvelopeTagBytes) {
    return Drop(DropReason::kMalformed, "body shorter than the tag");
  }

  const std::string_view sender_view(reinterpret_cast<const char*>(sender.data()), sender.size());
  // Checked before decrypting so replay floods cost no crypto; nothing changes until the
  // envelope has authenticated.
  const ReplayVerdict verdict = replay_.Check(sender_view, generation, channel, counter);
  if (verdict != ReplayVerdict::kFresh) {
    return Drop(DropReason::kReplayed, ReplayVerdictName(verdict));
  }

  const std::span<const uint8_t> body = bytes.subspan(header_bytes, body_bytes);
  Opened opened;
  if (sealed_insecure) {
    opened.plaintext.assign(body.begin(), body.end());
  } else {
    std::array<uint8_t, kMaxHeaderBytes + 32> ad;
    std::memcpy(ad.data(), p, header_bytes);
    std::memcpy(ad.data() + header_bytes, cluster_digest_.data(), cluster_digest_.size());
    const size_t ad_bytes = header_bytes + cluster_digest_.size();
    const auto nonce = MakeNonce(key_id, sender, generation, channel, counter);
    opened.plaintext.resize(body_bytes - kEnvelopeTagBytes);
    const auto try_key = [&](const ClusterKey& key) {
      unsigned long long plain_len = 0;
      return crypto_aead_xchacha20poly1305_ietf_decrypt(
                 opened.plaintext.data(), &plain_len, nullptr, body.data(), body.size(), ad.data(),
                 ad_bytes, nonce.data(), key.aead_key().data()) == 0;
    };
    // Only keys with the envelope's id can open it (the id is in the associated data); the
    // primary is tried first because peers mostly seal with the same primary.
    const ClusterKey* primary = keyring_->primary();
    bool authenticated = primary != nullptr && primary->id() == key_id && try_key(*primary);
    for (const ClusterKey& key : keyring_->installed()) {
      if (authenticated) break;
      if (&key != primary && key.id() == key_id) authenticated = try_key(key);
    }
    if (!authenticated) {
      sodium_memzero(opened.plaintext.data(), opened.plaintext.size());
      return Drop(DropReason::kUnauthenticated, "no installed key opens it");
    }
  }
  replay_.Accept(sender_view, generation, channel, counter);
  ++opened_;
  opened.sender.assign(sender_view);
  opened.generation = generation;
  opened.counter = counter;
  opened.key_id = sealed_insecure ? 0 : key_id;
  return opened;
}

}  // namespace hearsay::gossip
