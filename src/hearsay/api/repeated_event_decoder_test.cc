// Tests of RepeatedEventDecoder through StreamEventDecoder (the entry node's decoder of a peer's
// events): it answers as ParseStreamEvent on every event, whatever came before, and answers the
// events that repeat their predecessor around a plain text without a scan. The upstream's
// instance has its own tests (upstream/chunk_stream_decoder_test.cc).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hearsay/api/openai_response.h"
#include "hearsay/api/stream_event_scanner.h"
#include "hearsay/env/rng.h"

namespace hearsay::api {
namespace {

std::string Describe(const Result<StreamEvent>& r) {
  if (!r.ok()) return "error: " + r.status().ToString();
  const StreamEvent& e = r.value();
  std::string usage = "-";
  if (e.usage) {
    usage = std::to_string(e.usage->prompt_tokens) + "/" +
            std::to_string(e.usage->completion_tokens) + "/" +
            std::to_string(e.usage->cached_tokens);
  }
  return "done=" + std::to_string(e.done) + " text=[" + e.delta_text + "] finish=[" +
         e.finish_reason + "] usage=" + usage + " error=" + (e.error ? e.error->message : "-");
}

// The data of a rendered event ("data: {...}\n\n").
std::string Data(const std::string& rendered) { return rendered.substr(6, rendered.size() - 8); }

uint64_t DecodeAndCompare(const std::vector<std::string>& events) {
  StreamEventDecoder decoder;
  for (const std::string& e : events) {
    EXPECT_EQ(Describe(decoder.Decode(e)), Describe(ParseStreamEvent(e))) << e;
  }
  return decoder.reused();
}

TEST(RepeatedEventDecoderTest, APeersRenderedTokenEventsAreAnsweredWithoutAScan) {
  for (Endpoint endpoint : {Endpoint::kCompletions, Endpoint::kChatCompletions}) {
    const ResponseMeta meta{endpoint, "cmpl-3-1", 1700000000, "m", "node-a"};
    std::vector<std::string> events = {Data(RenderChunk(meta, "", /*first=*/true))};
    for (int i = 0; i < 12; ++i) {
      events.push_back(Data(RenderChunk(meta, " word" + std::to_string(i), false)));
    }
    events.push_back(Data(RenderChunk(meta, " line\nbreak", false)));  // escaped: scanned
    events.push_back(Data(RenderChunk(meta, " after", false)));
    events.push_back(Data(RenderFinalChunk(meta, "length")));
    events.push_back(Data(RenderUsageChunk(meta, UsageCounts{40, 13, 32})));
    events.push_back("[DONE]");
    // The first event (a chat role delta, or an empty text) may differ; from the second token on
    // each repeats the one before, but the escaped one and those after an envelope change.
    EXPECT_GE(DecodeAndCompare(events), 11u) << static_cast<int>(endpoint);
  }
}

// Seeded random streams of hostile events around one envelope: texts with escapes, quotes,
// non-ASCII and control bytes, truncations and flipped bytes.
TEST(RepeatedEventDecoderTest, AgreesWithParseStreamEventOnRandomStreams) {
  Rng rng(1201);
  const std::vector<std::string> texts = {"",     " a",  " bb",  R"(\")", "\"",     "\xC3\xA9",
                                          "\x01", "\\",  "\"}]}", "]}",   " x y z", "\\u0042"};
  uint64_t reused = 0;
  for (int stream = 0; stream < 400; ++stream) {
    const bool chat = rng.Bernoulli(0.5);
    auto event = [&](const std::string& text) {
      const std::string field = chat ? R"("delta":{"content":")" + text + R"("})"
                                     : R"("text":")" + text + R"(")";
      return R"({"id":"p)" + std::to_string(stream) + R"(","choices":[{"index":0,)" + field +
             R"(,"finish_reason":null}]})";
    };
    std::vector<std::string> events;
    const int n = 1 + static_cast<int>(rng.Below(12));
    for (int i = 0; i < n; ++i) {
      std::string e = event(texts[rng.Below(texts.size())]);
      if (rng.Bernoulli(0.1)) e = e.substr(0, rng.Below(e.size()));
      if (rng.Bernoulli(0.1)) e[rng.Below(e.size())] = static_cast<char>(rng.Below(256));
      events.push_back(std::move(e));
    }
    reused += DecodeAndCompare(events);
  }
  EXPECT_GT(reused, 300u);
}

}  // namespace
}  // namespace hearsay::api
