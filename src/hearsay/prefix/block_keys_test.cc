#include "hearsay/prefix/block_keys.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "hearsay/env/rng.h"

namespace hearsay::prefix {
namespace {

constexpr std::string_view kSecret = "0123456789abcdef-cluster-secret";

BlockKeyer MakeKeyer(BlockKeyerOptions options = {}, std::string_view model = "llama-3-8b",
                     std::string_view tenant = "acme", std::string_view secret = kSecret) {
  auto keyer = BlockKeyer::Create(secret, model, tenant, options);
  EXPECT_TRUE(keyer.ok()) << keyer.status().ToString();
  return *std::move(keyer);
}

std::vector<TokenId> RandomTokens(Rng& rng, size_t n, uint64_t alphabet = 50000) {
  std::vector<TokenId> tokens(n);
  for (auto& t : tokens) t = static_cast<TokenId>(rng.Below(alphabet));
  return tokens;
}

TEST(BlockKeysTest, OnlyFullBlocksGetKeys) {
  const BlockKeyer keyer = MakeKeyer();
  Rng rng(1);
  const auto tokens = RandomTokens(rng, 16 * 5 + 7);
  EXPECT_EQ(keyer.Keys(tokens).size(), 5u);
  EXPECT_EQ(keyer.FullBlocks(tokens.size()), 5u);
  EXPECT_TRUE(keyer.Keys({}).empty());
  EXPECT_TRUE(keyer.Keys(std::span(tokens).first(15)).empty());
  EXPECT_EQ(keyer.Keys(std::span(tokens).first(16)).size(), 1u);
}

TEST(BlockKeysTest, PartialLastBlockIsIgnored) {
  const BlockKeyer keyer = MakeKeyer();
  Rng rng(2);
  auto tokens = RandomTokens(rng, 16 * 3 + 9);
  const auto before = keyer.Keys(tokens);
  tokens.back() ^= 1;
  tokens.push_back(7);
  EXPECT_EQ(keyer.Keys(tokens), before);
  EXPECT_EQ(keyer.Keys(std::span(tokens).first(48)), before);
}

TEST(BlockKeysTest, DeterministicAcrossKeyers) {
  Rng rng(3);
  const auto tokens = RandomTokens(rng, 1000);
  EXPECT_EQ(MakeKeyer().Keys(tokens), MakeKeyer().Keys(tokens));
}

// Keys travel between nodes and versions, so the construction must never change by accident.
// These values were cross-checked against an independent implementation of the construction in
// block_keys.h (Python hashlib BLAKE2b + libxxhash's XXH3_64bits_withSecret via ctypes).
TEST(BlockKeysTest, KnownAnswer) {
  const BlockKeyer keyer = MakeKeyer();
  std::vector<TokenId> tokens(40);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<TokenId>(1000 + i);
  const auto keys = keyer.Keys(tokens);
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0], 0x6e0e4c93a1a94726ull) << std::hex << keys[0];
  EXPECT_EQ(keys[1], 0x9b75be3e3eb76fe9ull) << std::hex << keys[1];
  const auto byte_keys = keyer.ByteKeys(std::string(130, 'x'));
  ASSERT_EQ(byte_keys.size(), 2u);
  EXPECT_EQ(byte_keys[0], 0xa542579123fceb45ull) << std::hex << byte_keys[0];
}

// Same cross-check for other block sizes: 128 and 256 bytes take specialized paths, 132 and 800
// bytes the generic one (800 also XXH3's long-input path).
TEST(BlockKeysTest, KnownAnswerOtherBlockSizes) {
  const std::vector<std::pair<size_t, std::pair<BlockKey, BlockKey>>> cases = {
      {32, {0x0fedd133159c7762ull, 0x708b3a7f6eee902cull}},
      {33, {0xa664eda200eb2897ull, 0x4c2635b70be1b962ull}},
      {64, {0x2359cfaef6b8d179ull, 0xcf71591144b37df0ull}},
      {200, {0x89288211f4faec61ull, 0x92e54e1c74a2eb35ull}},
  };
  for (const auto& [block, want] : cases) {
    const BlockKeyer keyer = MakeKeyer({.tokens_per_block = block});
    std::vector<TokenId> tokens(2 * block);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<TokenId>(1000 + i);
    const auto keys = keyer.Keys(tokens);
    ASSERT_EQ(keys.size(), 2u);
    EXPECT_EQ(keys[0], want.first) << "block " << block;
    EXPECT_EQ(keys[1], want.second) << "block " << block;
  }
}

TEST(BlockKeysTest, ChainPropertyPrefixKeysArePrefixOfKeys) {
  const BlockKeyer keyer = MakeKeyer();
  Rng rng(4);
  const auto tokens = RandomTokens(rng, 16 * 20);
  const auto all = keyer.Keys(tokens);
  for (size_t n = 0; n <= tokens.size(); n += 5) {
    const auto keys = keyer.Keys(std::span(tokens).first(n));
    ASSERT_EQ(keys.size(), n / 16);
    EXPECT_TRUE(std::equal(keys.begin(), keys.end(), all.begin()));
  }
}

// Changing block j changes the key of every block >= j, and none before: a key covers the prefix.
TEST(BlockKeysTest, ChangeInOneBlockChangesAllLaterKeys) {
  for (size_t block : {size_t{16}, size_t{32}, size_t{61}, size_t{64}, size_t{128}, size_t{200}}) {
    const BlockKeyer keyer = MakeKeyer({.tokens_per_block = block});
    Rng rng(5);
    const auto tokens = RandomTokens(rng, block * 6);
    const auto base = keyer.Keys(tokens);
    ASSERT_EQ(base.size(), 6u);
    for (size_t j = 0; j < 6; ++j) {
      auto changed = tokens;
      changed[j * block + rng.Below(block)] += 1;
      const auto keys = keyer.Keys(changed);
      for (size_t i = 0; i < 6; ++i) {
        if (i < j) {
          EXPECT_EQ(keys[i], base[i]) << "block size " << block << " j " << j << " i " << i;
        } else {
          EXPECT_NE(keys[i], base[i]) << "block size " << block << " j " << j << " i " << i;
        }
      }
    }
  }
}

// Equal block contents at the same position but after different prefixes get different keys,
// also for blocks longer than XXH3's 240-byte short-input limit.
TEST(BlockKeysTest, EqualBlocksAfterDifferentPrefixesDiffer) {
  for (size_t block : {size_t{16}, size_t{64}, size_t{1024}}) {
    const BlockKeyer keyer = MakeKeyer({.tokens_per_block = block});
    std::vector<TokenId> a(2 * block, 9);
    std::vector<TokenId> b = a;
    b[0] = 10;
    EXPECT_NE(keyer.Keys(a)[1], keyer.Keys(b)[1]) << block;
  }
}

TEST(BlockKeysTest, AppendKeysFromExtendsAChain) {
  const BlockKeyer keyer = MakeKeyer();
  Rng rng(6);
  const auto tokens = RandomTokens(rng, 16 * 12 + 3);
  const auto all = keyer.Keys(tokens);
  for (size_t first = 0; first <= all.size() + 1; ++first) {
    std::vector<BlockKey> out = {42};
    const BlockKey prev = first == 0 || first > all.size() ? 0 : all[first - 1];
    keyer.AppendKeysFrom(tokens, first, prev, &out);
    ASSERT_EQ(out.size(), 1 + (first < all.size() ? all.size() - first : 0));
    EXPECT_EQ(out[0], 42u);
    for (size_t i = 1; i < out.size(); ++i) EXPECT_EQ(out[i], all[first + i - 1]);
  }
}

TEST(BlockKeysTest, AppendKeysAppends) {
  const BlockKeyer keyer = MakeKeyer();
  Rng rng(7);
  const auto tokens = RandomTokens(rng, 64);
  std::vector<BlockKey> out = {1, 2};
  keyer.AppendKeys(tokens, &out);
  const auto keys = keyer.Keys(tokens);
  ASSERT_EQ(out.size(), 2 + keys.size());
  EXPECT_TRUE(std::equal(keys.begin(), keys.end(), out.begin() + 2));
}

TEST(BlockKeysTest, NamespacesSeparateKeys) {
  Rng rng(8);
  const auto tokens = RandomTokens(rng, 16 * 8);
  const auto base = MakeKeyer().Keys(tokens);
  const std::vector<std::vector<BlockKey>> others = {
      MakeKeyer({}, "llama-3-70b", "acme").Keys(tokens),
      MakeKeyer({}, "llama-3-8b", "globex").Keys(tokens),
      MakeKeyer({}, "llama-3-8b", "acme", "0123456789abcdef-cluster-secreT").Keys(tokens),
      // Length-prefixed fields: moving a byte between model and tenant changes the namespace.
      MakeKeyer({}, "llama-3-8", "bacme").Keys(tokens),
      MakeKeyer({}, "", "llama-3-8bacme").Keys(tokens),
  };
  std::unordered_set<BlockKey> seen(base.begin(), base.end());
  for (const auto& keys : others) {
    ASSERT_EQ(keys.size(), base.size());
    for (BlockKey k : keys) EXPECT_TRUE(seen.insert(k).second) << "shared key across namespaces";
  }
}

TEST(BlockKeysTest, BlockSizeIsPartOfTheNamespace) {
  Rng rng(9);
  const auto tokens = RandomTokens(rng, 32 * 4);
  const auto k16 = MakeKeyer({.tokens_per_block = 16}).Keys(tokens);
  const auto k32 = MakeKeyer({.tokens_per_block = 32}).Keys(tokens);
  for (BlockKey k : k32) EXPECT_EQ(std::count(k16.begin(), k16.end(), k), 0);
}

TEST(BlockKeysTest, LongSecretsAreAccepted) {
  const std::string long_secret(200, 's');
  const std::string secret64(64, 's');
  Rng rng(10);
  const auto tokens = RandomTokens(rng, 32);
  const auto a = MakeKeyer({}, "m", "t", long_secret).Keys(tokens);
  const auto b = MakeKeyer({}, "m", "t", secret64).Keys(tokens);
  const auto c = MakeKeyer({}, "m", "t", std::string(201, 's')).Keys(tokens);
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
}

TEST(BlockKeysTest, BytesMode) {
  const BlockKeyer keyer = MakeKeyer();
  std::string text;
  for (int i = 0; i < 300; ++i) text.push_back(static_cast<char>('a' + i % 26));
  const auto keys = keyer.ByteKeys(text);
  ASSERT_EQ(keys.size(), 300u / 64);
  EXPECT_EQ(keyer.ByteKeys(std::string_view(text).substr(0, 63)).size(), 0u);
  EXPECT_EQ(keyer.ByteKeys(std::string_view(text).substr(0, 128)),
            std::vector<BlockKey>(keys.begin(), keys.begin() + 2));
  std::string changed = text;
  changed[70] = '!';
  const auto keys2 = keyer.ByteKeys(changed);
  EXPECT_EQ(keys2[0], keys[0]);
  for (size_t i = 1; i < keys.size(); ++i) EXPECT_NE(keys2[i], keys[i]);
  // Custom byte block size; spans and strings agree.
  const BlockKeyer keyer8 = MakeKeyer({.bytes_per_block = 8});
  const auto* data = reinterpret_cast<const uint8_t*>(text.data());
  std::vector<BlockKey> out;
  keyer8.AppendByteKeys(std::span<const uint8_t>(data, 20), &out);
  EXPECT_EQ(out, keyer8.ByteKeys(text.substr(0, 20)));
  EXPECT_EQ(out.size(), 2u);
}

// The same 64 bytes as 16 tokens or as a byte block belong to different chains.
TEST(BlockKeysTest, TokenAndByteChainsDiffer) {
  const BlockKeyer keyer = MakeKeyer();
  std::vector<TokenId> tokens(16);
  for (size_t i = 0; i < 16; ++i) tokens[i] = static_cast<TokenId>(0x61616161u + i);
  const auto* bytes = reinterpret_cast<const uint8_t*>(tokens.data());
  EXPECT_NE(keyer.Keys(tokens)[0], keyer.ByteKeys(std::span<const uint8_t>(bytes, 64))[0]);
}

TEST(BlockKeysTest, BadInput) {
  EXPECT_EQ(BlockKeyer::Create("", "m", "t").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(BlockKeyer::Create("short-secret-15", "m", "t").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(BlockKeyer::Create("exactly-16-bytes", "m", "t").ok());
  EXPECT_EQ(BlockKeyer::Create(kSecret, "m", "t", {.tokens_per_block = 0}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(BlockKeyer::Create(kSecret, "m", "t", {.bytes_per_block = 0}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(
      BlockKeyer::Create(kSecret, "m", "t", {.tokens_per_block = (1u << 20) + 1}).status().code(),
      StatusCode::kInvalidArgument);
  EXPECT_EQ(BlockKeyer::Create(kSecret, "m", "t", {.bytes_per_block = SIZE_MAX}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(BlockKeyer::Create(kSecret, "m", "t", {.tokens_per_block = 1u << 20}).ok());
  EXPECT_TRUE(BlockKeyer::Create(kSecret, "", "").ok());
}

TEST(BlockKeysTest, MillionTokenPrompt) {
  const BlockKeyer keyer = MakeKeyer();
  Rng rng(11);
  const auto tokens = RandomTokens(rng, 1'000'000);
  const auto keys = keyer.Keys(tokens);
  ASSERT_EQ(keys.size(), 62'500u);
  EXPECT_EQ(keys.back(), keyer.Keys(tokens).back());
  std::unordered_set<BlockKey> distinct(keys.begin(), keys.end());
  EXPECT_EQ(distinct.size(), keys.size());
}

TEST(BlockKeysTest, HugeBlocksUseTheStreamingPath) {
  // 4096 tokens = 16 KiB per block, past the one-shot stack buffer.
  const BlockKeyer keyer = MakeKeyer({.tokens_per_block = 4096});
  Rng rng(12);
  const auto tokens = RandomTokens(rng, 4096 * 3);
  const auto keys = keyer.Keys(tokens);
  ASSERT_EQ(keys.size(), 3u);
  std::vector<BlockKey> tail;
  keyer.AppendKeysFrom(tokens, 2, keys[1], &tail);
  EXPECT_EQ(tail, std::vector<BlockKey>{keys[2]});
  auto changed = tokens;
  changed[4095] ^= 1;
  const auto keys2 = keyer.Keys(changed);
  EXPECT_NE(keys2[0], keys[0]);
  EXPECT_NE(keys2[2], keys[2]);
}

}  // namespace
}  // namespace hearsay::prefix

namespace hearsay::prefix {
namespace {

TEST(CacheNamespaceTest, NamespacesNeverShareKeysAndZeroIsThePlainChain) {
  const BlockKeyer keyer = MakeKeyer();
  Rng rng(7);
  const std::vector<TokenId> prompt = RandomTokens(rng, 64);
  std::vector<BlockKey> plain, zero, a, a2, b;
  keyer.AppendKeys(prompt, &plain);
  AppendNamespacedKeys(keyer, 0, prompt, &zero);
  EXPECT_EQ(zero, plain);
  const uint64_t ns_a = keyer.NamespaceId("acme", "");
  const uint64_t ns_b = keyer.NamespaceId("globex", "");
  EXPECT_EQ(keyer.NamespaceId("", ""), 0u);
  EXPECT_NE(ns_a, 0u);
  EXPECT_NE(ns_a, ns_b);
  EXPECT_NE(keyer.NamespaceId("acme", "s1"), ns_a);
  EXPECT_NE(keyer.NamespaceId("acme", "s1"), keyer.NamespaceId("acme", "s2"));
  EXPECT_NE(keyer.NamespaceId("", "s1"), 0u);
  // Length-prefixed: moving bytes between tenant and salt changes the id.
  EXPECT_NE(keyer.NamespaceId("ab", "c"), keyer.NamespaceId("a", "bc"));
  // Another cluster secret names the same tenant differently.
  EXPECT_NE(MakeKeyer({}, "llama-3-8b", "acme", "another-cluster-secret!").NamespaceId("acme", ""),
            ns_a);
  AppendNamespacedKeys(keyer, ns_a, prompt, &a);
  AppendNamespacedKeys(keyer, ns_a, prompt, &a2);
  AppendNamespacedKeys(keyer, ns_b, prompt, &b);
  // One key per prompt block, so block i of the prompt has index i in every namespace.
  ASSERT_EQ(a.size(), plain.size());
  EXPECT_EQ(a, a2);
  const std::unordered_set<BlockKey> seen(plain.begin(), plain.end());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(seen.count(a[i]), 0u);
    EXPECT_NE(a[i], b[i]);
  }
  // The namespaced keys are the chain over the namespace block and the prompt, without the
  // namespace block's own key (a header: it chains the others, and is never routed on).
  std::vector<TokenId> all = NamespaceBlock(ns_a, keyer.tokens_per_block());
  for (const TokenId t : all) EXPECT_TRUE(IsNamespaceToken(t));
  all.insert(all.end(), prompt.begin(), prompt.end());
  const std::vector<BlockKey> chain = keyer.Keys(all);
  ASSERT_EQ(chain.size(), a.size() + 1);
  EXPECT_EQ(std::vector<BlockKey>(chain.begin() + 1, chain.end()), a);
  // A prompt shorter than a block has no key in any namespace.
  std::vector<BlockKey> none;
  AppendNamespacedKeys(keyer, ns_a, std::span<const TokenId>(prompt).first(5), &none);
  EXPECT_TRUE(none.empty());
}

}  // namespace
}  // namespace hearsay::prefix
