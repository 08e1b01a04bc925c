#include "hearsay/upstream/kv_events_decoder.h"

#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "hearsay/upstream/kv_events_test_util.h"

namespace hearsay::upstream {
namespace {

using testing::EncodeBatch;
using testing::WireCleared;
using testing::WireForm;
using testing::WireRemoved;
using testing::WireStored;

std::string Hex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    while (hex[i] == ' ') ++i;
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

EngineBlockHash IntHash(uint64_t v) {
  EngineBlockHash h = "i";
  h += EncodeKvSeq(v);
  return h;
}

TEST(KvEventsDecoderTest, SequenceFrameIsEightBytesBigEndian) {
  EXPECT_EQ(*DecodeKvSeq(Hex("0000000000000102")), 258u);
  EXPECT_EQ(*DecodeKvSeq(Hex("ffffffffffffffff")), kKvReplayEndSeq);
  EXPECT_EQ(EncodeKvSeq(258), Hex("0000000000000102"));
  EXPECT_EQ(DecodeKvSeq("1234567").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(DecodeKvSeq("123456789").status().code(), StatusCode::kDataLoss);
}

// The bytes msgspec writes for vLLM's array_like KVEventBatch(ts=1.5, events=[BlockStored(
// block_hashes=[101, 102], parent_block_hash=None, token_ids=[1..8], block_size=4, lora_id=None,
// medium="GPU")], data_parallel_rank=0), written out by hand from the msgpack spec.
TEST(KvEventsDecoderTest, DecodesByteExactArrayBatch) {
  const std::string payload =
      Hex("93 cb3ff8000000000000 91 97 ab426c6f636b53746f726564 926566 c0 980102030405060708 04 c0 "
          "a3475055 00");
  Result<KvEventBatch> b = DecodeKvEventBatch(EncodeKvSeq(7), payload);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->seq, 7u);
  EXPECT_DOUBLE_EQ(b->ts, 1.5);
  EXPECT_EQ(b->data_parallel_rank, 0);
  ASSERT_EQ(b->events.size(), 1u);
  const auto& s = std::get<KvBlockStored>(b->events[0]);
  EXPECT_EQ(s.block_hashes, (std::vector<EngineBlockHash>{IntHash(101), IntHash(102)}));
  EXPECT_FALSE(s.parent_block_hash.has_value());
  EXPECT_EQ(s.token_ids, (std::vector<uint32_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(s.block_size, 4u);
  EXPECT_FALSE(s.lora_id.has_value());
  EXPECT_EQ(s.medium, "GPU");
  // The helper encoder writes exactly the same bytes.
  EXPECT_EQ(EncodeBatch(WireForm::kArray, 1.5,
                        {WireStored{{101, 102}, std::nullopt, testing::TokenRun(1, 8), 4}}),
            payload);
}

TEST(KvEventsDecoderTest, ArrayAndMapFormsDecodeAlike) {
  for (WireForm form : {WireForm::kArray, WireForm::kMap}) {
    const std::string bytes_hash(32, '\x7f');
    const std::string payload = EncodeBatch(
        form, 2.25,
        {WireStored{{int64_t{-5}}, int64_t{9}, testing::TokenRun(10, 16), 16, 3, std::nullopt},
         WireRemoved{{bytes_hash, int64_t{-5}}}, WireCleared{}},
        std::nullopt);
    Result<KvEventBatch> b = DecodeKvEventBatch(EncodeKvSeq(1), payload);
    ASSERT_TRUE(b.ok()) << b.status().message();
    EXPECT_FALSE(b->data_parallel_rank.has_value());
    ASSERT_EQ(b->events.size(), 3u);
    const auto& s = std::get<KvBlockStored>(b->events[0]);
    // A negative (signed) hash and its unsigned reading are the same block.
    EXPECT_EQ(s.block_hashes[0], IntHash(static_cast<uint64_t>(int64_t{-5})));
    EXPECT_EQ(s.parent_block_hash, IntHash(9));
    EXPECT_EQ(s.lora_id, 3);
    EXPECT_EQ(s.medium, "");
    const auto& r = std::get<KvBlockRemoved>(b->events[1]);
    EngineBlockHash want = "b";
    want += bytes_hash;
    EXPECT_EQ(r.block_hashes[0], want);
    EXPECT_EQ(r.block_hashes[1], s.block_hashes[0]);
    EXPECT_TRUE(std::holds_alternative<KvAllBlocksCleared>(b->events[2]));
  }
}

// Older vLLM sent fewer trailing fields, newer sends more (lora_name, extra_keys, group_idx, ...).
TEST(KvEventsDecoderTest, ToleratesMissingAndExtraTrailingFields) {
  // ["BlockStored", [1], nil, [1,2], 2] then ["BlockRemoved", [1]]: no lora_id, no medium.
  const std::string old_form =
      Hex("92 cb3ff0000000000000 92 95 ab426c6f636b53746f726564 9101 c0 920102 02 "
          "92 ac426c6f636b52656d6f766564 9101");
  Result<KvEventBatch> b = DecodeKvEventBatch(EncodeKvSeq(0), old_form);
  ASSERT_TRUE(b.ok()) << b.status().message();
  ASSERT_EQ(b->events.size(), 2u);
  EXPECT_EQ(std::get<KvBlockStored>(b->events[0]).medium, "");

  // 12 fields after the tag: ..., medium "GPU", lora_name nil, extra_keys [["salt"]],
  // group_idx 1, kv_cache_spec_kind "full", sliding window nil, and one unknown field 7.
  const std::string new_form =
      Hex("92 cb3ff0000000000000 91 9d ab426c6f636b53746f726564 9101 c0 920102 02 c0 a3475055 c0 "
          "91 91 a473616c74 01 a466756c6c c0 07");
  b = DecodeKvEventBatch(EncodeKvSeq(0), new_form);
  ASSERT_TRUE(b.ok()) << b.status().message();
  const auto& s = std::get<KvBlockStored>(b->events[0]);
  EXPECT_TRUE(s.has_extra_keys);
  EXPECT_EQ(s.group_idx, 1);
}

TEST(KvEventsDecoderTest, SkipsAndCountsUnknownEventTypes) {
  // [1.0, [["BlockMoved", 1], ["AllBlocksCleared"]]]
  const std::string payload = Hex(
      "92 cb3ff0000000000000 92 92 aa426c6f636b4d6f76656401 91 b0416c6c426c6f636b73436c6561726564");
  Result<KvEventBatch> b = DecodeKvEventBatch(EncodeKvSeq(0), payload);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->unknown_events, 1u);
  ASSERT_EQ(b->events.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<KvAllBlocksCleared>(b->events[0]));
}

TEST(KvEventsDecoderTest, RejectsMalformedInputWithAClearError) {
  const std::string seq = EncodeKvSeq(0);
  const std::string good =
      EncodeBatch(WireForm::kArray, 1.0, {WireStored{{1}, std::nullopt, {1, 2}, 2}});
  struct Case {
    std::string payload;
    std::string mentions;
  };
  const Case cases[] = {
      {"", "malformed msgpack"},
      {good.substr(0, good.size() - 1), "malformed msgpack"},  // truncated
      {good + "\x01", "bytes after the batch"},
      {Hex("c3"), "expected array or map"},
      {Hex("91 cb3ff0000000000000"), "expected [ts, events"},
      {Hex("92 a178 90"), "ts: expected float"},
      {Hex("92 cb3ff0000000000000 01"), "events: expected array"},
      {Hex("92 cb3ff0000000000000 91 01"), "expected array or map"},
      {Hex("92 cb3ff0000000000000 91 90"), "empty array"},
      // BlockStored with 3 tokens for one block of 2.
      {EncodeBatch(WireForm::kArray, 1.0, {WireStored{{1}, std::nullopt, {1, 2, 3}, 2}}),
       "3 token_ids for 1 blocks of 2"},
      {EncodeBatch(WireForm::kArray, 1.0, {WireStored{{1}, std::nullopt, {}, 0}}),
       "block_size must be positive"},
      // BlockStored missing token_ids and block_size: ["BlockStored", [1], nil].
      {Hex("92 cb3ff0000000000000 91 93 ab426c6f636b53746f726564 9101 c0"),
       "missing a required field"},
      // A hash that is a float.
      {Hex("92 cb3ff0000000000000 91 92 ac426c6f636b52656d6f766564 91 cb3ff0000000000000"),
       "block_hashes: expected int or bytes"},
      // A map event without "type".
      {Hex("92 cb3ff0000000000000 91 81 a16101"), "without \"type\""},
      // An array header claiming 2^32-1 elements in a 10-byte payload.
      {Hex("92 cb3ff0000000000000 dd ffffffff"), "malformed msgpack"},
      // Negative token id.
      {Hex("92 cb3ff0000000000000 91 95 ab426c6f636b53746f726564 9101 c0 92ff01 02"), "token_ids"},
  };
  for (const Case& c : cases) {
    Result<KvEventBatch> b = DecodeKvEventBatch(seq, c.payload);
    ASSERT_FALSE(b.ok()) << "accepted: " << c.mentions;
    EXPECT_EQ(b.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(b.status().message().find(c.mentions), std::string::npos)
        << b.status().message() << " should mention " << c.mentions;
  }
  EXPECT_TRUE(DecodeKvEventBatch(seq, good).ok());
  EXPECT_FALSE(DecodeKvEventBatch("short", good).ok());
}

}  // namespace
}  // namespace hearsay::upstream
