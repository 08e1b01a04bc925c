// The gossip envelope: how every datagram and stream message between nodes is framed,
// authenticated, encrypted, bounded and checked for replay.
//
// A Sealer (one per node) wraps a message body into an envelope; an Opener (one per node) checks
// and unwraps envelopes from peers. With a cluster key the body is encrypted and the whole header
// authenticated with XChaCha20-Poly1305 (libsodium, IETF construction). Without one, in the
// explicitly named insecure mode, the header is the same and the body is plaintext with no
// authentication; a secure receiver drops insecure envelopes and an insecure receiver drops
// secure ones, so the two never mix silently.
//
// Wire layout (version 1; integers little-endian; n = sender length):
//
//   offset  size  field
//   0       2     magic 'H' 'S' (0x48 0x53)
//   2       1     protocol version, 1
//   3       1     flags: bit 0 insecure (plaintext body), bit 1 stream channel (else datagram);
//                 other bits must be zero
//   4       4     cluster tag: the first 4 bytes of the cluster digest,
//                 BLAKE2b-256("hearsay/gossip/cluster/v1" || cluster id)
//   8       4     key id of the sealing key (keyring.h); 0 when insecure
//   12      1     n, 1..kMaxSenderBytes
//   13      n     sender NodeId
//   13+n    8     sender generation
//   21+n    8     counter: per (sender, generation, channel), starts at 0, +1 per message; < 2^63
//   29+n    4     b, body length
//   33+n    b     body: ciphertext || 16-byte Poly1305 tag (b = plaintext + 16), or the plaintext
//                 when insecure
//
// Associated data: the whole header (bytes 0 .. 33+n) followed by the 32-byte cluster digest, so
// the full cluster id (never sent), version, flags, key id, sender, generation, counter and body
// length are all authenticated. Changing any header byte fails authentication.
//
// Nonce (24 bytes): counter | channel << 63 (8 bytes), generation (8 bytes), and the first 8
// bytes of BLAKE2b-128(key id || sender) (8 bytes). For one sender and key it is unique by
// construction as long as the generation is never reused by that sender: the daemon must pick a
// generation that is unique per start and increases across restarts (for example the wall clock
// in nanoseconds at start, bumped past the last one it used). Across senders it relies on the
// 64-bit sender hash (and, in addition, on generations differing).
//
// Bounds: the total size is checked against the channel's maximum before anything else, and the
// body length against what arrived, before anything is allocated. No compression is used yet;
// adding it needs a bound on the decompressed size (see docs/gossip-security.md).
//
// Every dropped envelope is counted by reason (DropReason) and changes no state: the replay
// window is updated only after authentication.
//
// Nothing here calls sodium_init() (it stirs the OS random generator, which the core must not
// touch); libsodium's AEAD and BLAKE2b are correct without it. A host may call it once at
// startup, before any core thread runs, to select faster CPU-specific implementations.
//
// Thread-safety: none; a node's Sealer and Opener live on its core thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/common/ids.h"
#include "hearsay/common/status.h"
#include "hearsay/env/transport.h"
#include "hearsay/gossip/keyring.h"
#include "hearsay/gossip/replay_window.h"

namespace hearsay::gossip {

inline constexpr uint8_t kEnvelopeVersion = 1;
inline constexpr size_t kMaxSenderBytes = 255;
inline constexpr size_t kMaxClusterIdBytes = 255;
// Header bytes before the sender, and after it (generation, counter, body length).
inline constexpr size_t kEnvelopeFixedPrefix = 13;
inline constexpr size_t kEnvelopeFixedSuffix = 20;
// Poly1305 tag bytes appended to a secure body.
inline constexpr size_t kEnvelopeTagBytes = 16;
// Counters are below this; the top bit of the nonce's first word carries the channel.
inline constexpr uint64_t kMaxEnvelopeCounter = uint64_t{1} << 63;

// Flag bits (header byte 3).
inline constexpr uint8_t kEnvelopeFlagInsecure = 0x01;
inline constexpr uint8_t kEnvelopeFlagStream = 0x02;

struct EnvelopeOptions {
  // Largest whole envelope accepted or produced on each channel.
  size_t max_datagram_bytes = 1400;
  size_t max_stream_bytes = size_t{8} << 20;
  // Opener only: how many senders the replay guard tracks (replay_window.h).
  size_t max_tracked_senders = 4096;

  size_t MaxBytes(Channel channel) const {
    return channel == Channel::kStream ? max_stream_bytes : max_datagram_bytes;
  }
};

// Why an envelope was dropped. Each has a counter in DropCounters.
enum class DropReason : uint8_t {
  kOversized = 0,     // larger than the channel's maximum, or claims a larger body
  kTruncated,         // ends before the header or the body it announces
  kMalformed,         // bad magic, reserved flags, empty sender, trailing bytes, wrong channel...
  kUnknownVersion,    // a protocol version this node does not speak
  kWrongCluster,      // the cluster tag is another cluster's
  kSecurityMismatch,  // an insecure envelope at a secure node, or the reverse
  kUnauthenticated,   // no installed key opens it (wrong key, tampered, forged)
  kReplayed,          // duplicate, older than the replay window, or from an older generation
};
inline constexpr size_t kNumDropReasons = 8;

// "oversized", "truncated", "malformed", "unknown-version", "wrong-cluster",
// "security-mismatch", "unauthenticated" or "replayed".
std::string_view DropReasonName(DropReason reason);

// Drop counts by reason.
struct DropCounters {
  std::array<uint64_t, kNumDropReasons> by_reason{};

  uint64_t operator[](DropReason r) const { return by_reason[static_cast<size_t>(r)]; }
  uint64_t total() const;
};

// An authenticated (or, in insecure mode, merely well-formed), fresh message.
struct Opened {
  NodeId sender;
  Generation generation = 0;
  uint64_t counter = 0;
  // The key that opened it (0 in insecure mode); lets operators watch a rotation progress.
  KeyId key_id = 0;
  std::vector<uint8_t> plaintext;
};

// Seals this node's outgoing messages. Owns the per-channel counters.
//
// Invariants: next_counter_[c] < kMaxEnvelopeCounter is the counter of the next message on
// channel c; keyring_ is null exactly in insecure mode.
class Sealer {
 public:
  // A secure sealer: seals with keyring->primary(), read at each Seal so Use() takes effect at
  // once. `keyring` is not owned and must outlive the sealer. INVALID_ARGUMENT for a null
  // keyring, an empty or too long cluster id or sender.
  static Result<Sealer> Create(std::string_view cluster_id, NodeId sender, Generation generation,
                               const Keyring* keyring, EnvelopeOptions options = {});
  // An INSECURE sealer: no encryption, no authentication; anyone on the network can read and
  // forge its messages. Only for --insecure. Same argument checks as Create.
  static Result<Sealer> CreateInsecureUnauthenticated(std::string_view cluster_id, NodeId sender,
                                                      Generation generation,
                                                      EnvelopeOptions options = {});

  // The envelope for `plaintext` on `channel`, consuming one counter. FAILED_PRECONDITION if the
  // keyring has no key; RESOURCE_EXHAUSTED if the envelope would exceed the channel's maximum
  // (no counter is consumed) or the counter space is used up (restart with a new generation).
  Result<std::vector<uint8_t>> Seal(Channel channel, std::span<const uint8_t> plaintext);

  // The largest plaintext that Seal accepts on `channel`.
  size_t MaxPlaintextBytes(Channel channel) const;
  // The envelope size for a plaintext of `plaintext_bytes`.
  size_t SealedBytes(size_t plaintext_bytes) const;
  // The counter the next message on `channel` will carry.
  uint64_t next_counter(Channel channel) const {
    return next_counter_[static_cast<size_t>(channel)];
  }
  bool insecure() const { return keyring_ == nullptr; }
  const NodeId& sender() const { return sender_; }
  Generation generation() const { return generation_; }

 private:
  Sealer(std::string_view cluster_id, NodeId sender, Generation generation, const Keyring* keyring,
         EnvelopeOptions options);

  NodeId sender_;
  Generation generation_;
  const Keyring* keyring_;
  EnvelopeOptions options_;
  uint32_t cluster_tag_;
  std::array<uint8_t, 32> cluster_digest_;
  std::array<uint64_t, 2> next_counter_{};
};

// Checks and opens envelopes from peers. Owns the replay state and the drop counters.
//
// Invariants: keyring_ is null exactly in insecure mode; replay_ holds only (sender, generation,
// counter) triples of envelopes that authenticated (or, in insecure mode, parsed).
class Opener {
 public:
  // A secure opener: tries every key in `keyring` whose id matches the envelope's. `keyring` is
  // not owned and must outlive the opener. INVALID_ARGUMENT for a null keyring or a bad cluster
  // id. An empty keyring is allowed (every envelope is then unauthenticated).
  static Result<Opener> Create(std::string_view cluster_id, const Keyring* keyring,
                               EnvelopeOptions options = {});
  // An INSECURE opener: accepts plaintext envelopes that anyone could have forged. Only for
  // --insecure.
  static Result<Opener> CreateInsecureUnauthenticated(std::string_view cluster_id,
                                                      EnvelopeOptions options = {});

  // The message in `bytes`, received on `channel`. On any error the envelope is dropped: its
  // reason's counter goes up by one, nothing else changes, and the status says why (the code
  // is RESOURCE_EXHAUSTED, DATA_LOSS, UNIMPLEMENTED, PERMISSION_DENIED, FAILED_PRECONDITION,
  // UNAUTHENTICATED or ALREADY_EXISTS, in DropReason's order). Never crashes on any input.
  Result<Opened> Open(Channel channel, std::span<const uint8_t> bytes);

  const DropCounters& drops() const { return drops_; }
  // How many envelopes opened successfully.
  uint64_t opened() const { return opened_; }
  const ReplayGuard& replay() const { return replay_; }
  bool insecure() const { return keyring_ == nullptr; }

 private:
  Opener(std::string_view cluster_id, const Keyring* keyring, EnvelopeOptions options);
  Status Drop(DropReason reason, std::string_view detail);

  const Keyring* keyring_;
  EnvelopeOptions options_;
  uint32_t cluster_tag_;
  std::array<uint8_t, 32> cluster_digest_;
  ReplayGuard replay_;
  DropCounters drops_;
  uint64_t opened_ = 0;
};

}  // namespace hearsay::gossip
