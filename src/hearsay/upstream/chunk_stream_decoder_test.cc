// Tests of ChunkStreamDecoder: it answers exactly as ParseUpstreamChunk on every event of a
// stream, whatever came before, and answers the events that repeat their predecessor around a
// plain text without a scan.
#include "hearsay/upstream/chunk_stream_decoder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hearsay/env/rng.h"
#include "hearsay/upstream/upstream_response.h"

namespace hearsay::upstream {
namespace {

std::string Describe(const Result<UpstreamChunk>& r) {
  if (!r.ok()) return "error: " + r.status().ToString();
  const UpstreamChunk& c = r.value();
  auto opt = [](const auto& o) { return o ? std::to_string(*o) : std::string("-"); };
  return "done=" + std::to_string(c.done) + " text=[" + c.text + "] finish=[" + c.finish_reason +
         "] prompt=" + opt(c.prompt_tokens) + " completion=" + opt(c.completion_tokens) +
         " cached=" + opt(c.cached_tokens) + " computed=" + opt(c.prompt_computed_tokens) +
         " ms=" + opt(c.prompt_ms) + " error=" + (c.error ? *c.error : "-");
}

std::string Completion(std::string_view text) {
  return R"({"id":"cmpl-7","object":"text_completion","created":1700000000,"model":"m",)"
         R"("choices":[{"index":0,"text":")" +
         std::string(text) + R"(","logprobs":null,"finish_reason":null,"stop_reason":null}]})";
}

std::string Chat(std::string_view content) {
  return R"({"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"m",)"
         R"("choices":[{"index":0,"delta":{"content":")" +
         std::string(content) + R"("},"finish_reason":null}]})";
}

// Decodes `events` in order with one decoder, checking each against ParseUpstreamChunk.
uint64_t DecodeAndCompare(const std::vector<std::string>& events) {
  ChunkStreamDecoder decoder;
  for (const std::string& e : events) {
    EXPECT_EQ(Describe(decoder.Decode(e)), Describe(ParseUpstreamChunk(e))) << e;
  }
  return decoder.reused();
}

TEST(ChunkStreamDecoderTest, TokenEventsOfOneEnvelopeAreAnsweredWithoutAScan) {
  std::vector<std::string> events;
  for (int i = 0; i < 16; ++i) events.push_back(Completion(" token" + std::to_string(i)));
  events.push_back(Completion(""));  // an empty text repeats the envelope too
  EXPECT_EQ(DecodeAndCompare(events), 16u);

  ChunkStreamDecoder decoder;
  ASSERT_TRUE(decoder.Decode(Completion(" first")).ok());
  Result<UpstreamChunk> second = decoder.Decode(Completion(" a longer second text"));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second.value().text, " a longer second text");
  EXPECT_EQ(decoder.reused(), 1u);
}

TEST(ChunkStreamDecoderTest, ChatStreamsReuseFromTheFirstContentEvent) {
  const std::string role =
      R"({"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"m",)"
      R"("choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]})";
  std::vector<std::string> events = {role};
  for (int i = 0; i < 8; ++i) events.push_back(Chat(" w" + std::to_string(i)));
  // The role event's envelope differs; the first content event is scanned, the next 7 are not.
  EXPECT_EQ(DecodeAndCompare(events), 7u);
}

TEST(ChunkStreamDecoderTest, AnythingBeyondAPlainTextIsScannedAgain) {
  const std::vector<std::string> events = {
      Completion(" plain"),
      Completion(R"( escaped \"quote\")"),  // escapes: the text is not the bytes
      Completion(" caf\xC3\xA9"),           // non-ASCII
      Completion(" tab\there"),             // a raw control character: invalid JSON
      Completion(" plain again"),
      // Another field changes: finish_reason set, usage added.
      R"({"id":"cmpl-7","object":"text_completion","created":1700000000,"model":"m",)"
      R"("choices":[{"index":0,"text":" end","logprobs":null,"finish_reason":"length","stop_reason":null}]})",
      R"({"id":"cmpl-7","object":"text_completion","created":1700000000,"model":"m",)"
      R"("choices":[{"index":0,"text":" end","logprobs":null,"finish_reason":null,"stop_reason":null}]},)"
      R"("usage":{"prompt_tokens":5,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":3}}})",
      // The kept envelope, truncated, or with bytes after it.
      Completion(" x").substr(0, Completion(" x").size() - 2),
      Completion(" x") + "}",
      Completion(" x") + " ",
      "[DONE]",
      Completion(" last"),
  };
  // Only " plain again" is answered from the kept event (" caf\xC3\xA9", the last one scanned
  // whose text had no escapes); after it, each event's tail differs from the kept one's.
  EXPECT_EQ(DecodeAndCompare(events), 1u);
}

// A text that ends with what looks like the kept tail: the plain run stops at the first quote, so
// a tail that only matches further on is never taken.
TEST(ChunkStreamDecoderTest, AQuoteInsideTheTextEndsThePlainRun) {
  const std::string kept = R"({"choices":[{"text":"a"}],"x":1})";
  const std::string forged = R"({"choices":[{"text":"b"}],"y":"\"}],"x":1})";
  ChunkStreamDecoder decoder;
  ASSERT_TRUE(decoder.Decode(kept).ok());
  EXPECT_EQ(Describe(decoder.Decode(forged)), Describe(ParseUpstreamChunk(forged)));
  EXPECT_EQ(decoder.reused(), 0u);
}

// Seeded random streams: envelopes in random member order with random extra fields, texts drawn
// from plain, escaped, non-ASCII and hostile strings, envelope changes and broken events mixed in.
TEST(ChunkStreamDecoderTest, AgreesWithParseUpstreamChunkOnRandomStreams) {
  Rng rng(20261201);
  const std::vector<std::string> texts = {
      "",        " the", " token42", "x",        R"(\"q\")", "\\n",  "\xC3\xA9", "\xFF",
      "a\"b",    "\"}]}", "\t",       " a b c d", "\\u0041", "]}",   "\\",       " ok"};
  const std::vector<std::string> extras = {
      "", R"(,"usage":null)", R"(,"system_fingerprint":"fp")",
      R"(,"usage":{"prompt_tokens":9,"completion_tokens":1})",
      R"(,"timings":{"cache_n":4,"prompt_n":5,"prompt_ms":1.5})"};
  uint64_t reused = 0;
  for (int stream = 0; stream < 400; ++stream) {
    const bool chat = rng.Bernoulli(0.5);
    const std::string extra = extras[rng.Below(extras.size())];
    const bool text_first = rng.Bernoulli(0.5);
    auto event = [&](const std::string& text) {
      const std::string field = chat ? R"("delta":{"content":")" + text + R"("})"
                                     : R"("text":")" + text + R"(")";
      const std::string choice = text_first ? "{" + field + R"(,"index":0,"finish_reason":null})"
                                            : R"({"index":0,"finish_reason":null,)" + field + "}";
      return R"({"id":"s)" + std::to_string(stream) + R"(","choices":[)" + choice + "]" + extra +
             "}";
    };
    std::vector<std::string> events;
    const int n = 1 + static_cast<int>(rng.Below(12));
    for (int i = 0; i < n; ++i) {
      std::string e = event(texts[rng.Below(texts.size())]);
      switch (rng.Below(10)) {
        case 0:
          e = e.substr(0, rng.Below(e.size()));  // truncated
          break;
        case 1:
          e[rng.Below(e.size())] = static_cast<char>(rng.Below(256));  // one byte flipped
          break;
        case 2:
          e = "[DONE]";
          break;
        default:
          break;
      }
      events.push_back(std::move(e));
    }
    reused += DecodeAndCompare(events);
  }
  EXPECT_GT(reused, 300u);  // the plain streams do take the shortcut
}

}  // namespace
}  // namespace hearsay::upstream
