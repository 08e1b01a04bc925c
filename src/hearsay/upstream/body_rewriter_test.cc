// Tests of the fast request rewrite against the tree rewrite: ordinary bodies take the fast path,
// and whenever it answers, its body is the same JSON value as the tree's (on real request shapes,
// edge cases, and many seeded random mutations of them).
#include "hearsay/upstream/body_rewriter.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hearsay/env/rng.h"
#include "hearsay/upstream/upstream_response.h"

namespace hearsay::upstream {
namespace {

using nlohmann::json;

// The fast rewrite agrees with the tree on `body` for every setting; returns whether it answered.
bool Agrees(const std::string& body) {
  bool answered = false;
  for (bool llamacpp : {false, true}) {
    for (std::string_view model : {std::string_view(), std::string_view("up\"stream\n")}) {
      for (bool stream : {true, false}) {
        const std::optional<std::string> fast =
            RewriteRequestBodyByScan(body, llamacpp, model, stream);
        if (!fast) continue;
        answered = true;
        const Result<std::string> tree = RewriteRequestBodyTree(body, llamacpp, model, stream);
        EXPECT_TRUE(tree.ok()) << "fast path accepted what the tree rejects: " << body;
        if (!tree.ok()) continue;
        const json a = json::parse(*fast, nullptr, false);
        EXPECT_FALSE(a.is_discarded()) << "fast path wrote invalid JSON: " << *fast;
        EXPECT_EQ(a, json::parse(tree.value())) << body << "\nfast: " << *fast;
      }
    }
  }
  return answered;
}

const std::vector<std::string>& Corpus() {
  static const std::vector<std::string> corpus = {
      R"({"model":"fixed","prompt":"The quick brown fox","max_tokens":16,"stream":false})",
      R"({"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi \u00e9 \"q\""}],"stream":true,"stream_options":{"include_usage":false,"x":[1,{}]}})",
      R"({"prompt":["a","b"],"temperature":0.5e-1,"stop":null,"logit_bias":{"1":-100}})",
      R"( { "prompt" : "spaced" , "stream_options" : null , "timings_per_token" : false } )",
      R"({"prompt":"p","stream_options":7,"cache_prompt":false,"model":"client"})",
      R"({})",
      R"({"stream_options":{}})",
      // Left to the tree.
      R"({"prompt":"a","prompt":"b"})",
      R"({"messages":[{"role":"user","role":"system","content":"c"}]})",
      R"({"stream_options":{"include_usage":true,"include_usage":false}})",
      R"({"prompt":"a",})",
      R"([1])",
      "{\"prompt\":\"\xC3\x28\"}",
      "",
  };
  return corpus;
}

TEST(BodyRewriterTest, OrdinaryBodiesTakeTheFastPath) {
  for (size_t i = 0; i < 7; ++i) EXPECT_TRUE(Agrees(Corpus()[i])) << Corpus()[i];
}

TEST(BodyRewriterTest, LeavesDuplicatesAndBadInputToTheTree) {
  for (size_t i = 7; i < Corpus().size(); ++i) {
    EXPECT_FALSE(RewriteRequestBodyByScan(Corpus()[i], true, "m").has_value()) << Corpus()[i];
    EXPECT_EQ(RewriteRequestBody(Corpus()[i], true, "m").ok(),
              RewriteRequestBodyTree(Corpus()[i], true, "m").ok());
  }
}

TEST(BodyRewriterTest, KeepsOtherStreamOptionsAndSetsTheRest) {
  const json j = json::parse(RewriteRequestBody(Corpus()[1], true, "up").value());
  EXPECT_EQ(j["stream"], true);
  EXPECT_EQ(j["stream_options"], json::parse(R"({"include_usage":true,"x":[1,{}]})"));
  EXPECT_EQ(j["timings_per_token"], true);
  EXPECT_EQ(j["cache_prompt"], true);
  EXPECT_EQ(j["model"], "up");
  EXPECT_EQ(j["messages"][1]["content"], "hi \xC3\xA9 \"q\"");
}

TEST(BodyRewriterTest, AgreesWithTheTreeOnMutations) {
  static constexpr std::string_view kAlphabet = "{}[]\":,\\ 0123456789-+.eEtrufalsnm\x80\xC3";
  Rng rng(1129);
  size_t answered = 0;
  for (int round = 0; round < 10000; ++round) {
    std::string s = Corpus()[rng.Below(Corpus().size())];
    const int edits = 1 + static_cast<int>(rng.Below(3));
    for (int e = 0; e < edits && !s.empty(); ++e) {
      const size_t at = rng.Below(s.size());
      switch (rng.Below(3)) {
        case 0:
          s[at] = kAlphabet[rng.Below(kAlphabet.size())];
          break;
        case 1:
          s.insert(s.begin() + static_cast<ptrdiff_t>(at), kAlphabet[rng.Below(kAlphabet.size())]);
          break;
        default:
          s.erase(at, 1);
          break;
      }
    }
    answered += Agrees(s) ? 1 : 0;
  }
  EXPECT_GT(answered, 500u);
}

}  // namespace
}  // namespace hearsay::upstream
