#include "hearsay/gossip/usage.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "hearsay/gossip/wire.h"

namespace hearsay::gossip::usage_test {
namespace {

std::vector<TenantUsage> Sample() {
  return {{TenantHash("acme"), 12500, 90000}, {TenantHash("globex"), 0, 1}};
}

std::vector<TenantUsage> Sorted(std::vector<TenantUsage> v) {
  std::sort(v.begin(), v.end(),
            [](const TenantUsage& a, const TenantUsage& b) { return a.tenant < b.tenant; });
  return v;
}

// A deltas message carrying `tenants` as its usage record (bypassing the writer's checks).
std::vector<uint8_t> MessageWith(const std::vector<TenantUsage>& tenants) {
  Message m;
  m.type = MsgType::kDeltas;
  m.header.sender = "x";
  OriginDelta d;
  d.id = "o";
  d.generation = 1;
  d.from_version = 0;
  d.to_version = 2;
  d.usage = UsageRecord{2, tenants};
  m.deltas = {d};
  return Encode(m);
}

TEST(UsageTest, TenantHashIsFnv1a) {
  EXPECT_EQ(TenantHash(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(TenantHash("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_NE(TenantHash("acme"), TenantHash("acmf"));
}

TEST(UsageTest, RoundTripsInADeltaWithAServiceRecord) {
  Message m;
  m.type = MsgType::kDeltas;
  OriginDelta d;
  d.id = "o";
  d.from_version = 3;
  d.to_version = 9;
  d.service = ServiceRecord{5, Service{{{"sim", "m", {}, 0, {}, 1, 16}}}};
  d.usage = UsageRecord{8, Sorted(Sample())};
  d.entries = {{42, 16, true, 4}};
  m.header.sender = "x";
  m.deltas = {d};
  Result<Message> back = Decode(Encode(m));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->deltas[0], d);
  ByteWriter w;
  PutUsageRecord(w, *d.usage);
  EXPECT_EQ(w.Take().size(), EncodedSize(*d.usage));
}

TEST(UsageTest, ValidUsageChecksOrderCountAndRates) {
  EXPECT_TRUE(ValidUsage({}));
  EXPECT_TRUE(ValidUsage(Sorted(Sample())));
  std::vector<TenantUsage> reversed = Sorted(Sample());
  std::swap(reversed[0], reversed[1]);
  EXPECT_FALSE(ValidUsage(reversed));
  EXPECT_FALSE(ValidUsage({{1, 0, 0}, {1, 0, 0}}));
  EXPECT_FALSE(ValidUsage({{1, kMaxUsageRate + 1, 0}}));
  EXPECT_FALSE(ValidUsage({{1, 0, kMaxUsageRate + 1}}));
  std::vector<TenantUsage> many;
  for (uint64_t i = 0; i <= kMaxUsageTenants; ++i) many.push_back({i, 1, 1});
  EXPECT_FALSE(ValidUsage(many));
  many.pop_back();
  EXPECT_TRUE(ValidUsage(many));
}

TEST(UsageTest, DecoderRefusesWhatTheWriterWouldNot) {
  std::vector<TenantUsage> reversed = Sorted(Sample());
  std::swap(reversed[0], reversed[1]);
  EXPECT_FALSE(Decode(MessageWith(reversed)).ok());
  EXPECT_FALSE(Decode(MessageWith({{7, 1, 1}, {7, 2, 2}})).ok());
  EXPECT_FALSE(Decode(MessageWith({{7, kMaxUsageRate + 1, 1}})).ok());
  std::vector<TenantUsage> many;
  for (uint64_t i = 0; i <= kMaxUsageTenants; ++i) many.push_back({i, 1, 1});
  EXPECT_FALSE(Decode(MessageWith(many)).ok());
  many.pop_back();
  EXPECT_TRUE(Decode(MessageWith(many)).ok());
}

TEST(UsageTest, DecoderRefusesARecordVersionOutsideTheDelta) {
  Message m;
  m.type = MsgType::kDeltas;
  m.header.sender = "x";
  OriginDelta d;
  d.id = "o";
  d.from_version = 4;
  d.to_version = 6;
  d.usage = UsageRecord{4, {}};  // not above the base
  m.deltas = {d};
  EXPECT_FALSE(Decode(Encode(m)).ok());
  m.deltas[0].usage->version = 7;  // beyond the delta
  EXPECT_FALSE(Decode(Encode(m)).ok());
  m.deltas[0].usage->version = 5;
  EXPECT_TRUE(Decode(Encode(m)).ok());
}

// Bit 2 of the entry count varint announces a signature: without its 64 bytes the body is refused.
TEST(UsageTest, DecoderRefusesASignatureBitWithoutItsSignature) {
  Message m;
  m.type = MsgType::kDeltas;
  m.header.sender = "x";
  OriginDelta d;
  d.id = "o";
  d.from_version = 0;
  d.to_version = 1;
  m.deltas = {d};
  std::vector<uint8_t> bytes = Encode(m);
  ASSERT_TRUE(Decode(bytes).ok());
  ASSERT_EQ(bytes.back(), 0);  // the count varint ends the body (no entries, no records)
  bytes.back() = 4;
  EXPECT_EQ(Decode(bytes).status().code(), StatusCode::kDataLoss);
}

TEST(UsageTest, EveryTruncationFailsCleanly) {
  const std::vector<uint8_t> bytes = MessageWith(Sorted(Sample()));
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(Decode(std::span<const uint8_t>(bytes.data(), n)).ok()) << n;
  }
}

// A fuzz seed at the limits (fuzz/corpus/message_fuzz/usage_limits.bin), so the fuzzer starts
// next to every bound. HEARSAY_WRITE_MESSAGE_CORPUS=1 rewrites it after a wire change.
TEST(UsageTest, LimitsSeedDecodes) {
  const char* root = std::getenv("HEARSAY_SOURCE_DIR");
  if (root == nullptr) GTEST_SKIP() << "HEARSAY_SOURCE_DIR is not set";
  std::vector<TenantUsage> full;
  for (uint64_t i = 0; i < kMaxUsageTenants; ++i) {
    full.push_back({i * 0x0101010101010101ull, i == 0 ? kMaxUsageRate : i, kMaxUsageRate - i});
  }
  ASSERT_TRUE(ValidUsage(full));
  const std::filesystem::path file =
      std::filesystem::path(root) / "fuzz/corpus/message_fuzz/usage_limits.bin";
  const std::vector<uint8_t> bytes = MessageWith(full);
  if (std::getenv("HEARSAY_WRITE_MESSAGE_CORPUS") != nullptr) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  }
  std::ifstream in(file, std::ios::binary);
  const std::vector<uint8_t> seed((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  EXPECT_EQ(seed, bytes);
  Result<Message> back = Decode(seed);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->deltas[0].usage->tenants, full);
}

}  // namespace
}  // namespace hearsay::gossip::usage_test
