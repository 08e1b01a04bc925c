#include "hearsay/common/bytes.h"

#include <gtest/gtest.h>

#include <limits>

namespace hearsay {
namespace {

TEST(BytesTest, RoundTripsEveryType) {
  ByteWriter w;
  w.PutU8(0xab);
  w.PutU16(0xbeef);
  w.PutU32(0xdeadbeef);
  w.PutU64(0x0123456789abcdefULL);
  w.PutVarint(0);
  w.PutVarint(300);
  w.PutVarint(std::numeric_limits<uint64_t>::max());
  w.PutSignedVarint(-5);
  w.PutSignedVarint(std::numeric_limits<int64_t>::min());
  w.PutDouble(3.25);
  w.PutString("hello");
  const std::vector<uint8_t> bytes = w.Take();

  ByteReader r(bytes);
  EXPECT_EQ(r.ReadU8(), 0xab);
  EXPECT_EQ(r.ReadU16(), 0xbeef);
  EXPECT_EQ(r.ReadU32(), 0xdeadbeefu);
  EXPECT_EQ(r.ReadU64(), 0x0123456789abcdefULL);
  EXPECT_EQ(r.ReadVarint(), 0u);
  EXPECT_EQ(r.ReadVarint(), 300u);
  EXPECT_EQ(r.ReadVarint(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(r.ReadSignedVarint(), -5);
  EXPECT_EQ(r.ReadSignedVarint(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(r.ReadDouble(), 3.25);
  EXPECT_EQ(r.ReadString(16), "hello");
  EXPECT_TRUE(r.Finish().ok());
}

TEST(BytesTest, TruncationIsStickyAndNamed) {
  const std::vector<uint8_t> bytes = {1, 2, 3};
  ByteReader r(bytes);
  EXPECT_EQ(r.ReadU32(), 0u);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.ReadU8(), 0u);  // sticky: no read after a failure
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("truncated"), std::string::npos);
}

TEST(BytesTest, RejectsOverlongVarint) {
  std::vector<uint8_t> bytes(11, 0xff);
  ByteReader r(bytes);
  r.ReadVarint();
  EXPECT_FALSE(r.ok());
  std::vector<uint8_t> overflow(9, 0xff);
  overflow.push_back(0x02);  // the 10th byte may only hold one bit
  ByteReader r2(overflow);
  r2.ReadVarint();
  EXPECT_FALSE(r2.ok());
}

TEST(BytesTest, LengthsAndCountsAreBoundedBeforeAllocation) {
  ByteWriter w;
  w.PutVarint(1'000'000'000);  // claims a billion items in a 5-byte message
  const auto bytes = w.Take();
  ByteReader r(bytes);
  EXPECT_EQ(r.ReadCount(std::numeric_limits<size_t>::max(), 1), 0u);
  EXPECT_FALSE(r.ok());

  ByteWriter w2;
  w2.PutString("abcdef");
  const auto bytes2 = w2.Take();
  ByteReader r2(bytes2);
  EXPECT_TRUE(r2.ReadString(3).empty());
  EXPECT_FALSE(r2.ok());
  EXPECT_NE(r2.status().message().find("over limit"), std::string::npos);
}

TEST(BytesTest, FinishRejectsTrailingBytes) {
  const std::vector<uint8_t> bytes = {1, 2};
  ByteReader r(bytes);
  r.ReadU8();
  EXPECT_TRUE(r.ok());
  EXPECT_FALSE(r.Finish().ok());
}

}  // namespace
}  // namespace hearsay
