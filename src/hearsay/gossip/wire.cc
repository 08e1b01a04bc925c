#include "hearsay/gossip/wire.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "hearsay/common/bytes.h"

namespace hearsay::gossip {

std::string_view MsgTypeName(MsgType type) {
  switch (type) {
    case MsgType::kPing:
      return "ping";
    case MsgType::kAck:
      return "ack";
    case MsgType::kNack:
      return "nack";
    case MsgType::kPingReq:
      return "ping_req";
    case MsgType::kSyn:
      return "syn";
    case MsgType::kSynAck:
      return "syn_ack";
    case MsgType::kSyncDeltas:
      return "sync_deltas";
    case MsgType::kDeltas:
      return "deltas";
    case MsgType::kPushPull:
      return "push_pull";
  }
  return "unknown";
}
namespace {

constexpr uint64_t kFlagLive = 1;
constexpr size_t kSigningKeyBytes = 32;
constexpr uint64_t kFlagNext = 2;
// Block indices that are multiples of this (every landmark at the default stride and its
// multiples) are sent divided by it, so landmarks up to block 240 cost no byte of their own.
constexpr uint64_t kIndexUnit = 16;

// A block index as sent: bit 0 says it was divided by kIndexUnit.
uint64_t IndexCode(uint32_t index) {
  return index % kIndexUnit == 0 ? (uint64_t{index} / kIndexUnit) << 1 | 1 : uint64_t{index} << 1;
}

// The block index of `code`, or fails `r` if it is out of range.
uint32_t IndexOfCode(uint64_t code, ByteReader& r) {
  const uint64_t v = code >> 1;
  if (code & 1 ? v > UINT32_MAX / kIndexUnit : v > UINT32_MAX) {
    r.Fail("block index out of range");
    return 0;
  }
  return static_cast<uint32_t>(code & 1 ? v * kIndexUnit : v);
}

// A run entry's tag: live, next, and for a live entry its index code (a removal needs none).
uint64_t RunTag(const CacheEntry& e, bool next) {
  return (e.live ? kFlagLive | IndexCode(e.block_index) << 2 : 0) | (next ? kFlagNext : 0);
}

// Stride codes 1..kMaxStrideCode (flags bits 1-5) stand for 2^(code - 1); 0 says a varint stride
// follows. Bit 6: a stride start follows the from version (a run crossing a change of stride).
// Bit 7: a load record follows the version range.
constexpr uint8_t kMaxStrideCode = 21;
constexpr uint8_t kFlagStrideStart = 0x40;
constexpr uint8_t kFlagLoad = 0x80;
// A delta's entry count varint: the count above kCountShift, and below it which optional parts
// follow: a service record (bit 0), a usage record (bit 1), a signature (bit 2).
constexpr int kCountShift = 3;
constexpr uint64_t kCountService = 1;
constexpr uint64_t kCountUsage = 2;
constexpr uint64_t kCountSignature = 4;
static_assert(uint32_t{1} << (kMaxStrideCode - 1) == kMaxLandmarkStride);

uint8_t StrideCode(uint32_t stride) {
  if (stride == 0 || (stride & (stride - 1)) != 0 || stride > kMaxLandmarkStride) return 0;
  return static_cast<uint8_t>(std::countr_zero(stride) + 1);
}

void PutKey(ByteWriter& w, prefix::BlockKey key) {
  for (size_t i = 0; i < kSummaryKeyBytes; ++i) w.PutU8(static_cast<uint8_t>(key >> (8 * i)));
}

prefix::BlockKey ReadKey(ByteReader& r) {
  prefix::BlockKey key = 0;
  for (size_t i = 0; i < kSummaryKeyBytes; ++i) key |= prefix::BlockKey{r.ReadU8()} << (8 * i);
  return key;
}

void PutBacklog(ByteWriter& w, const std::vector<BacklogEntry>& backlog) {
  w.PutVarint(backlog.size());
  for (const BacklogEntry& e : backlog) {
    w.PutString(e.member);
    w.PutVarint(e.requests);
    w.PutVarint(e.work_ms);
  }
}

void PutLoad(ByteWriter& w, const LoadRecord& r) {
  w.PutVarint(r.version);
  w.PutVarint(r.heartbeat);
  w.PutVarint(r.load.queue_depth);
  w.PutVarint(r.load.running);
  w.PutVarint(r.load.kv_used_tokens);
  w.PutVarint(r.load.kv_capacity_tokens);
  w.PutDouble(r.load.prefill_ms_per_token);
  w.PutVarint(r.load.waiting_prefill_tokens);
  w.PutVarint(r.load.running_context_tokens);
  w.PutVarint(r.load.queue_wait_us);
  w.PutVarint(r.load.decode_us_per_token);
  w.PutU8(r.load.overloaded ? 1 : 0);
  PutBacklog(w, r.load.backlog);
}

NodeId ReadId(ByteReader& r);

// The backlog list of a load record: sorted, unique, within types.h's limits.
std::vector<BacklogEntry> ReadBacklog(ByteReader& r) {
  // At least: member (2), requests, work.
  const size_t n = r.ReadCount(kMaxBacklogEntries, 4);
  std::vector<BacklogEntry> out;
  out.reserve(n);
  for (size_t i = 0; i < n && r.ok(); ++i) {
    BacklogEntry e;
    e.member = ReadId(r);
    const uint64_t requests = r.ReadVarint();
    const uint64_t work = r.ReadVarint();
    if (requests > kMaxBacklogRequests || work > kMaxBacklogWorkMs) r.Fail("backlog out of range");
    if (!out.empty() && e.member <= out.back().member) r.Fail("backlog not sorted");
    e.requests = static_cast<uint32_t>(requests);
    e.work_ms = static_cast<uint32_t>(work);
    out.push_back(std::move(e));
  }
  return out;
}

LoadRecord ReadLoad(ByteReader& r) {
  LoadRecord rec;
  rec.version = r.ReadVarint();
  rec.heartbeat = r.ReadVarint();
  const uint64_t queue = r.ReadVarint();
  const uint64_t running = r.ReadVarint();
  rec.load.kv_used_tokens = r.ReadVarint();
  rec.load.kv_capacity_tokens = r.ReadVarint();
  rec.load.prefill_ms_per_token = r.ReadDouble();
  rec.load.waiting_prefill_tokens = r.ReadVarint();
  rec.load.running_context_tokens = r.ReadVarint();
  const uint64_t wait_us = r.ReadVarint();
  const uint64_t decode_us = r.ReadVarint();
  const uint8_t overloaded = r.ReadU8();
  if (queue > UINT32_MAX || running > UINT32_MAX || wait_us > UINT32_MAX ||
      decode_us > UINT32_MAX) {
    r.Fail("load count out of range");
  }
  rec.load.queue_wait_us = static_cast<uint32_t>(wait_us);
  rec.load.decode_us_per_token = static_cast<uint32_t>(decode_us);
  if (!std::isfinite(rec.load.prefill_ms_per_token) || rec.load.prefill_ms_per_token < 0) {
    r.Fail("bad prefill cost");
  }
  if (overloaded > 1) r.Fail("bad overload flag");
  rec.load.queue_depth = static_cast<uint32_t>(queue);
  rec.load.running = static_cast<uint32_t>(running);
  rec.load.overloaded = overloaded == 1;
  if (r.ok()) rec.load.backlog = ReadBacklog(r);
  return rec;
}

// `n` (a count read as part of a larger varint) if it is at most max_count and n * min_item_bytes
// fits in what is left, as ByteReader::ReadCount checks; else fails `r` and returns 0.
size_t CheckCount(ByteReader& r, uint64_t n, size_t max_count, size_t min_item_bytes) {
  if (!r.ok()) return 0;
  if (n > max_count || n > r.remaining() / std::max<size_t>(min_item_bytes, 1)) {
    r.Fail("count out of range");
    return 0;
  }
  return static_cast<size_t>(n);
}

NodeId ReadId(ByteReader& r) {
  NodeId id = r.ReadString(kMaxIdBytes);
  if (r.ok() && id.empty()) r.Fail("empty node id");
  return id;
}

// A member update's first byte: its state in bits 0-1, then whether a signing key (bit 2) and a
// signature (bit 3) follow the api address.
constexpr uint8_t kUpdateStateMask = 0x03;
constexpr uint8_t kUpdateKey = 0x04;
constexpr uint8_t kUpdateSignature = 0x08;

void PutUpdate(ByteWriter& w, const MemberUpdate& u) {
  w.PutU8(static_cast<uint8_t>(static_cast<uint8_t>(u.state) |
                               (u.signing_key.empty() ? 0 : kUpdateKey) |
                               (u.signature ? kUpdateSignature : 0)));
  w.PutString(u.id);
  w.PutString(u.address);
  w.PutVarint(u.generation);
  w.PutVarint(u.incarnation);
  w.PutString(u.accuser);
  w.PutString(u.api_address);
  if (!u.signing_key.empty()) {
    w.PutRaw({reinterpret_cast<const uint8_t*>(u.signing_key.data()), u.signing_key.size()});
  }
  if (u.signature) w.PutRaw(*u.signature);
}

MemberUpdate ReadUpdate(ByteReader& r) {
  MemberUpdate u;
  const uint8_t first = r.ReadU8();
  if ((first & ~(kUpdateStateMask | kUpdateKey | kUpdateSignature)) != 0) {
    r.Fail("bad member update flags");
  }
  u.state = static_cast<MemberState>(first & kUpdateStateMask);
  u.id = ReadId(r);
  u.address = r.ReadString(kMaxAddressBytes);
  u.generation = r.ReadVarint();
  u.incarnation = r.ReadVarint();
  u.accuser = r.ReadString(kMaxIdBytes);
  u.api_address = r.ReadString(kMaxAddressBytes);
  if ((first & kUpdateKey) != 0) {
    const std::span<const uint8_t> key = r.ReadRaw(kSigningKeyBytes);
    if (r.ok()) u.signing_key.assign(reinterpret_cast<const char*>(key.data()), key.size());
  }
  if ((first & kUpdateSignature) != 0) {
    const std::span<const uint8_t> sig = r.ReadRaw(64);
    if (r.ok()) {
      u.signature.emplace();
      std::copy(sig.begin(), sig.end(), u.signature->begin());
    }
  }
  return u;
}

void PutUpdates(ByteWriter& w, const std::vector<MemberUpdate>& us) {
  w.PutVarint(us.size());
  for (const auto& u : us) PutUpdate(w, u);
}

// Smallest encoding of a MemberUpdate: state, 1-byte id, 3 empty/zero fields, empty accuser and
// api address.
constexpr size_t kMinUpdateBytes = 1 + 2 + 1 + 1 + 1 + 1 + 1;

std::vector<MemberUpdate> ReadUpdates(ByteReader& r) {
  std::vector<MemberUpdate> out;
  const size_t n = r.ReadCount(kMaxUpdates, kMinUpdateBytes);
  out.reserve(n);
  for (size_t i = 0; i < n && r.ok(); ++i) out.push_back(ReadUpdate(r));
  return out;
}

void PutDigest(ByteWriter& w, const std::vector<DigestEntry>& d) {
  w.PutVarint(d.size());
  for (const auto& e : d) {
    w.PutString(e.id);
    w.PutVarint(e.generation);
    w.PutVarint(e.max_version);
  }
}

std::vector<DigestEntry> ReadDigest(ByteReader& r) {
  std::vector<DigestEntry> out;
  const size_t n = r.ReadCount(kMaxDigestEntries, 4);
  out.reserve(n);
  for (size_t i = 0; i < n && r.ok(); ++i) {
    DigestEntry e;
    e.id = ReadId(r);
    e.generation = r.ReadVarint();
    e.max_version = r.ReadVarint();
    out.push_back(std::move(e));
  }
  return out;
}

void PutDelta(ByteWriter& w, const OriginDelta& d) {
  w.PutString(d.id);
  w.PutVarint(d.generation);
  const uint8_t code = StrideCode(d.stride);
  const bool crossing = d.stride_start != 0;
  w.PutU8(static_cast<uint8_t>((d.load ? kFlagLoad : 0) | (crossing ? kFlagStrideStart : 0) |
                               code << 1 | (d.snapshot ? 1 : 0)));
  if (code == 0) w.PutVarint(d.stride);
  w.PutVarint(d.from_version);
  if (crossing) w.PutVarint(d.stride_start - d.from_version);
  w.PutVarint(d.to_version - d.from_version);
  if (d.load) PutLoad(w, *d.load);
  w.PutVarint(d.entries.size() << kCountShift | (d.service ? kCountService : 0) |
              (d.usage ? kCountUsage : 0) | (d.signature ? kCountSignature : 0));
  if (d.service) PutServiceRecord(w, *d.service);
  if (d.usage) PutUsageRecord(w, *d.usage);
  if (d.signature) w.PutRaw(*d.signature);
  if (!d.snapshot) {
    uint64_t prev = d.from_version;
    for (const auto& e : d.entries) {
      const bool next = e.version == prev + 1;
      w.PutVarint(RunTag(e, next));
      if (!next) w.PutVarint(e.version - prev);
      PutKey(w, e.key);
      prev = e.version;
    }
  } else {
    std::vector<std::pair<prefix::BlockKey, uint32_t>> sorted;
    sorted.reserve(d.entries.size());
    for (const auto& e : d.entries) sorted.emplace_back(SummaryKey(e.key), e.block_index);
    std::sort(sorted.begin(), sorted.end());
    prefix::BlockKey prev = 0;
    for (size_t i = 0; i < sorted.size(); ++i) {
      w.PutVarint(i == 0 ? sorted[i].first : sorted[i].first - prev);
      w.PutVarint(IndexCode(sorted[i].second));
      prev = sorted[i].first;
    }
  }
}

OriginDelta ReadDelta(ByteReader& r) {
  OriginDelta d;
  d.id = ReadId(r);
  d.generation = r.ReadVarint();
  const uint8_t flags = r.ReadU8();
  d.snapshot = (flags & 1) == 1;
  const bool crossing = (flags & kFlagStrideStart) != 0;
  if (crossing && d.snapshot) r.Fail("snapshot with a stride start");
  const uint8_t code = (flags >> 1) & 0x1f;
  if (code > kMaxStrideCode) {
    r.Fail("bad stride code");
  } else if (code > 0) {
    d.stride = uint32_t{1} << (code - 1);
  } else {
    const uint64_t stride = r.ReadVarint();
    if (stride == 0 || stride > kMaxLandmarkStride) r.Fail("landmark stride out of range");
    d.stride = static_cast<uint32_t>(stride);
  }
  d.from_version = r.ReadVarint();
  uint64_t start_step = 0;
  if (crossing) {
    start_step = r.ReadVarint();
    if (start_step == 0) r.Fail("stride start not above the delta's base");
  }
  const uint64_t span = r.ReadVarint();
  if (span > std::numeric_limits<uint64_t>::max() - d.from_version) r.Fail("delta range overflows");
  d.to_version = d.from_version + span;
  if (crossing) {
    if (start_step > span) r.Fail("stride start beyond the delta");
    d.stride_start = d.from_version + start_step;
  }
  if (!r.ok()) return d;
  if ((flags & kFlagLoad) != 0) {
    d.load = ReadLoad(r);
    if (d.load->version > d.to_version || (!d.snapshot && d.load->version <= d.from_version) ||
        d.load->version == 0) {
      r.Fail("load version outside the delta");
    }
  }
  if (!r.ok()) return d;
  const uint64_t count_code = r.ReadVarint();
  if ((count_code & kCountService) != 0) {
    d.service = ReadServiceRecord(r);
    if (d.service->version > d.to_version ||
        (!d.snapshot && d.service->version <= d.from_version) || d.service->version == 0) {
      r.Fail("service version outside the delta");
    }
  }
  if (r.ok() && (count_code & kCountUsage) != 0) {
    d.usage = ReadUsageRecord(r);
    if (d.usage->version > d.to_version || (!d.snapshot && d.usage->version <= d.from_version) ||
        d.usage->version == 0) {
      r.Fail("usage version outside the delta");
    }
  }
  if (!r.ok()) return d;
  if ((count_code & kCountSignature) != 0) {
    const std::span<const uint8_t> sig = r.ReadRaw(64);
    if (!r.ok()) return d;
    d.signature.emplace();
    std::copy(sig.begin(), sig.end(), d.signature->begin());
  }
  if (!d.snapshot) {
    const size_t n =
        CheckCount(r, count_code >> kCountShift, kMaxEntriesPerOrigin, 1 + kSummaryKeyBytes);
    d.entries.reserve(n);
    uint64_t prev = d.from_version;
    for (size_t i = 0; i < n && r.ok(); ++i) {
      CacheEntry e;
      const uint64_t tag = r.ReadVarint();
      e.live = tag & kFlagLive;
      if (e.live) {
        e.block_index = IndexOfCode(tag >> 2, r);
      } else if (tag >> 2 != 0) {
        r.Fail("removal with a block index");
      }
      uint64_t step = 1;
      if (!(tag & kFlagNext)) {
        step = r.ReadVarint();
        if (step == 0) r.Fail("entry version not increasing");
      }
      if (step > d.to_version - prev) r.Fail("entry version beyond the delta");
      e.version = prev + step;
      e.key = ReadKey(r);
      prev = e.version;
      d.entries.push_back(e);
    }
  } else {
    const size_t n = CheckCount(r, count_code >> kCountShift, kMaxEntriesPerOrigin, 2);
    d.entries.reserve(n);
    prefix::BlockKey prev = 0;
    for (size_t i = 0; i < n && r.ok(); ++i) {
      CacheEntry e;
      const uint64_t step = r.ReadVarint();
      if (i > 0 && (step == 0 || step > kSummaryKeyMask - prev)) {
        r.Fail("snapshot keys not increasing");
      }
      if (i == 0 && step > kSummaryKeyMask) r.Fail("snapshot key too wide");
      e.key = i == 0 ? step : prev + step;
      e.block_index = IndexOfCode(r.ReadVarint(), r);
      e.live = true;
      e.version = d.to_version;
      prev = e.key;
      d.entries.push_back(e);
    }
  }
  return d;
}

void PutDeltas(ByteWriter& w, const std::vector<OriginDelta>& ds) {
  w.PutVarint(ds.size());
  for (const auto& d : ds) PutDelta(w, d);
}

std::vector<OriginDelta> ReadDeltas(ByteReader& r) {
  std::vector<OriginDelta> out;
  // At least: id (2), generation, flags, from, span, count.
  const size_t n = r.ReadCount(kMaxOrigins, 2 + 1 + 1 + 1 + 1 + 1);
  out.reserve(n);
  for (size_t i = 0; i < n && r.ok(); ++i) out.push_back(ReadDelta(r));
  return out;
}

}  // namespace

std::vector<uint8_t> EncodeLoadRecord(const LoadRecord& r) {
  ByteWriter w;
  PutLoad(w, r);
  return w.Take();
}

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

static size_t StringSize(const std::string& s) { return VarintSize(s.size()) + s.size(); }

static size_t BacklogSize(const std::vector<BacklogEntry>& backlog) {
  size_t n = VarintSize(backlog.size());
  for (const BacklogEntry& e : backlog) {
    n += StringSize(e.member) + VarintSize(e.requests) + VarintSize(e.work_ms);
  }
  return n;
}

size_t EncodedSize(const MemberUpdate& u) {
  return 1 + StringSize(u.id) + StringSize(u.address) + VarintSize(u.generation) +
         VarintSize(u.incarnation) + StringSize(u.accuser) + StringSize(u.api_address) +
         u.signing_key.size() + (u.signature ? u.signature->size() : 0);
}

size_t EncodedSize(const DigestEntry& e) {
  return StringSize(e.id) + VarintSize(e.generation) + VarintSize(e.max_version);
}

size_t EncodedSize(const LoadRecord& r) {
  return VarintSize(r.version) + VarintSize(r.heartbeat) + VarintSize(r.load.queue_depth) +
         VarintSize(r.load.running) + VarintSize(r.load.kv_used_tokens) +
         VarintSize(r.load.kv_capacity_tokens) + 8 + VarintSize(r.load.waiting_prefill_tokens) +
         VarintSize(r.load.running_context_tokens) + VarintSize(r.load.queue_wait_us) +
         VarintSize(r.load.decode_us_per_token) + 1 + BacklogSize(r.load.backlog);
}

size_t EncodedDeltaHeaderSize(const OriginDelta& d) {
  return StringSize(d.id) + VarintSize(d.generation) + 1 +
         (StrideCode(d.stride) == 0 ? VarintSize(d.stride) : 0) + VarintSize(d.from_version) +
         (d.stride_start != 0 ? VarintSize(d.stride_start - d.from_version) : 0) +
         VarintSize(d.to_version - d.from_version) + (d.load ? EncodedSize(*d.load) : 0) +
         VarintSize((d.entries.size() + 1) << kCountShift) +
         (d.service ? EncodedSize(*d.service) : 0) + (d.usage ? EncodedSize(*d.usage) : 0) +
         (d.signature ? d.signature->size() : 0);
}

size_t EncodedRunEntrySize(const CacheEntry& e, uint64_t prev_version) {
  const uint64_t step = e.version - prev_version;
  return VarintSize(RunTag(e, step == 1)) + (step == 1 ? 0 : VarintSize(step)) + kSummaryKeyBytes;
}

size_t EncodedHeaderBaseSize(const Header& h) {
  return 2 + StringSize(h.sender) + VarintSize(h.generation) + VarintSize(h.incarnation) +
         EncodedSize(h.load) + VarintSize(h.updates.size() + 1);
}

std::vector<uint8_t> Encode(const Message& m) {
  ByteWriter w;
  w.PutU8(kWireVersion);
  w.PutU8(static_cast<uint8_t>(m.type));
  w.PutString(m.header.sender);
  w.PutVarint(m.header.generation);
  w.PutVarint(m.header.incarnation);
  PutLoad(w, m.header.load);
  PutUpdates(w, m.header.updates);
  switch (m.type) {
    case MsgType::kPing:
      w.PutVarint(m.seq);
      w.PutString(m.target);
      break;
    case MsgType::kAck:
    case MsgType::kNack:
      w.PutVarint(m.seq);
      break;
    case MsgType::kPingReq:
      w.PutVarint(m.seq);
      w.PutString(m.target);
      w.PutString(m.target_address);
      break;
    case MsgType::kSyn:
      w.PutU64(m.digest_hash);
      w.PutVarint(m.digest_size);
      w.PutVarint(m.seq);
      PutDigest(w, m.digest);  // empty unless the sender's state is changing
      break;
    case MsgType::kSynAck:
      w.PutVarint(m.seq);
      PutDigest(w, m.digest);
      break;
    case MsgType::kSyncDeltas:
      PutDigest(w, m.digest);
      PutDeltas(w, m.deltas);
      break;
    case MsgType::kDeltas:
      PutDeltas(w, m.deltas);
      break;
    case MsgType::kPushPull:
      w.PutU8(m.reply_wanted ? 1 : 0);
      PutUpdates(w, m.members);
      break;
  }
  return w.Take();
}

Result<Message> Decode(std::span<const uint8_t> body) {
  if (body.size() > kMaxMessageBytes) return DataLossError("message too large");
  ByteReader r(body);
  Message m;
  const uint8_t version = r.ReadU8();
  const uint8_t type = r.ReadU8();
  if (!r.ok()) return r.status();
  if (version != kWireVersion) return DataLossError("unknown wire version");
  if (type == 0 || type > kMaxMsgType) return DataLossError("unknown message type");
  m.type = static_cast<MsgType>(type);
  m.header.sender = ReadId(r);
  m.header.generation = r.ReadVarint();
  m.header.incarnation = r.ReadVarint();
  m.header.load = ReadLoad(r);
  m.header.updates = ReadUpdates(r);
  switch (m.type) {
    case MsgType::kPing:
      m.seq = r.ReadVarint();
      m.target = ReadId(r);
      break;
    case MsgType::kAck:
    case MsgType::kNack:
      m.seq = r.ReadVarint();
      break;
    case MsgType::kPingReq:
      m.seq = r.ReadVarint();
      m.target = ReadId(r);
      m.target_address = r.ReadString(kMaxAddressBytes);
      break;
    case MsgType::kSyn:
      m.digest_hash = r.ReadU64();
      m.digest_size = r.ReadVarint();
      m.seq = r.ReadVarint();
      m.digest = ReadDigest(r);
      break;
    case MsgType::kSynAck:
      m.seq = r.ReadVarint();
      m.digest = ReadDigest(r);
      break;
    case MsgType::kSyncDeltas:
      m.digest = ReadDigest(r);
      m.deltas = ReadDeltas(r);
      break;
    case MsgType::kDeltas:
      m.deltas = ReadDeltas(r);
      break;
    case MsgType::kPushPull: {
      const uint8_t reply = r.ReadU8();
      if (reply > 1) r.Fail("bad reply flag");
      m.reply_wanted = reply == 1;
      m.members = ReadUpdates(r);
      break;
    }
  }
  Status s = r.Finish();
  if (!s.ok()) return s;
  return m;
}

}  // namespace hearsay::gossip
