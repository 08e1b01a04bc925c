#include "hearsay/workload/trace_workload.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "hearsay/workload/bundled_trace.h"

namespace hearsay::workload {
namespace {

std::shared_ptr<const Trace> ParseOrDie(std::string_view text, const TraceOptions& o = {}) {
  Result<Trace> t = Trace::Parse(text, o);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  if (!t.ok()) return std::make_shared<Trace>(*Trace::Parse("", o));
  return std::make_shared<Trace>(std::move(t).value());
}

TraceWorkload MakeWorkload(std::shared_ptr<const Trace> trace, const TraceWorkloadOptions& o,
                           uint64_t seed) {
  Result<TraceWorkload> w = TraceWorkload::Create(std::move(trace), o, Rng(seed));
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return std::move(w).value();
}

// The trace the repository ships (data/): present, every line a request, and its published shape.
TEST(TraceTest, LoadsTheBundledMooncakeTrace) {
  const std::string path = BundledTracePath();
  ASSERT_TRUE(std::filesystem::exists(path)) << "data/ trace missing: " << path;
  std::ifstream in(path);
  size_t lines = 0;
  for (std::string line; std::getline(in, line);) ++lines;
  EXPECT_EQ(lines, kBundledTraceRequests);
  Result<Trace> trace = Trace::LoadFile(path, {});
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  EXPECT_EQ(trace->size(), kBundledTraceRequests);
  EXPECT_NEAR(trace->MeanInputLength(), 15300, 15300 * 0.01);
  EXPECT_NEAR(trace->RepeatedBlockShare(), 0.64, 0.01);
  for (size_t i = 0; i < trace->size(); ++i) {
    ASSERT_LE(trace->shareable_tokens(i), trace->input_length(i));
    if (i > 0) {
      ASSERT_GE(trace->arrival(i), trace->arrival(i - 1));
    }
  }
  EXPECT_EQ(trace->shareable_tokens(0), 0u);
  // The trace spans about 17 minutes.
  EXPECT_NEAR(ToSeconds(trace->arrival(trace->size() - 1)), 1022.0, 1.0);
}

TEST(TraceTest, BundledTraceTokensFollowBlockIds) {
  Result<Trace> loaded = Trace::LoadFile(BundledTracePath(), {});
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  auto trace = std::make_shared<Trace>(std::move(loaded).value());
  TraceWorkload w = MakeWorkload(trace, {}, 1);
  // Every full block with one id has the same tokens wherever it appears; different ids differ.
  std::map<uint64_t, std::vector<TokenId>> block_of;
  std::set<std::vector<TokenId>> distinct_heads;
  size_t checked_repeats = 0;
  for (size_t i = 0; i < 200; ++i) {
    std::optional<Request> r = w.Next();
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(r->prompt.size(), trace->input_length(i));
    EXPECT_EQ(r->output_tokens, trace->output_length(i));
    EXPECT_EQ(r->arrival, trace->arrival(i));
    EXPECT_EQ(r->shareable_prefix_tokens, trace->shareable_tokens(i));
    const auto ids = trace->hash_ids(i);
    for (size_t b = 0; b < ids.size(); ++b) {
      const size_t begin = b * 512;
      const size_t end = std::min<size_t>(begin + 512, r->prompt.size());
      std::vector<TokenId> block(r->prompt.begin() + begin, r->prompt.begin() + end);
      auto [it, inserted] = block_of.emplace(ids[b], block);
      if (inserted) {
        std::vector<TokenId> head(block.begin(), block.begin() + std::min<size_t>(8, end - begin));
        EXPECT_TRUE(distinct_heads.insert(head).second) << "block " << ids[b];
      } else {
        const size_t n = std::min(it->second.size(), block.size());
        EXPECT_TRUE(std::equal(block.begin(), block.begin() + n, it->second.begin()));
        ++checked_repeats;
      }
    }
  }
  EXPECT_GT(checked_repeats, 300u);
}

TEST(TraceTest, SharedIdsShareTokensAndPartialBlocksArePrefixes) {
  // Block size 4 keeps the arithmetic visible. Request 1 shares ids 10, 11 with request 0, and
  // its last block (id 12, 2 tokens) is the first half of request 0's block 12.
  const std::string text =
      R"({"timestamp": 0, "input_length": 12, "output_length": 5, "hash_ids": [10, 11, 12]})"
      "\n"
      R"({"timestamp": 2.5, "input_length": 10, "output_length": 1, "hash_ids": [10, 11, 12]})"
      "\n"
      R"({"timestamp": 7, "input_length": 11, "output_length": 1, "hash_ids": [10, 13]})"
      "\n";
  TraceOptions o;
  o.block_tokens = 4;
  auto trace = ParseOrDie(text, o);
  ASSERT_EQ(trace->size(), 3u);
  EXPECT_EQ(trace->total_blocks(), 8u);
  EXPECT_EQ(trace->repeated_blocks(), 4u);
  EXPECT_EQ(trace->shareable_tokens(0), 0u);
  EXPECT_EQ(trace->shareable_tokens(1), 10u);  // All three blocks seen; clipped to the input.
  EXPECT_EQ(trace->shareable_tokens(2), 4u);   // Block 10 only.

  TraceWorkload w = MakeWorkload(trace, {}, 3);
  const Request a = *w.Next();
  const Request b = *w.Next();
  const Request c = *w.Next();
  EXPECT_FALSE(w.Next().has_value());
  EXPECT_EQ(b.arrival, FromMillis(2.5));
  ASSERT_EQ(a.prompt.size(), 12u);
  ASSERT_EQ(b.prompt.size(), 10u);
  ASSERT_EQ(c.prompt.size(), 11u);
  EXPECT_TRUE(std::equal(b.prompt.begin(), b.prompt.end(), a.prompt.begin()));
  EXPECT_TRUE(std::equal(c.prompt.begin(), c.prompt.begin() + 4, a.prompt.begin()));
  EXPECT_NE(c.prompt[4], a.prompt[4]);  // Block 13 is not block 11.
  // Tokens 8..10 of c lie past its ids: its own, unlike anything else.
  EXPECT_NE(std::vector<TokenId>(c.prompt.begin() + 8, c.prompt.end()),
            std::vector<TokenId>(a.prompt.begin() + 8, a.prompt.begin() + 11));
}

TEST(TraceTest, BlockSizeIsAParameter) {
  const std::string line =
      R"({"timestamp": 0, "input_length": 100, "output_length": 1, "hash_ids": [1, 2, 3, 4]})";
  TraceOptions o;
  o.block_tokens = 25;
  EXPECT_TRUE(Trace::Parse(line, o).ok());
  o.block_tokens = 16;  // 100 tokens fit 7 blocks of 16: 4 ids is fine.
  EXPECT_TRUE(Trace::Parse(line, o).ok());
  o.block_tokens = 50;  // Only 2 blocks of 50.
  EXPECT_FALSE(Trace::Parse(line, o).ok());
  o.block_tokens = 0;
  EXPECT_FALSE(Trace::Parse(line, o).ok());
}

struct BadLine {
  const char* line;
  const char* why;  // A fragment the error must contain.
};

TEST(TraceTest, MalformedLinesNameTheLine) {
  const std::string good =
      R"({"timestamp": 5, "input_length": 1000, "output_length": 2, "hash_ids": [1, 2]})";
  const BadLine bad[] = {
      {R"({"timestamp": 5, "input_length": 1000)", "bad JSON"},
      {R"(not json at all)", "bad JSON"},
      {R"([1, 2, 3])", "not a JSON object"},
      {R"({"input_length": 10, "output_length": 2, "hash_ids": []})", "timestamp"},
      {R"({"timestamp": 9, "output_length": 2, "hash_ids": []})", "input_length"},
      {R"({"timestamp": 9, "input_length": 10, "hash_ids": []})", "output_length"},
      {R"({"timestamp": 9, "input_length": 10, "output_length": 2})", "hash_ids"},
      {R"({"timestamp": "9", "input_length": 10, "output_length": 2, "hash_ids": []})",
       "timestamp"},
      {R"({"timestamp": 9, "input_length": 10.5, "output_length": 2, "hash_ids": []})",
       "input_length"},
      {R"({"timestamp": 9, "input_length": "10", "output_length": 2, "hash_ids": []})",
       "input_length"},
      {R"({"timestamp": 9, "input_length": 10, "output_length": 2, "hash_ids": {}})", "hash_ids"},
      {R"({"timestamp": 9, "input_length": 2000, "output_length": 2, "hash_ids": [1, -2]})",
       "hash_ids\"[1]"},
      {R"({"timestamp": 9, "input_length": 10, "output_length": 2, "hash_ids": ["a"]})",
       "hash_ids\"[0]"},
      {R"({"timestamp": 9, "input_length": -10, "output_length": 2, "hash_ids": []})", "negative"},
      {R"({"timestamp": 9, "input_length": 10, "output_length": -1, "hash_ids": []})", "negative"},
      {R"({"timestamp": -1, "input_length": 10, "output_length": 2, "hash_ids": []})", "negative"},
      {R"({"timestamp": 9, "input_length": 0, "output_length": 2, "hash_ids": []})", ">= 1"},
      {R"({"timestamp": 9, "input_length": 99999999999, "output_length": 2, "hash_ids": []})",
       "limit"},
      {R"({"timestamp": 9, "input_length": 1025, "output_length": 2, "hash_ids": [1, 2, 3, 4]})",
       "at most 3 blocks"},
      {R"({"timestamp": 1e300, "input_length": 10, "output_length": 2, "hash_ids": []})",
       "too large"},
      {R"({"timestamp": 4, "input_length": 10, "output_length": 2, "hash_ids": []})",
       "earlier than the previous"},
  };
  for (const BadLine& b : bad) {
    // Good lines, a blank line, then the bad one on line 4.
    const std::string text = good + "\n" + good + "\n\n" + b.line + "\n" + good + "\n";
    Result<Trace> t = Trace::Parse(text, {});
    ASSERT_FALSE(t.ok()) << b.line;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find("trace line 4: "), std::string::npos)
        << t.status().message();
    EXPECT_NE(t.status().message().find(b.why), std::string::npos) << t.status().message();
  }
}

TEST(TraceTest, ToleratesBlankLinesCrlfExtraFieldsAndFloatTimestamps) {
  const std::string text =
      "\r\n"
      R"({"timestamp": 1.25, "input_length": 3, "output_length": 0, "hash_ids": [], "x": [1]})"
      "\r\n   \n"
      R"({"hash_ids": [7], "output_length": 4, "input_length": 600, "timestamp": 1.25})";
  auto trace = ParseOrDie(text);
  ASSERT_EQ(trace->size(), 2u);
  EXPECT_EQ(trace->arrival(0), FromMillis(1.25));
  EXPECT_EQ(trace->input_length(1), 600u);
  EXPECT_EQ(trace->output_length(0), 0u);
  EXPECT_EQ(Trace::Parse("", {})->size(), 0u);
}

TEST(TraceTest, SortOptionReordersBackwardTimestamps) {
  const std::string text =
      R"({"timestamp": 10, "input_length": 5, "output_length": 1, "hash_ids": [1]})"
      "\n"
      R"({"timestamp": 3, "input_length": 6, "output_length": 1, "hash_ids": [1]})"
      "\n"
      R"({"timestamp": 10, "input_length": 7, "output_length": 1, "hash_ids": [2]})";
  EXPECT_FALSE(Trace::Parse(text, {}).ok());
  TraceOptions o;
  o.sort_by_timestamp = true;
  auto trace = ParseOrDie(text, o);
  ASSERT_EQ(trace->size(), 3u);
  EXPECT_EQ(trace->input_length(0), 6u);
  EXPECT_EQ(trace->input_length(1), 5u);  // Stable among equal timestamps.
  EXPECT_EQ(trace->input_length(2), 7u);
  // Sharing is computed in arrival order: the 6-token request is now first.
  EXPECT_EQ(trace->shareable_tokens(0), 0u);
  EXPECT_EQ(trace->shareable_tokens(1), 5u);
}

TEST(TraceTest, MissingFileIsNotFound) {
  Result<Trace> t = Trace::LoadFile("/nonexistent/hearsay/trace.jsonl", {});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound);
}

std::string SyntheticTrace(int n) {
  std::string text;
  for (int i = 0; i < n; ++i) {
    text += R"({"timestamp": )" + std::to_string(i * 10) +
            R"(, "input_length": 1200, "output_length": 3, "hash_ids": [0, )" +
            std::to_string(1 + i % 7) + "]}\n";
  }
  return text;
}

TEST(TraceWorkloadTest, SameSeedSameStream) {
  auto trace = ParseOrDie(SyntheticTrace(200));
  TraceWorkloadOptions o;
  o.entry = {EntryMode::kUniform, 6, 20};
  TraceWorkload a = MakeWorkload(trace, o, 5);
  TraceWorkload b = MakeWorkload(trace, o, 5);
  TraceWorkload c = MakeWorkload(trace, o, 6);
  bool differs = false;
  for (int i = 0; i < 200; ++i) {
    const Request ra = *a.Next();
    const Request rb = *b.Next();
    const Request rc = *c.Next();
    EXPECT_EQ(ra.id, static_cast<uint64_t>(i));
    EXPECT_EQ(ra.prompt, rb.prompt);
    EXPECT_EQ(ra.prompt, rc.prompt);  // Tokens depend only on block ids.
    EXPECT_EQ(ra.entry_node, rb.entry_node);
    EXPECT_EQ(ra.client, rb.client);
    differs |= ra.entry_node != rc.entry_node;
  }
  EXPECT_TRUE(differs);
  EXPECT_FALSE(a.Next().has_value());
  EXPECT_FALSE(a.Next().has_value());
}

TEST(TraceWorkloadTest, TimeScaleLimitAndRetiming) {
  auto trace = ParseOrDie(SyntheticTrace(100));
  TraceWorkloadOptions o;
  o.time_scale = 0.5;
  o.max_requests = 30;
  TraceWorkload w = MakeWorkload(trace, o, 1);
  int n = 0;
  while (std::optional<Request> r = w.Next()) {
    EXPECT_EQ(r->arrival, FromMillis(n * 5.0));
    ++n;
  }
  EXPECT_EQ(n, 30);

  TraceWorkloadOptions poisson;
  poisson.arrivals = ArrivalOptions{ArrivalKind::kPoisson, 1000.0, 0};
  TraceWorkload p = MakeWorkload(trace, poisson, 2);
  Duration last{0};
  n = 0;
  while (std::optional<Request> r = p.Next()) {
    EXPECT_GE(r->arrival, last);
    EXPECT_EQ(r->prompt.size(), 1200u);  // Same requests, new times.
    last = r->arrival;
    ++n;
  }
  EXPECT_EQ(n, 100);
  EXPECT_LT(last, FromMillis(500));  // ~100 ms at 1000 req/s; the trace spans 990 ms.

  EXPECT_FALSE(TraceWorkload::Create(nullptr, {}, Rng(1)).ok());
  TraceWorkloadOptions bad;
  bad.time_scale = 0;
  EXPECT_FALSE(TraceWorkload::Create(trace, bad, Rng(1)).ok());
  bad = {};
  bad.entry.nodes = 0;
  EXPECT_FALSE(TraceWorkload::Create(trace, bad, Rng(1)).ok());
}

TEST(TraceWorkloadTest, StickyEntryPinsClients) {
  auto trace = ParseOrDie(SyntheticTrace(500));
  TraceWorkloadOptions o;
  o.entry = {EntryMode::kSticky, 4, 10};
  TraceWorkload w = MakeWorkload(trace, o, 3);
  std::map<uint64_t, uint32_t> node_of;
  while (std::optional<Request> r = w.Next()) {
    auto [it, inserted] = node_of.emplace(r->client, r->entry_node);
    EXPECT_EQ(it->second, r->entry_node);
  }
  EXPECT_EQ(node_of.size(), 10u);
}

}  // namespace
}  // namespace hearsay::workload
