#include "hearsay/gossip/wire.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>

#include "hearsay/common/bytes.h"
#include "hearsay/env/rng.h"

namespace hearsay::gossip {
namespace {

Header SampleHeader() {
  Header h;
  h.sender = "gpu-07";
  h.generation = 1234567890123ULL;
  h.incarnation = 5;
  h.load = LoadRecord{9, 3,
                      LoadReport{4,
                                 2,
                                 1000,
                                 4096,
                                 0.125,
                                 true,
                                 70000,
                                 5000,
                                 123456,
                                 21000,
                                 {{"b", 2, 4096}, {"c", 1, 64}}}};
  h.updates.push_back({MemberState::kSuspect, "gpu-02", "10.0.0.2:7946", 77, 3, "gpu-07", ""});
  h.updates.back().signature.emplace();
  h.updates.back().signature->fill(0xa5);
  h.updates.push_back({MemberState::kAlive, "gpu-03", "10.0.0.3:7946", 78, 0, "", "10.0.0.3:8080"});
  h.updates.back().signing_key = std::string(32, '\x5a');
  h.updates.back().signature.emplace();
  for (size_t i = 0; i < 64; ++i) h.updates.back().signature->at(i) = static_cast<uint8_t>(3 * i);
  h.updates.push_back({MemberState::kLeft, "gpu-05", "10.0.0.5:7946", 79, 2, "", ""});
  return h;
}

OriginDelta SampleRun() {
  OriginDelta d;
  d.id = "gpu-01";
  d.generation = 42;
  d.from_version = 10;
  d.to_version = 20;
  d.load = LoadRecord{12, 1,
                      LoadReport{.queue_depth = 1,
                                 .running = 1,
                                 .kv_used_tokens = 1,
                                 .kv_capacity_tokens = 1,
                                 .prefill_ms_per_token = 1.5}};
  d.entries = {{0xdeadbeefULL, 0, true, 11},
               {kSummaryKeyMask, 0, false, 13},  // a removal carries no block index
               {5, 32, true, 14},
               {7, 17, true, 15},
               {6, 4000000000u, true, 20}};
  d.service = ServiceRecord{16, Service{{{"vllm",
                                          "llama-3-8b",
                                          {"llama3", "default"},
                                          8192,
                                          {"sql-lora", "chat-lora"},
                                          0x0123456789abcdefULL,
                                          16}}}};
  d.usage = UsageRecord{18, {{0x10, 2500, 60000}, {0xfedcba9876543210ULL, 1, 0}}};
  d.signature.emplace();
  for (size_t i = 0; i < d.signature->size(); ++i) d.signature->at(i) = static_cast<uint8_t>(i);
  return d;
}

// A run across its origin's change of stride: it names the stride start.
OriginDelta SampleCrossingRun() {
  OriginDelta d = SampleRun();
  d.id = "gpu-04";
  d.stride = 32;
  d.stride_start = 15;
  return d;
}

OriginDelta SampleSnapshot() {
  OriginDelta d;
  d.id = "gpu-09";
  d.generation = 1;
  d.snapshot = true;
  d.to_version = 99;
  d.load = LoadRecord{98, 7, LoadReport{}};
  d.service = ServiceRecord{97, Service{{{"sim", "model-a", {}, 4096, {}, 7, 16},
                                         {"llamacpp", "model-b", {"b"}, 0, {}, 0, 32}}}};
  d.usage = UsageRecord{96, {{TenantHash("acme"), 1000, 120000}}};
  d.entries = {{1, 0, true, 99}, {1000, 16, true, 99}, {kSummaryKeyMask, 33, true, 99}};
  return d;
}

std::vector<Message> Samples() {
  std::vector<Message> out;
  for (uint8_t t = 1; t <= kMaxMsgType; ++t) {
    Message m;
    m.type = static_cast<MsgType>(t);
    m.header = SampleHeader();
    switch (m.type) {
      case MsgType::kPing:
        m.seq = 17;
        m.target = "gpu-02";
        break;
      case MsgType::kAck:
      case MsgType::kNack:
        m.seq = 1ULL << 40;
        break;
      case MsgType::kPingReq:
        m.seq = 3;
        m.target = "gpu-02";
        m.target_address = "10.0.0.2:7946";
        break;
      case MsgType::kSyn:
        m.digest_hash = 0x0123456789abcdefULL;
        m.digest_size = 12;
        m.seq = 8;
        break;
      case MsgType::kSynAck:
        m.seq = 8;
        m.digest = {{"a", 1, 2}, {"b", 3, 0}};
        break;
      case MsgType::kSyncDeltas:
        m.digest = {{"c", 5, 6}};
        m.deltas = {SampleRun(), SampleSnapshot()};
        break;
      case MsgType::kDeltas:
        m.deltas = {SampleSnapshot(), SampleCrossingRun()};
        break;
      case MsgType::kPushPull:
        m.reply_wanted = true;
        m.members = SampleHeader().updates;
        break;
    }
    out.push_back(m);
  }
  return out;
}

TEST(WireTest, EveryMessageTypeRoundTrips) {
  for (const Message& m : Samples()) {
    const std::vector<uint8_t> bytes = Encode(m);
    Result<Message> back = Decode(bytes);
    ASSERT_TRUE(back.ok()) << static_cast<int>(m.type) << ": " << back.status().ToString();
    EXPECT_EQ(*back, m) << static_cast<int>(m.type);
  }
}

TEST(WireTest, EncodedSizeHelpersMatchEncoding) {
  Message m;
  m.type = MsgType::kDeltas;
  m.header = SampleHeader();
  const OriginDelta d = SampleRun();
  m.deltas = {d};
  size_t expected = EncodedHeaderBaseSize(m.header);
  for (const auto& u : m.header.updates) expected += EncodedSize(u);
  expected += 1 + EncodedDeltaHeaderSize(d);
  uint64_t prev = d.from_version;
  for (const auto& e : d.entries) {
    expected += EncodedRunEntrySize(e, prev);
    prev = e.version;
  }
  // The helpers may overestimate the count varints by a byte each, never underestimate.
  const size_t actual = Encode(m).size();
  EXPECT_LE(actual, expected);
  EXPECT_GE(actual + 3, expected);
}

TEST(WireTest, VarintSizeMatchesTheWriterAtEveryLengthBoundary) {
  for (int bits = 0; bits <= 64; ++bits) {
    const uint64_t top = bits == 64 ? UINT64_MAX : (uint64_t{1} << bits) - 1;
    for (uint64_t v : {top, top + 1, top / 2 + 1}) {
      ByteWriter w;
      w.PutVarint(v);
      EXPECT_EQ(VarintSize(v), w.size()) << v;
    }
  }
}

TEST(WireTest, EveryTruncationIsRejected) {
  for (const Message& m : Samples()) {
    const std::vector<uint8_t> bytes = Encode(m);
    for (size_t n = 0; n < bytes.size(); ++n) {
      EXPECT_FALSE(Decode(std::span(bytes).first(n)).ok()) << static_cast<int>(m.type) << " " << n;
    }
    std::vector<uint8_t> longer = bytes;
    longer.push_back(0);
    EXPECT_FALSE(Decode(longer).ok());
  }
}

TEST(WireTest, RejectsUnknownVersionAndType) {
  std::vector<uint8_t> bytes = Encode(Samples()[0]);
  bytes[0] = kWireVersion + 1;
  EXPECT_FALSE(Decode(bytes).ok());
  bytes = Encode(Samples()[0]);
  bytes[1] = kMaxMsgType + 1;
  EXPECT_FALSE(Decode(bytes).ok());
  bytes[1] = 0;
  EXPECT_FALSE(Decode(bytes).ok());
}

TEST(WireTest, RejectsSemanticViolations) {
  Message m;
  m.type = MsgType::kDeltas;
  m.header = SampleHeader();
  OriginDelta d = SampleRun();
  d.entries[1].version = 25;  // beyond to_version
  m.deltas = {d};
  EXPECT_FALSE(Decode(Encode(m)).ok());
  d = SampleRun();
  d.load->version = 5;  // at or below the base
  m.deltas = {d};
  EXPECT_FALSE(Decode(Encode(m)).ok());
  d = SampleRun();
  d.from_version = 30;  // reversed range
  d.entries.clear();
  d.load.reset();
  m.deltas = {d};
  EXPECT_FALSE(Decode(Encode(m)).ok());
  m.type = MsgType::kPing;
  m.header.sender.clear();
  EXPECT_FALSE(Decode(Encode(m)).ok());
}

TEST(WireTest, RejectsABacklogListOutOfOrderOrPastItsLimits) {
  Message m;
  m.type = MsgType::kDeltas;
  m.header = SampleHeader();
  m.deltas = {SampleRun()};
  ASSERT_TRUE(Decode(Encode(m)).ok());
  const auto refused = [&m](std::vector<BacklogEntry> backlog) {
    Message bad = m;
    bad.header.load.load.backlog = std::move(backlog);
    return !Decode(Encode(bad)).ok();
  };
  EXPECT_TRUE(refused({{"c", 1, 64}, {"b", 2, 4096}}));  // not sorted
  EXPECT_TRUE(refused({{"b", 1, 64}, {"b", 2, 4096}}));  // twice
  EXPECT_TRUE(refused({{"", 1, 64}}));                   // no member
  EXPECT_TRUE(refused({{"b", 1, kMaxBacklogWorkMs + 1}}));
  EXPECT_TRUE(refused({{"b", kMaxBacklogRequests + 1, 64}}));
  std::vector<BacklogEntry> full;
  for (size_t i = 0; i <= kMaxBacklogEntries; ++i)
    full.push_back({"m" + std::to_string(100 + i), 1, 1});
  EXPECT_TRUE(refused(full));
  full.pop_back();
  EXPECT_FALSE(refused(full));
}

// One delta of `entries` (versions 1..n), as its own message, minus the same message without
// them: the bytes the entries cost on the wire.
size_t EntryBytes(const std::vector<CacheEntry>& entries) {
  Message m;
  m.type = MsgType::kDeltas;
  m.header.sender = "x";
  OriginDelta d;
  d.id = "o";
  d.to_version = entries.size();
  m.deltas = {d};
  const size_t empty = Encode(m).size();
  m.deltas[0].entries = entries;
  return Encode(m).size() - empty;
}

TEST(WireTest, LandmarkEntriesCostSevenBytes) {
  // Consecutive versions, 48-bit keys: a tag byte and six key bytes, for a live landmark up to
  // block 240 (index / 16 in the tag) and for any removal (no index at all).
  EXPECT_EQ(EntryBytes({{0x123456789abcULL, 0, true, 1}}), 7u);
  EXPECT_EQ(EntryBytes({{0x123456789abcULL, 240, true, 1}}), 7u);
  EXPECT_EQ(EntryBytes({{0x123456789abcULL, 0, false, 1}}), 7u);
  // Beyond block 240, or not a multiple of 16, the index takes tag bytes of its own.
  EXPECT_EQ(EntryBytes({{1, 256, true, 1}}), 8u);
  EXPECT_EQ(EntryBytes({{1, 17, true, 1}}), 8u);
  EXPECT_EQ(EntryBytes({{1, 4000000000u, true, 1}}), 11u);
  // The size helper agrees with the encoder entry by entry.
  for (uint32_t index : {0u, 15u, 16u, 240u, 256u, 4000u, 4000000000u, UINT32_MAX}) {
    for (bool live : {true, false}) {
      const CacheEntry e{42, live ? index : 0, live, 1};
      EXPECT_EQ(EntryBytes({e}), EncodedRunEntrySize(e, 0)) << index << " " << live;
      Message m;
      m.type = MsgType::kDeltas;
      m.header.sender = "x";
      m.deltas = {OriginDelta{"o", 1, false, 0, 1, std::nullopt, {e}}};
      Result<Message> back = Decode(Encode(m));
      ASSERT_TRUE(back.ok()) << index;
      EXPECT_EQ(*back, m) << index;
    }
  }
}

TEST(WireTest, KeysTravelAsSummaryKeys) {
  // A full 64-bit key is sent as its low 48 bits, in runs and in snapshots alike.
  const prefix::BlockKey full = 0xfedcba9876543210ULL;
  for (bool snapshot : {false, true}) {
    Message m;
    m.type = MsgType::kDeltas;
    m.header.sender = "x";
    OriginDelta d{"o", 1, snapshot, 0, 1, std::nullopt, {{full, 16, true, 1}}};
    m.deltas = {d};
    Result<Message> back = Decode(Encode(m));
    ASSERT_TRUE(back.ok());
    ASSERT_EQ(back->deltas[0].entries.size(), 1u);
    EXPECT_EQ(back->deltas[0].entries[0].key, SummaryKey(full));
    EXPECT_EQ(SummaryKey(full), 0xba9876543210ULL);
    EXPECT_EQ(back->deltas[0].entries[0].block_index, 16u);
  }
}

TEST(WireTest, RejectsARemovalWithABlockIndexAndAWideSnapshotKey) {
  Message m;
  m.type = MsgType::kDeltas;
  m.header.sender = "x";
  m.deltas = {OriginDelta{"o", 1, false, 0, 1, std::nullopt, {{9, 0, false, 1}}}};
  std::vector<uint8_t> bytes = Encode(m);
  ASSERT_TRUE(Decode(bytes).ok());
  // The entry's tag is the 7th byte from the end (tag, then 6 key bytes): a removal (bit 0
  // clear) with index bits above the two flags would decode to an index the encoder drops.
  uint8_t& tag = bytes[bytes.size() - 7];
  ASSERT_EQ(tag, 2);  // removal, next version
  tag = 2 | 4;
  EXPECT_FALSE(Decode(bytes).ok());
  // A snapshot whose first key is wider than 48 bits.
  m.deltas = {OriginDelta{"o", 1, true, 0, 1, std::nullopt, {{kSummaryKeyMask, 0, true, 1}}}};
  bytes = Encode(m);
  ASSERT_TRUE(Decode(bytes).ok());
  // The key varint (7 bytes for 48 bits, 6 in the last) ends 2 bytes from the end (then the
  // index code byte): widen it by one more bit.
  ASSERT_EQ(bytes[bytes.size() - 2], 0x3f);
  bytes[bytes.size() - 2] = 0x7f;
  EXPECT_FALSE(Decode(bytes).ok());
}

TEST(WireTest, HostileCountsDoNotAllocate) {
  // A delta claiming 2^20 entries in a 40-byte message fails on the count check.
  Message m;
  m.type = MsgType::kDeltas;
  m.header.sender = "x";
  std::vector<uint8_t> bytes = Encode(m);
  bytes.back() = 0;  // zero origins ...
  bytes.pop_back();
  const uint8_t huge[] = {0xff, 0xff, 0x03};  // ... replaced by 65535 origins
  bytes.insert(bytes.end(), std::begin(huge), std::end(huge));
  EXPECT_FALSE(Decode(bytes).ok());
}

TEST(WireTest, SynWithFullDigestRoundTripsAndEveryTruncationIsRejected) {
  Message m;
  m.type = MsgType::kSyn;
  m.header.sender = "gpu-01";
  m.digest_hash = 0xfeedULL;
  m.digest_size = 2;
  m.seq = 9;
  m.digest = {{"gpu-01", 1, 40}, {"gpu-02", 3, 7}};
  const std::vector<uint8_t> bytes = Encode(m);
  Result<Message> back = Decode(bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, m);
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(Decode(std::span(bytes).first(n)).ok()) << n;
  }
}

TEST(WireTest, RandomMutationsNeverCrash) {
  Rng rng(5);
  const auto samples = Samples();
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> bytes = Encode(samples[rng.Below(samples.size())]);
    const int flips = 1 + static_cast<int>(rng.Below(4));
    for (int f = 0; f < flips; ++f) {
      bytes[rng.Below(bytes.size())] = static_cast<uint8_t>(rng.NextU64());
    }
    Result<Message> r = Decode(bytes);
    if (r.ok()) {
      ++accepted;
      EXPECT_TRUE(Decode(Encode(*r)).ok());
    }
  }
  EXPECT_LT(accepted, 20000);
}

}  // namespace
}  // namespace hearsay::gossip

namespace hearsay::gossip {
namespace {

// Every delta names its origin's landmark stride. A power of two costs no byte over
// version 2's bare snapshot flag; any other stride costs a varint.
TEST(WireTest, DeltaStrideRoundTripsInTheFlagsByte) {
  Message m;
  m.type = MsgType::kDeltas;
  m.header = SampleHeader();
  m.deltas = {SampleRun(), SampleSnapshot()};
  const size_t base = Encode(m).size();
  for (uint32_t stride : {1u, 2u, 16u, 128u, 4096u, kMaxLandmarkStride}) {
    for (auto& d : m.deltas) d.stride = stride;
    const std::vector<uint8_t> bytes = Encode(m);
    EXPECT_EQ(bytes.size(), base) << stride;
    auto back = Decode(bytes);
    ASSERT_TRUE(back.ok()) << stride;
    EXPECT_EQ(back->deltas[0].stride, stride);
    EXPECT_EQ(back->deltas[1].stride, stride);
    EXPECT_TRUE(back->deltas[1].snapshot);
    EXPECT_FALSE(back->deltas[0].snapshot);
  }
  for (uint32_t stride : {3u, 48u, kMaxLandmarkStride - 1}) {
    for (auto& d : m.deltas) d.stride = stride;
    const std::vector<uint8_t> bytes = Encode(m);
    EXPECT_EQ(bytes.size(), base + 2 * VarintSize(stride)) << stride;
    EXPECT_EQ(EncodedDeltaHeaderSize(m.deltas[0]),
              EncodedDeltaHeaderSize(SampleRun()) + VarintSize(stride));
    auto back = Decode(bytes);
    ASSERT_TRUE(back.ok()) << stride;
    EXPECT_EQ(back->deltas[0].stride, stride);
    EXPECT_EQ(back->deltas[1].stride, stride);
  }
}

// The flags byte of the only delta: the one byte that differs between two encodings whose
// strides are 2^20 and 2^19.
size_t FlagsOffset(Message m) {
  m.deltas[0].stride = kMaxLandmarkStride;
  const std::vector<uint8_t> a = Encode(m);
  m.deltas[0].stride = kMaxLandmarkStride / 2;
  const std::vector<uint8_t> b = Encode(m);
  size_t at = a.size();
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) {
      EXPECT_EQ(at, a.size()) << "more than one byte differs";
      at = i;
    }
  }
  return at;
}

TEST(WireTest, RejectsABadStride) {
  Message m;
  m.type = MsgType::kDeltas;
  m.header = SampleHeader();
  m.deltas = {SampleRun()};
  const size_t at = FlagsOffset(m);
  ASSERT_LT(at, Encode(m).size());
  std::vector<uint8_t> bytes = Encode(m);
  bytes[at] = static_cast<uint8_t>((bytes[at] & 0xc1) | 22 << 1);  // stride code above 2^20
  EXPECT_FALSE(Decode(bytes).ok());
  // Code 0 with an explicit stride of 0, and of 2^20 + 1.
  m.deltas[0].stride = 3;
  bytes = Encode(m);
  ASSERT_EQ(bytes[at] & 0x3e, 0);
  ASSERT_EQ(bytes[at + 1], 3);
  bytes[at + 1] = 0;
  EXPECT_FALSE(Decode(bytes).ok());
  bytes[at + 1] = 0x81;
  const std::vector<uint8_t> wide = {0x80, 0x40};  // with 0x81: 2^20 + 1
  bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(at + 2), wide.begin(), wide.end());
  EXPECT_FALSE(Decode(bytes).ok());
  // The same splice with 2^20 exactly decodes.
  bytes[at + 1] = 0x80;
  auto ok = Decode(bytes);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->deltas[0].stride, kMaxLandmarkStride);
}

// Wire v4: a run across its origin's change of stride carries the stride start, as a
// step above its from version after a flag in the flags byte; other deltas cost nothing more.
TEST(WireTest, StrideStartRoundTrips) {
  Message m;
  m.type = MsgType::kDeltas;
  m.header = SampleHeader();
  m.deltas = {SampleRun()};
  const size_t base = Encode(m).size();
  for (uint64_t start : {11u, 15u, 20u}) {
    m.deltas[0].stride_start = start;
    const std::vector<uint8_t> bytes = Encode(m);
    EXPECT_EQ(bytes.size(), base + 1) << start;
    EXPECT_EQ(EncodedDeltaHeaderSize(m.deltas[0]), EncodedDeltaHeaderSize(SampleRun()) + 1);
    auto back = Decode(bytes);
    ASSERT_TRUE(back.ok()) << start;
    EXPECT_EQ(back->deltas[0], m.deltas[0]);
  }
  // A long run: the step takes more than one byte, and the size helper agrees.
  m.deltas[0].to_version = 1'000'000;
  m.deltas[0].stride_start = 900'000;
  const std::vector<uint8_t> bytes = Encode(m);
  m.deltas[0].stride_start = 0;
  EXPECT_EQ(bytes.size(), Encode(m).size() + VarintSize(900'000 - 10));
  auto back = Decode(bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->deltas[0].stride_start, 900'000u);
}

TEST(WireTest, RejectsAMalformedStrideStart) {
  Message m;
  m.type = MsgType::kDeltas;
  m.header = SampleHeader();
  m.deltas = {SampleRun()};
  const size_t at = FlagsOffset(m);
  m.deltas[0].stride_start = 15;
  std::vector<uint8_t> bytes = Encode(m);
  ASSERT_TRUE(Decode(bytes).ok());
  // flags, from (10), start step (5), to step (10).
  ASSERT_EQ(bytes[at] & 0x40, 0x40);
  ASSERT_EQ(bytes[at + 1], 10);
  ASSERT_EQ(bytes[at + 2], 5);
  ASSERT_EQ(bytes[at + 3], 10);
  std::vector<uint8_t> bad = bytes;
  bad[at + 2] = 0;  // at the from version: the run does not start below it
  EXPECT_FALSE(Decode(bad).ok());
  bad[at + 2] = 11;  // beyond the to version
  EXPECT_FALSE(Decode(bad).ok());
  bad[at + 2] = 10;  // exactly the to version decodes
  EXPECT_TRUE(Decode(bad).ok());
  // A snapshot never names a stride start.
  m.deltas = {SampleSnapshot()};
  bytes = Encode(m);
  const size_t snap_at = FlagsOffset(m);
  ASSERT_EQ(bytes[snap_at] & 1, 1);
  // Splice a step after its from version (0) and set the flag.
  bytes[snap_at] |= 0x40;
  bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(snap_at + 2), uint8_t{1});
  EXPECT_FALSE(Decode(bytes).ok());
}

}  // namespace
}  // namespace hearsay::gossip

namespace hearsay::gossip {
namespace {

// Wire v4: a delta's to version is a step above its from version, and its load flag a bit of the
// flags byte. A run far into its origin's history (versions of 2 and 3 bytes) costs 3 bytes less
// than in version 3 (2 for the to version, 1 for the load flag byte).
TEST(WireTest, RunHeadersCarryTheVersionRangeAsAStep) {
  OriginDelta d = SampleRun();
  d.from_version = 20'000;
  d.to_version = 20'010;
  d.load->version = 20'002;
  d.service.reset();
  d.usage.reset();
  d.signature.reset();
  for (auto& e : d.entries) e.version += 20'000 - 10;
  EXPECT_EQ(EncodedDeltaHeaderSize(d), 1 + d.id.size() + VarintSize(d.generation) + 1 +
                                           VarintSize(20'000) + 1 + EncodedSize(*d.load) + 1);
  Message m;
  m.type = MsgType::kDeltas;
  m.header = SampleHeader();
  m.deltas = {d};
  auto back = Decode(Encode(m));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->deltas[0], d);
  // Without a load record nothing follows the range but the count.
  m.deltas[0].load.reset();
  back = Decode(Encode(m));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->deltas[0], m.deltas[0]);
}

TEST(WireTest, RejectsAVersionRangePast2To64) {
  Message m;
  m.type = MsgType::kDeltas;
  m.header = SampleHeader();
  OriginDelta d;
  d.id = "a";
  d.from_version = std::numeric_limits<uint64_t>::max() - 1;
  d.to_version = std::numeric_limits<uint64_t>::max();
  m.deltas = {d};
  std::vector<uint8_t> bytes = Encode(m);
  ASSERT_TRUE(Decode(bytes).ok());
  // The span (1) is the second-to-last byte, before the count (0): a span of 2 overflows.
  ASSERT_EQ(bytes[bytes.size() - 2], 1);
  bytes[bytes.size() - 2] = 2;
  EXPECT_FALSE(Decode(bytes).ok());
}

// Version 7: the signature bit (4) of a delta's entry count says 64 bytes follow; a member update's
// signing key is empty or 32 bytes.
TEST(WireTest, SignaturesAndSigningKeysRoundTripAndBadOnesAreRefused) {
  Message m;
  m.type = MsgType::kDeltas;
  m.header.sender = "s";
  OriginDelta d;
  d.id = "o";
  d.generation = 1;
  d.from_version = 0;
  d.to_version = 1;
  d.signature.emplace();
  d.signature->fill(0xab);
  m.deltas = {d};
  std::vector<uint8_t> bytes = Encode(m);
  ASSERT_TRUE(Decode(bytes).ok());
  EXPECT_EQ(Decode(bytes)->deltas[0].signature, d.signature);
  // The entry count varint is the byte just before the 64 signature bytes: 0 * 8 + 4.
  const size_t count_at = bytes.size() - 65;
  ASSERT_EQ(bytes[count_at], 4);
  bytes[count_at] = 0;  // no signature bit: 64 bytes left over
  EXPECT_FALSE(Decode(bytes).ok());
  // A signature cut short.
  bytes = Encode(m);
  bytes.pop_back();
  EXPECT_FALSE(Decode(bytes).ok());

  Message p;
  p.type = MsgType::kPushPull;
  p.header.sender = "s";
  p.members.push_back({MemberState::kAlive, "a", "addr", 1, 0, "", ""});
  p.members.back().signing_key = std::string(32, 'k');
  ASSERT_TRUE(Decode(Encode(p)).ok());
  EXPECT_EQ(Decode(Encode(p))->members[0].signing_key, std::string(32, 'k'));
}

// Version 8: a member update's first byte is its state (bits 0-1) and whether a key (bit 2) and a
// signature (bit 3) follow it raw; an update without them costs nothing for them.
TEST(WireTest, MemberUpdateKeysAndSignaturesAreFlaggedInItsFirstByte) {
  Message p;
  p.type = MsgType::kPushPull;
  p.header.sender = "s";
  MemberUpdate u{MemberState::kDead, "a", "", 1, 2, "b", ""};
  p.members = {u};
  const size_t bare = Encode(p).size();
  EXPECT_EQ(EncodedSize(u), 1 + 2 + 1 + 1 + 1 + 2 + 1u);
  u.signature.emplace();
  u.signature->fill(9);
  p.members = {u};
  std::vector<uint8_t> bytes = Encode(p);
  EXPECT_EQ(bytes.size(), bare + 64);
  ASSERT_TRUE(Decode(bytes).ok());
  EXPECT_EQ(Decode(bytes)->members[0], u);
  const size_t first = bytes.size() - EncodedSize(u);
  EXPECT_EQ(bytes[first], 0x08 | 2);
  // An unknown flag bit, a signature cut short, a key flag with no key: refused.
  for (uint8_t bad : {0x10, 0x20, 0x80}) {
    std::vector<uint8_t> b = bytes;
    b[first] |= bad;
    EXPECT_FALSE(Decode(b).ok()) << int{bad};
  }
  std::vector<uint8_t> cut = bytes;
  cut.pop_back();
  EXPECT_FALSE(Decode(cut).ok());
  std::vector<uint8_t> keyless = bytes;
  keyless[first] |= 0x04;  // 32 key bytes then 64 signature bytes wanted: 32 short
  EXPECT_FALSE(Decode(keyless).ok());
  // Both, in order: key then signature.
  u.signing_key = std::string(32, 'k');
  p.members = {u};
  bytes = Encode(p);
  EXPECT_EQ(bytes.size(), bare + 96);
  ASSERT_TRUE(Decode(bytes).ok());
  EXPECT_EQ(Decode(bytes)->members[0], u);
}

// The message fuzz target's seed corpus (fuzz/corpus/message_fuzz/typeN.bin: Samples(), one per
// type, with landmark strides of 16 and 3 on the deltas, and a run naming its stride start)
// must decode with the current wire
// version. HEARSAY_WRITE_MESSAGE_CORPUS=1 rewrites it after a wire change.
TEST(WireCorpusTest, SeedCorpusDecodes) {
  const char* root = std::getenv("HEARSAY_SOURCE_DIR");
  if (root == nullptr) GTEST_SKIP() << "HEARSAY_SOURCE_DIR is not set";
  const std::filesystem::path dir = std::filesystem::path(root) / "fuzz/corpus/message_fuzz";
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  std::vector<Message> samples = Samples();
  for (Message& m : samples) {
    for (size_t i = 0; i < m.deltas.size(); ++i) m.deltas[i].stride = i == 0 ? 16 : 3;
  }
  if (std::getenv("HEARSAY_WRITE_MESSAGE_CORPUS") != nullptr) {
    for (const Message& m : samples) {
      const std::vector<uint8_t> bytes = Encode(m);
      std::ofstream out(dir / ("type" + std::to_string(static_cast<int>(m.type)) + ".bin"),
                        std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(bytes.data()),
                static_cast<std::streamsize>(bytes.size()));
    }
  }
  for (const Message& m : samples) {
    const std::filesystem::path file =
        dir / ("type" + std::to_string(static_cast<int>(m.type)) + ".bin");
    std::ifstream in(file, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
    auto decoded = Decode(bytes);
    ASSERT_TRUE(decoded.ok()) << file << ": " << decoded.status().ToString();
    EXPECT_EQ(*decoded, m) << file;
  }
}

}  // namespace
}  // namespace hearsay::gossip
