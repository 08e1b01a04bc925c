// Tests of the stream event scanner against the SAX decoder: ordinary chunks take the fast path;
// whenever the scanner answers, its event equals the SAX decoder's; errors and odd input are left
// to the SAX decoder (on the shapes the node renders, edge cases, and seeded random mutations).
#include "hearsay/api/stream_event_scanner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hearsay/api/openai_response.h"
#include "hearsay/api/scanner_test_util.h"
#include "hearsay/env/rng.h"

namespace hearsay::api::stream_event_scanner_test {
namespace {

std::string Describe(const StreamEvent& e) {
  std::string out = "done=" + std::to_string(e.done) + " text=[" + e.delta_text + "] finish=[" +
                    e.finish_reason + "] error=" + (e.error ? e.error->message : "-");
  if (e.usage) {
    out += " usage=" + std::to_string(e.usage->prompt_tokens) + "/" +
           std::to_string(e.usage->completion_tokens) + "/" +
           std::to_string(e.usage->cached_tokens);
  }
  return out;
}

std::string Describe(const Result<StreamEvent>& r) {
  return r.ok() ? Describe(r.value()) : "error: " + r.status().ToString();
}

// The scanner agrees with the SAX decoder on `data`; returns whether it answered.
bool Agrees(const std::string& data) {
  const Result<StreamEvent> sax = ParseStreamEventSax(data);
  return testing::AgreesWithReference(data, ScanStreamEvent(data),
                                      sax.ok() ? &sax.value() : nullptr, sax.status().ToString(),
                                      [](const StreamEvent& e) { return Describe(e); });
}

// The data of a rendered event ("data: {...}\n\n").
std::string Data(const std::string& event) { return event.substr(6, event.size() - 8); }

std::vector<std::string> Rendered() {
  std::vector<std::string> out;
  for (const Endpoint endpoint : {Endpoint::kCompletions, Endpoint::kChatCompletions}) {
    const ResponseMeta meta{endpoint, "cmpl-1", 1700000000, "fixed", "node-a"};
    out.push_back(Data(RenderChunk(meta, " token1", true)));
    out.push_back(Data(RenderChunk(meta, "caf\xC3\xA9 \"q\"\n\t\\", false)));
    out.push_back(Data(RenderFinalChunk(meta, kFinishLength)));
    out.push_back(Data(RenderUsageChunk(meta, UsageCounts{128, 16, 96})));
  }
  return out;
}

const std::vector<std::string>& Valid() {
  static const std::vector<std::string> cases = [] {
    std::vector<std::string> v = Rendered();
    for (const std::string& s : std::vector<std::string>{
             R"({"choices":[{"index":0,"text":"a","finish_reason":null}]})",
             R"({"choices":[{"delta":{"role":"assistant","content":null}}],"usage":null})",
             R"({"choices":[{"delta":null,"text":"t"},{"text":5}],"error":null})",
             R"({"choices":[],"usage":{"prompt_tokens":null,"prompt_tokens_details":null}})",
             R"({"usage":{"prompt_tokens":4294967295,"completion_tokens":0,)"
             R"("prompt_tokens_details":{"cached_tokens":3,"audio_tokens":[1,2]},"x":1.5e3}})",
             R"( {"x":{"text":"not read","y":[true,false,null,-1]},"choices":null,"usage":{}} )",
             R"({"choices":[{"text":"\u00e9\ud83d\ude00","finish_reason":"stop"}]})",
         }) {
      v.push_back(s);
    }
    return v;
  }();
  return cases;
}

const std::vector<std::string>& LeftToSax() {
  static const std::vector<std::string> cases = {
      "[DONE]",
      "",
      "[]",
      "{}",
      R"({"x":1})",
      R"({"choices":[{"text":"a"}])",
      R"({"choices":[{"text":"a"}]} x)",
      R"({"error":{"message":"boom","type":"server_error"}})",
      R"({"choices":[{"text":"a","text":"b"}]})",
      R"({"choices":[],"choices":[]})",
      R"({"choices":[{"text":5}]})",
      R"({"choices":[{"delta":{"content":7}}]})",
      R"({"choices":[{"delta":"x"}]})",
      R"({"choices":[5]})",
      R"({"choices":{}})",
      R"({"usage":{"prompt_tokens":-1}})",
      R"({"usage":{"prompt_tokens":1.0}})",
      R"({"usage":{"prompt_tokens":4294967296}})",
      R"({"usage":{"prompt_tokens_details":[]}})",
      R"({"usage":[]})",
      "\xEF\xBB\xBF{\"choices\":[]}",
      "{\"choices\":[{\"text\":\"bad \xFF\"}]}",
      R"({"choices":[],"x":)" + std::string(40, '[') + std::string(40, ']') + "}",
  };
  return cases;
}

TEST(StreamEventScannerTest, AnswersOrdinaryChunks) {
  for (const std::string& s : Valid()) EXPECT_TRUE(Agrees(s)) << "left to SAX: " << s;
}

TEST(StreamEventScannerTest, ReadsWhatTheNodeRendered) {
  const std::optional<StreamEvent> chat = ScanStreamEvent(Rendered()[4]);
  ASSERT_TRUE(chat.has_value());
  EXPECT_EQ(chat->delta_text, " token1");
  const std::optional<StreamEvent> usage = ScanStreamEvent(Rendered()[3]);
  ASSERT_TRUE(usage.has_value() && usage->usage.has_value());
  EXPECT_EQ(*usage->usage, (UsageCounts{128, 16, 96}));
  const std::optional<StreamEvent> fin = ScanStreamEvent(Rendered()[2]);
  ASSERT_TRUE(fin.has_value());
  EXPECT_EQ(fin->finish_reason, "length");
}

TEST(StreamEventScannerTest, LeavesErrorsAndOddInputToSax) {
  for (const std::string& s : LeftToSax()) {
    EXPECT_FALSE(ScanStreamEvent(s).has_value()) << s;
    EXPECT_EQ(Describe(ParseStreamEvent(s)), Describe(ParseStreamEventSax(s))) << s;
  }
  // The fallback still decodes what it should.
  const Result<StreamEvent> error = ParseStreamEvent(LeftToSax()[7]);
  ASSERT_TRUE(error.ok() && error->error.has_value());
  EXPECT_EQ(error->error->message, "boom");
  EXPECT_TRUE(ParseStreamEvent("[DONE]")->done);
  EXPECT_FALSE(ParseStreamEvent(LeftToSax()[8]).ok());  // a duplicate read key
}

// Seeded random edits: byte flips, JSON-ish insertions, deletions, truncations.
TEST(StreamEventScannerTest, AgreesWithSaxOnMutations) {
  static constexpr std::string_view kAlphabet =
      "{}[]\":,\\ 0123456789-+.eEtrufalsn\x80\xC3\xFFtextdelta";
  const size_t answered = testing::CountAnsweredMutants(
      20261129, 30000, kAlphabet,
      [](Rng& rng) {
        const std::vector<std::string>& from = rng.Below(4) != 0 ? Valid() : LeftToSax();
        return from[rng.Below(from.size())];
      },
      [](const std::string& s) { return Agrees(s); });
  EXPECT_GT(answered, 2000u);
}

}  // namespace
}  // namespace hearsay::api::stream_event_scanner_test
