// Tests of the fast chunk scanner against the tree decoder: ordinary chunks take the fast path,
// and whenever the scanner answers, its answer equals the tree decoder's (on real chunk shapes,
// on edge cases, and on many seeded random mutations of them).
#include "hearsay/upstream/chunk_scanner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hearsay/api/scanner_test_util.h"
#include "hearsay/env/rng.h"
#include "hearsay/upstream/upstream_response.h"

namespace hearsay::upstream::chunk_scanner_test {
namespace {

std::string Describe(const UpstreamChunk& c) {
  auto opt = [](const auto& o) { return o ? std::to_string(*o) : std::string("-"); };
  return "done=" + std::to_string(c.done) + " text=[" + c.text + "] finish=[" + c.finish_reason +
         "] prompt=" + opt(c.prompt_tokens) + " completion=" + opt(c.completion_tokens) +
         " cached=" + opt(c.cached_tokens) + " computed=" + opt(c.prompt_computed_tokens) +
         " ms=" + opt(c.prompt_ms) + " error=" + (c.error ? *c.error : "-");
}

// The scanner agrees with the tree decoder on `data`; returns whether it answered.
bool Agrees(const std::string& data) {
  const Result<UpstreamChunk> tree = ParseUpstreamChunkTree(data);
  return api::testing::AgreesWithReference(
      data, ScanUpstreamChunk(data), tree.ok() ? &tree.value() : nullptr, tree.status().ToString(),
      [](const UpstreamChunk& c) { return Describe(c); });
}

const std::vector<std::string>& Corpus() {
  static const std::vector<std::string> corpus = {
      // vLLM / OpenAI completions, chat, usage chunks.
      R"({"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" token1","logprobs":null,"finish_reason":null}]})",
      R"({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]})",
      R"({"choices":[{"delta":{"content":"Hello \"world\"\n\t\\ \/ \u00e9\u4e2d\ud83d\ude00"}}]})",
      R"({"choices":[{"index":0,"text":"","finish_reason":"length"}],"usage":null})",
      R"({"choices":[],"usage":{"prompt_tokens":64,"completion_tokens":16,"total_tokens":80,"prompt_tokens_details":{"cached_tokens":48}}})",
      R"({"usage":{"prompt_tokens":1,"completion_tokens":null,"prompt_tokens_details":null}})",
      // llama.cpp with timings.
      R"({"choices":[{"text":"Hi","index":0,"finish_reason":null}],"object":"text_completion","timings":{"cache_n":96,"prompt_n":4,"prompt_ms":1.5,"predicted_n":1,"predicted_ms":0.25}})",
      R"({"choices":[{"text":"x"}],"timings":{"cache_n":0,"prompt_n":7,"prompt_ms":12}})",
      R"({"choices":[{"text":"x"}],"timings":{"cache_n":3,"prompt_ms":-0,"prompt_n":null}})",
      R"({"choices":[{"text":"x"}],"timings":{"prompt_ms":"fast","cache_n":2}})",
      R"({"choices":[{"text":"x"}],"timings":{"prompt_ms":2e3}})",
      R"({"choices":[{"text":"x"}],"usage":{"prompt_tokens":5},"timings":{"cache_n":4294967295,"prompt_n":4294967295}})",
      // Text precedence: text over delta; null text falls back to delta.
      R"({"choices":[{"text":null,"delta":{"content":"d"}}]})",
      R"({"choices":[{"text":"t","delta":5}]})",
      R"({"choices":[{"delta":{"content":null},"finish_reason":7}]})",
      R"({"choices":[{"delta":null}],"extra":[1,2.5,-3e-2,true,false,null,{"a":[]}]})",
      R"({"choices":[{"text":"a"},{"text":5},"anything"]})",
      R"(  {"choices" : [ { "text" : "spaced" } ] }  )",
      R"({"choices":null,"usage":{"prompt_tokens":0}})",
      R"({"error":null,"choices":[]})",
      // Rejected or left to the tree: errors, bad types, duplicates, odd numbers, bad JSON.
      R"({"error":{"message":"context full","code":500}})",
      R"({"error":"plain"})",
      R"({"choices":[{"text":"a","text":"b"}]})",
      R"({"usage":{"prompt_tokens":5.0}})",
      R"({"usage":{"prompt_tokens":-0}})",
      R"({"usage":{"prompt_tokens":4294967296}})",
      R"({"usage":{"prompt_tokens":-1}})",
      R"({"choices":[{"text":5}]})",
      R"({"choices":[5]})",
      R"({"choices":5})",
      R"({"usage":[]})",
      R"({"timings":{"cache_n":"many"}})",
      R"({"foo":1})",
      R"({"choices":[],})",
      R"({"choices":[{"text":"\ud800"}]})",
      R"({"choices":[{"text":"\udc00"}]})",
      "{\"choices\":[{\"text\":\"\xC3\x28\"}]}",
      "{\"choices\":[{\"text\":\"tab\there\"}]}",
      "\xEF\xBB\xBF{\"choices\":[]}",
      R"([1,2])",
      "",
      "{",
      "42",
  };
  return corpus;
}

TEST(ChunkScannerTest, OrdinaryChunksTakeTheFastPath) {
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_TRUE(Agrees(Corpus()[i])) << "fell back on " << Corpus()[i];
  }
}

TEST(ChunkScannerTest, LeavesErrorsAndOddInputToTheTree) {
  for (size_t i = 20; i < Corpus().size(); ++i) {
    EXPECT_FALSE(ScanUpstreamChunk(Corpus()[i]).has_value()) << Corpus()[i];
    // Whatever the tree says, ParseUpstreamChunk says the same.
    const Result<UpstreamChunk> full = ParseUpstreamChunk(Corpus()[i]);
    const Result<UpstreamChunk> tree = ParseUpstreamChunkTree(Corpus()[i]);
    EXPECT_EQ(full.ok(), tree.ok());
    if (full.ok() && tree.ok()) {
      EXPECT_EQ(Describe(full.value()), Describe(tree.value()));
    }
  }
}

TEST(ChunkScannerTest, DecodesEscapesAndUnicode) {
  auto c = ScanUpstreamChunk(Corpus()[2]);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->text, "Hello \"world\"\n\t\\ / \xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80");
}

TEST(ChunkScannerTest, DeepNestingGoesToTheTree) {
  std::string deep = R"({"choices":[],"x":)" + std::string(40, '[') + std::string(40, ']') + "}";
  EXPECT_FALSE(ScanUpstreamChunk(deep).has_value());
  EXPECT_TRUE(ParseUpstreamChunk(deep).ok());
}

// Seeded random edits of the corpus: byte flips, JSON-ish insertions, deletions, truncations.
TEST(ChunkScannerTest, AgreesWithTheTreeOnMutations) {
  static constexpr std::string_view kAlphabet = "{}[]\":,\\ 0123456789-+.eEtrufalsn\x80\xC3\xFF";
  const size_t answered = api::testing::CountAnsweredMutants(
      20261129, 30000, kAlphabet, [](Rng& rng) { return Corpus()[rng.Below(Corpus().size())]; },
      [](const std::string& s) { return Agrees(s); });
  // The mutations must exercise the fast path, not only the fallback.
  EXPECT_GT(answered, 2000u);
}

}  // namespace
}  // namespace hearsay::upstream::chunk_scanner_test
