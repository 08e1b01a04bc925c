// The gossip wire format: message bodies of membership (SWIM) and anti-entropy (scuttlebutt).
//
// A body is what travels inside the envelope (see framer.h): it is versioned (first byte
// kWireVersion), length-delimited, and bounded. Decode() treats its input as hostile: every count
// and length is checked against the bytes left and against the k* limits below before anything is
// allocated, and any malformed, truncated or oversized body is rejected with DATA_LOSS; decoding
// never crashes and has no side effects. Encode(Decode(x)) == x is not promised (snapshots are
// re-sorted), but Decode(Encode(m)) == m is, for every m within the limits (cache keys are
// summary keys, below 2^48; a removal's block index is 0).
//
// Layout (all integers varint unless noted):
//   u8 version, u8 type,
//   header: sender id, generation, incarnation, load record, member updates (count, then each),
//   body by type (see Message).
// A cache-delta run encodes each entry as a varint tag (bit 0: live, bit 1: version = previous
// + 1, and for a live entry the block index code above them), then the version step if bit 1 is
// clear, then the summary key (summary_key.h: its low 48 bits, 6 bytes, little-endian). A
// removal carries no block index (it decodes as 0). A delta is: id, generation, a flags byte,
// [stride], from version, [stride start step], to version as a step above from, [load record],
// entry count times 8 (plus 1 if a service record follows, plus 2 if a usage record follows, plus
// 4 if a signature follows), [service record], [usage record], [signature: 64 raw bytes], entries.
// The flags byte holds the snapshot bit (bit 0), the landmark stride in bits 1-5 (c in 1..21 for a
// stride of 2^(c - 1); 0: the stride follows as a varint), in bit 6 (runs only) that the run
// crosses its origin's change of stride, so the stride start follows the from version as a step
// above it, and in bit 7 that a load record follows. An index code is the index times 2, or, for a
// multiple of 16, the index / 16 times 2 plus 1: a live landmark up to block 240 is 7 bytes, a
// removal 7 (version 1: 10-11 bytes each). A snapshot sorts its entries by key and sends key steps
// and index codes as varints.
//
// Thread-safety: pure functions on plain values.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/common/ids.h"
#include "hearsay/common/status.h"
#include "hearsay/gossip/service.h"
#include "hearsay/gossip/summary_key.h"
#include "hearsay/gossip/types.h"
#include "hearsay/gossip/usage.h"
#include "hearsay/prefix/block_event.h"

namespace hearsay::gossip {

// Version 10: a service record ends with its node's host group (service.h; a string, empty for
// none).
// Version 9: a load record ends with its origin's backlog list (types.h, BacklogEntry): a count,
// then each entry's member id, request count and work in ms.
// Version 8: a member update's first byte holds its state (bits 0-1), whether its member's public
// signing key follows (bit 2) and whether a signature follows (bit 3); the key (32 bytes) and the
// signature (64 bytes) come raw after the api address (member_statement.h says what is signed).
// Version 7: a delta may carry its origin's usage record (usage.h) and its origin's signature of
// its state at the delta's to version (state_signing.h): the entry count varint is count * 8 plus 1
// (a service record follows), 2 (a usage record follows it) and 4 (a 64-byte signature follows
// them); a member update ends with its member's public signing key (empty, or 32 bytes).
// Version 6: the load record carries the decode time per token (a varint of microseconds).
// Version 5: a delta may carry its origin's service record (service.h): bit 0 of the entry count
// varint says one follows the load record. Version 4: a run that crosses its origin's change of
// stride says where it took effect; the to version is a step above the from version, and the load
// flag is a bit of the flags byte. Version 3: a delta's flags byte also carries its origin's
// landmark stride. Version 2: run entries with a tag varint and 48-bit keys (version 1: flag byte,
// 64-bit key, block index varint); block indices sent as index codes. docs/gossip.md, "Wire
// format", describes the current layout.
inline constexpr uint8_t kWireVersion = 10;
// Limits enforced by Decode (and respected by every encoder in this module).
inline constexpr size_t kMaxIdBytes = 128;
inline constexpr size_t kMaxAddressBytes = 256;
inline constexpr size_t kMaxUpdates = 4096;
inline constexpr size_t kMaxDigestEntries = 1 << 16;
inline constexpr size_t kMaxOrigins = 1 << 16;
inline constexpr size_t kMaxEntriesPerOrigin = 1 << 20;
inline constexpr size_t kMaxMessageBytes = 16 << 20;
inline constexpr uint32_t kMaxLandmarkStride = 1 << 20;

enum class MsgType : uint8_t {
  kPing = 1,        // seq, target id: "are you alive?"
  kAck = 2,         // seq: "yes" (also relayed by a ping-req helper)
  kNack = 3,        // seq: a ping-req helper got no ack from the target (Lifeguard)
  kPingReq = 4,     // seq, target id, target address: "probe this one for me"
  kSyn = 5,         // digest hash and size, seq, full digest (maybe empty): "same as mine?"
  kSynAck = 6,      // seq (echoed), full digest: "no, here is what I have"
  kSyncDeltas = 7,  // deltas the digest sender lacks, and a digest of what this side lacks
  kDeltas = 8,      // deltas only (the answer to kSyncDeltas's digest)
  kPushPull = 9,    // full membership list; reply_wanted asks for the peer's list back (join)
};
inline constexpr uint8_t kMaxMsgType = 9;
// Lower-case name of a message type ("syn", "deltas"), for figures and logs.
std::string_view MsgTypeName(MsgType type);

// The owner's load as a versioned record (one key in the origin's versioned state).
struct LoadRecord {
  uint64_t version = 0;    // origin version at which this record was written; 0 = none yet
  uint64_t heartbeat = 0;  // bumped on every republish
  LoadReport load;
  friend bool operator==(const LoadRecord&, const LoadRecord&) = default;
};

// One SWIM membership assertion, disseminated by piggybacking.
struct MemberUpdate {
  MemberState state = MemberState::kAlive;
  NodeId id;
  Address address;
  Generation generation = 0;
  uint64_t incarnation = 0;
  NodeId accuser;  // kSuspect: who suspects; kDead: who declared it (confirmations count them)
  // Where the member accepts forwarded requests (the daemon's HTTP address); empty when requests
  // go to `address` itself (the simulator). Set by the member; travels with its address.
  Address api_address;
  // The member's Ed25519 public key for its signed state (state_signing.h): 32 bytes, or empty
  // (signatures off). Set by the member; a peer binds the first key it sees for (id, generation).
  std::string signing_key = {};
  // With signatures (member_statement.h): for alive and left, the member's own signature of this
  // statement about itself; for suspect and dead, the accuser's signature of its accusation.
  std::optional<std::array<uint8_t, 64>> signature = std::nullopt;
  friend bool operator==(const MemberUpdate&, const MemberUpdate&) = default;
};

// Origin -> highest contiguous version known, per (id, generation).
struct DigestEntry {
  NodeId id;
  Generation generation = 0;
  uint64_t max_version = 0;
  friend bool operator==(const DigestEntry&, const DigestEntry&) = default;
};

// One versioned cache-summary key (summary_key.h) of an origin: live (held) or a tombstone
// (removed; its block index is not sent).
struct CacheEntry {
  prefix::BlockKey key = 0;
  uint32_t block_index = 0;
  bool live = true;
  uint64_t version = 0;
  friend bool operator==(const CacheEntry&, const CacheEntry&) = default;
};

// What one origin's state gained in (from_version, to_version].
// A run (snapshot == false) holds every entry the sender has with a version in that range, in
// version order; superseded writes are simply absent. A snapshot holds only the live entries, all
// stamped to_version, and replaces the receiver's state for (id, generation); its from_version is
// 0. `stride` is the landmark stride the origin publishes at (its cache keys are the blocks whose
// index is a multiple of it). A run that starts before the version at which that stride took
// effect carries that version as `stride_start` (in (from_version, to_version]; 0 otherwise): it
// holds the whole change of stride, so a replica at another stride may apply it and adopt
// `stride` (origin_store.h). Any other run only continues a replica at its own stride.
struct OriginDelta {
  NodeId id;
  Generation generation = 0;
  bool snapshot = false;
  uint64_t from_version = 0;
  uint64_t to_version = 0;
  std::optional<LoadRecord> load;  // present if its version is in (from_version, to_version]
  std::vector<CacheEntry> entries;
  uint32_t stride = 1;  // in [1, kMaxLandmarkStride]; last, so older aggregate initializers hold
  uint64_t stride_start = 0;  // runs only: 0, or in (from_version, to_version] (see above)
  // The origin's service record, present (like `load`) if its version is in the delta's range.
  std::optional<ServiceRecord> service = std::nullopt;
  // The origin's usage record (per-tenant offered traffic), present under the same rule.
  std::optional<UsageRecord> usage = std::nullopt;
  // The origin's signature of its state statement at to_version (state_signing.h); travels with
  // the delta, whoever relays it.
  std::optional<std::array<uint8_t, 64>> signature = std::nullopt;
  friend bool operator==(const OriginDelta&, const OriginDelta&) = default;
};

struct Header {
  NodeId sender;
  Generation generation = 0;
  uint64_t incarnation = 0;
  LoadRecord load;  // the sender's own load, on every message
  std::vector<MemberUpdate> updates;
  friend bool operator==(const Header&, const Header&) = default;
};

// One message. Which fields are meaningful depends on type (see MsgType); the rest stay default.
struct Message {
  MsgType type = MsgType::kPing;
  Header header;
  uint64_t seq = 0;                   // ping, ack, nack, ping-req, syn, synack
  NodeId target;                      // ping, ping-req
  Address target_address;             // ping-req
  uint64_t digest_hash = 0;           // syn
  uint64_t digest_size = 0;           // syn
  std::vector<DigestEntry> digest;    // syn (optional), synack; syncdeltas (what sender lacks)
  std::vector<OriginDelta> deltas;    // syncdeltas, deltas
  std::vector<MemberUpdate> members;  // pushpull
  bool reply_wanted = false;          // pushpull
  friend bool operator==(const Message&, const Message&) = default;
};

// The body's bytes.
std::vector<uint8_t> Encode(const Message& m);
// The message in `body`, or DATA_LOSS if it is malformed, truncated, oversized or of an
// unknown version or type. Never allocates more than a small multiple of body.size().
Result<Message> Decode(std::span<const uint8_t> body);

// A load record's bytes as a delta carries them (what the state commitment hashes).
std::vector<uint8_t> EncodeLoadRecord(const LoadRecord& r);

// Encoded sizes, so builders can cut to a byte budget without encoding twice.
size_t VarintSize(uint64_t v);
size_t EncodedSize(const MemberUpdate& u);
size_t EncodedSize(const DigestEntry& e);
size_t EncodedSize(const LoadRecord& r);
// The size of a delta's fixed part (everything but its entries; its signature included).
size_t EncodedDeltaHeaderSize(const OriginDelta& d);
// The size of a run entry that follows an entry of version prev_version.
size_t EncodedRunEntrySize(const CacheEntry& e, uint64_t prev_version);
// An upper bound of a snapshot entry's size.
inline constexpr size_t kMaxSnapshotEntryBytes = 7 + 5;  // key step (48 bits), index code
// Bytes of the header without its updates, plus the update count.
size_t EncodedHeaderBaseSize(const Header& h);

}  // namespace hearsay::gossip
