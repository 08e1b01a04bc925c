#include "hearsay/workload/workload.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace hearsay::workload {
namespace {

TEST(ContentTokensTest, DeterministicAndInVocabulary) {
  std::vector<TokenId> a;
  std::vector<TokenId> b;
  AppendContentTokens(7, 0, 4096, 5000, a);
  AppendContentTokens(7, 0, 4096, 5000, b);
  EXPECT_EQ(a, b);
  for (TokenId t : a) {
    EXPECT_GE(t, kFirstContentToken);
    EXPECT_LT(t, 5000u);
  }
  // The values spread over the whole range (not a constant or a short cycle).
  std::set<TokenId> distinct(a.begin(), a.end());
  EXPECT_GT(distinct.size(), 2500u);
}

TEST(ContentTokensTest, OffsetsContinueTheSameStream) {
  std::vector<TokenId> whole;
  AppendContentTokens(99, 0, 1000, kDefaultVocab, whole);
  std::vector<TokenId> pieces;
  AppendContentTokens(99, 0, 300, kDefaultVocab, pieces);
  AppendContentTokens(99, 300, 700, kDefaultVocab, pieces);
  EXPECT_EQ(whole, pieces);
}

TEST(ContentTokensTest, DifferentStreamsDiffer) {
  // Among many streams, no two share even their first 4 tokens.
  std::set<std::vector<TokenId>> heads;
  for (uint64_t id = 0; id < 20000; ++id) {
    std::vector<TokenId> head;
    AppendContentTokens(id, 0, 4, kDefaultVocab, head);
    EXPECT_TRUE(heads.insert(head).second) << "stream " << id;
  }
}

TEST(ContentTokensTest, AppendsAfterExistingTokens) {
  std::vector<TokenId> out = {1, 2, 3};
  AppendContentTokens(5, 0, 10, kDefaultVocab, out);
  ASSERT_EQ(out.size(), 13u);
  EXPECT_EQ(out[0], 1u);
  EXPECT_EQ(out[2], 3u);
}

TEST(ClampTokensTest, RoundsAndClamps) {
  EXPECT_EQ(ClampTokens(10.4, 5, 20), 10u);
  EXPECT_EQ(ClampTokens(10.6, 5, 20), 11u);
  EXPECT_EQ(ClampTokens(1.0, 5, 20), 5u);
  EXPECT_EQ(ClampTokens(1e30, 5, 20), 20u);
  EXPECT_EQ(ClampTokens(std::nan(""), 5, 20), 5u);
}

TEST(RenderAsTextTest, OneWordPerTokenAndRoundTrips) {
  const std::vector<TokenId> tokens = {0, 1, 25, 26, 27, 701, 702, 31999, UINT32_MAX};
  const std::string text = RenderAsText(tokens);
  EXPECT_EQ(text.substr(0, 12), "a b z aa ab ");
  // A whitespace tokenizer sees exactly one word per token.
  size_t words = 0;
  bool in_word = false;
  for (char c : text) {
    if (c == ' ') {
      in_word = false;
    } else if (!in_word) {
      in_word = true;
      ++words;
    }
  }
  EXPECT_EQ(words, tokens.size());
  Result<std::vector<TokenId>> back = ParseRenderedText(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, tokens);
}

TEST(RenderAsTextTest, EqualTokenPrefixesGiveEqualTextPrefixes) {
  std::vector<TokenId> shared;
  AppendContentTokens(1, 0, 200, kDefaultVocab, shared);
  std::vector<TokenId> a = shared;
  std::vector<TokenId> b = shared;
  AppendContentTokens(2, 0, 50, kDefaultVocab, a);
  AppendContentTokens(3, 0, 80, kDefaultVocab, b);
  const std::string ta = RenderAsText(a);
  const std::string tb = RenderAsText(b);
  const std::string ts = RenderAsText(shared);
  EXPECT_EQ(ta.compare(0, ts.size(), ts), 0);
  EXPECT_EQ(tb.compare(0, ts.size(), ts), 0);
  EXPECT_NE(ta, tb);
}

TEST(RenderAsTextTest, RandomRoundTrips) {
  Rng rng(5);
  for (int round = 0; round < 200; ++round) {
    std::vector<TokenId> tokens(rng.Below(50));
    for (TokenId& t : tokens) t = static_cast<TokenId>(rng.NextU64() >> rng.Below(64));
    Result<std::vector<TokenId>> back = ParseRenderedText(RenderAsText(tokens));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, tokens);
  }
  EXPECT_EQ(RenderAsText({}), "");
}

TEST(RenderAsTextTest, ParseRejectsForeignText) {
  EXPECT_FALSE(ParseRenderedText("abc Def").ok());
  EXPECT_FALSE(ParseRenderedText("abc 12").ok());
  // One past UINT32_MAX.
  const std::string max_word = RenderAsText({UINT32_MAX});
  EXPECT_TRUE(ParseRenderedText(max_word).ok());
  EXPECT_FALSE(ParseRenderedText(max_word + "a").ok());
  EXPECT_FALSE(ParseRenderedText("zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz").ok());
  Result<std::vector<TokenId>> spaced = ParseRenderedText("  a\t\nb  ");
  ASSERT_TRUE(spaced.ok());
  EXPECT_EQ(*spaced, (std::vector<TokenId>{0, 1}));
}

TEST(EntryAssignerTest, ValidatesCounts) {
  EXPECT_TRUE(ValidateEntryOptions({EntryMode::kUniform, 4, 10}).ok());
  EXPECT_FALSE(ValidateEntryOptions({EntryMode::kUniform, 0, 10}).ok());
  EXPECT_FALSE(ValidateEntryOptions({EntryMode::kSticky, 4, 0}).ok());
}

TEST(EntryAssignerTest, UniformSpreadsOneClientOverAllNodes) {
  EntryAssigner entry({EntryMode::kUniform, 8, 1}, Rng(3));
  std::map<uint32_t, int> count;
  const int n = 80000;
  for (int i = 0; i < n; ++i) {
    const uint64_t client = entry.DrawClient();
    EXPECT_EQ(client, 0u);
    ++count[entry.NodeFor(client)];
  }
  ASSERT_EQ(count.size(), 8u);
  for (const auto& [node, c] : count) {
    EXPECT_LT(node, 8u);
    EXPECT_NEAR(c, n / 8, n / 8 * 0.05);
  }
}

TEST(EntryAssignerTest, StickyMapsEachClientToOneNode) {
  EntryAssigner entry({EntryMode::kSticky, 16, 1000}, Rng(4));
  std::map<uint64_t, uint32_t> node_of;
  std::map<uint32_t, int> clients_per_node;
  for (int i = 0; i < 50000; ++i) {
    const uint64_t client = entry.DrawClient();
    ASSERT_LT(client, 1000u);
    const uint32_t node = entry.NodeFor(client);
    ASSERT_LT(node, 16u);
    auto [it, inserted] = node_of.emplace(client, node);
    EXPECT_EQ(it->second, node) << "client " << client << " moved";
    if (inserted) ++clients_per_node[node];
  }
  EXPECT_EQ(node_of.size(), 1000u);
  // The hash spreads clients over every node, roughly evenly.
  ASSERT_EQ(clients_per_node.size(), 16u);
  for (const auto& [node, c] : clients_per_node) EXPECT_GT(c, 1000 / 16 / 2);
}

TEST(EntryAssignerTest, StickyMappingDependsOnSeed) {
  EntryAssigner a({EntryMode::kSticky, 16, 100}, Rng(1));
  EntryAssigner b({EntryMode::kSticky, 16, 100}, Rng(1));
  EntryAssigner c({EntryMode::kSticky, 16, 100}, Rng(2));
  int differ = 0;
  for (uint64_t client = 0; client < 100; ++client) {
    EXPECT_EQ(a.NodeFor(client), b.NodeFor(client));
    differ += a.NodeFor(client) != c.NodeFor(client);
  }
  EXPECT_GT(differ, 50);
}

}  // namespace
}  // namespace hearsay::workload
