#include "hearsay/api/sse_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hearsay::api {
namespace {

std::vector<std::string> FeedAll(SseParser& parser, const std::vector<std::string_view>& chunks) {
  std::vector<std::string> events;
  for (std::string_view chunk : chunks) {
    parser.Feed(chunk, [&](std::string_view data) { events.emplace_back(data); });
  }
  return events;
}

std::vector<std::string> Parse(std::string_view stream) {
  SseParser parser;
  return FeedAll(parser, {stream});
}

TEST(SseParserTest, DataLinesCommentsAndOtherFields) {
  EXPECT_EQ(Parse("data: one\n\ndata:two\n\n"), (std::vector<std::string>{"one", "two"}));
  // Only one leading space is removed.
  EXPECT_EQ(Parse("data:  x \n\n"), std::vector<std::string>{" x "});
  // Several data lines join with \n; comments, event, id, retry and unknown fields are ignored.
  EXPECT_EQ(Parse(": keep-alive\nevent: chunk\nid: 7\ndata: a\nretry: 10\ndata: b\nfoo\n\n"),
            std::vector<std::string>{"a\nb"});
  // A bare "data" line appends an empty line; "data:" alone gives an empty event.
  EXPECT_EQ(Parse("data\ndata: x\n\n"), std::vector<std::string>{"\nx"});
  EXPECT_EQ(Parse("data:\n\n"), std::vector<std::string>{""});
  // Blank lines without data dispatch nothing.
  EXPECT_EQ(Parse("\n\n: c\n\nevent: x\n\n"), std::vector<std::string>{});
  // Colons after the first belong to the value.
  EXPECT_EQ(Parse("data: {\"a\":\"b:c\"}\n\n"), std::vector<std::string>{"{\"a\":\"b:c\"}"});
}

TEST(SseParserTest, LineEndings) {
  EXPECT_EQ(Parse("data: a\r\n\r\ndata: b\r\rdata: c\n\n"),
            (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(Parse("data: a\r\ndata: b\r\n\r\n"), std::vector<std::string>{"a\nb"});
}

TEST(SseParserTest, UnterminatedEventIsNotDispatched) {
  SseParser parser;
  EXPECT_EQ(FeedAll(parser, {"data: done\n\ndata: partial\n"}), std::vector<std::string>{"done"});
  EXPECT_FALSE(parser.idle());
  SseParser clean;
  FeedAll(clean, {"data: x\n\n"});
  EXPECT_TRUE(clean.idle());
  EXPECT_TRUE(clean.ok());
}

TEST(SseParserTest, BomIsSkippedOnlyAtTheStart) {
  EXPECT_EQ(Parse("\xEF\xBB\xBF"
                  "data: a\n\n"),
            std::vector<std::string>{"a"});
  // A BOM split across feeds.
  SseParser parser;
  EXPECT_EQ(FeedAll(parser, {"\xEF", "\xBB",
                             "\xBF"
                             "data: a\n\n"}),
            std::vector<std::string>{"a"});
  // Not a BOM: the bytes are kept as content of the (unknown) field, which is ignored.
  EXPECT_EQ(Parse("\xEF"
                  "data: a\n\ndata: b\n\n"),
            std::vector<std::string>{"b"});
  // A second BOM is content: its line's field name is not "data".
  EXPECT_EQ(Parse("\xEF\xBB\xBF\xEF\xBB\xBF"
                  "data: a\n\n"),
            std::vector<std::string>{});
}

// A stream in all its line-end styles, split into two and three chunks at every byte boundary.
TEST(SseParserTest, ChunkBoundariesAnywhere) {
  const std::string stream =
      "\xEF\xBB\xBF: hello\r\ndata: {\"x\":1}\r\n\r\ndata: first\rdata: second\r\r"
      "event: e\ndata:\xE6\x97\xA5\n\ndata: [DONE]\n\n";
  const std::vector<std::string> expected = {"{\"x\":1}", "first\nsecond", "\xE6\x97\xA5",
                                             "[DONE]"};
  ASSERT_EQ(Parse(stream), expected);
  const std::string_view s = stream;
  for (size_t a = 0; a <= s.size(); ++a) {
    SseParser parser;
    ASSERT_EQ(FeedAll(parser, {s.substr(0, a), s.substr(a)}), expected) << "split at " << a;
    for (size_t b = a; b <= s.size(); b += 3) {
      SseParser p3;
      ASSERT_EQ(FeedAll(p3, {s.substr(0, a), s.substr(a, b - a), s.substr(b)}), expected)
          << "split at " << a << ", " << b;
    }
  }
  // One byte at a time.
  SseParser bytewise;
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < s.size(); ++i) bytes.push_back(s.substr(i, 1));
  EXPECT_EQ(FeedAll(bytewise, bytes), expected);
}

// One data line and a blank one are dispatched straight from the input when both are in one
// Feed(); every line ending, empty values and events split anywhere must give the same events.
TEST(SseParserTest, SingleLineEventsAnySplit) {
  const std::string stream =
      "data: a\r\rdata: b\r\n\ndata:\n\ndata\n\ndata: c\r\n\r\ndata:d\n\r\n"
      "data: e\ndata: f\n\n:c\n\ndata: g\r";
  const std::vector<std::string> expected = {"a", "b", "", "", "c", "d", "e\nf"};
  ASSERT_EQ(Parse(stream + "\n"), expected);
  const std::string_view s = stream;
  for (size_t a = 0; a <= s.size(); ++a) {
    SseParser parser;
    ASSERT_EQ(FeedAll(parser, {s.substr(0, a), s.substr(a), "\n"}), expected) << "split at " << a;
    // The CR that ended the last buffer and the LF that starts this one are one line end: "g"
    // waits for a blank line.
    ASSERT_EQ(FeedAll(parser, {"\n"}), std::vector<std::string>{"g"}) << "split at " << a;
  }
}

TEST(SseParserTest, OversizeEventEntersTheErrorState) {
  SseParser parser(16);
  std::vector<std::string> events;
  const auto on = [&](std::string_view d) { events.emplace_back(d); };
  parser.Feed("data: 0123456789\n\n", on);  // 10 data bytes + '\n': fits
  EXPECT_TRUE(parser.ok());
  parser.Feed("data: 0123456789\ndata: 0123456789\n\n", on);  // 22 bytes of data: too big
  EXPECT_FALSE(parser.ok());
  EXPECT_EQ(parser.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(parser.status().message().find("16 bytes"), std::string::npos);
  parser.Feed("data: x\n\n", on);  // ignored from now on
  EXPECT_EQ(events, std::vector<std::string>{"0123456789"});

  // A line that never ends is bounded too, fed in small pieces.
  SseParser lines(64);
  for (int i = 0; i < 100 && lines.ok(); ++i) lines.Feed("xxxxxxxx", on);
  EXPECT_EQ(lines.status().code(), StatusCode::kResourceExhausted);
}

TEST(ParseStreamEventTest, DecodesChunksOfBothEndpoints) {
  auto chat = ParseStreamEvent(
      R"({"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]})");
  ASSERT_TRUE(chat.ok());
  EXPECT_EQ(chat->delta_text, "Hi");
  auto role_only = ParseStreamEvent(R"({"choices":[{"delta":{"role":"assistant"}}]})");
  ASSERT_TRUE(role_only.ok());
  EXPECT_EQ(role_only->delta_text, "");
  auto text = ParseStreamEvent(
      R"({"object":"text_completion","choices":[{"text":" yes","finish_reason":"stop"}],"usage":null})");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->delta_text, " yes");
  EXPECT_EQ(text->finish_reason, "stop");
  EXPECT_FALSE(text->usage.has_value());
  // vLLM-style usage without details.
  auto usage = ParseStreamEvent(
      R"({"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}})");
  ASSERT_TRUE(usage.ok());
  EXPECT_EQ(usage->usage, (UsageCounts{5, 2, 0}));
  auto err = ParseStreamEvent(R"({"error":{"message":"oops","code":500}})");
  ASSERT_TRUE(err.ok());
  ASSERT_TRUE(err->error.has_value());
  EXPECT_EQ(err->error->message, "oops");
  EXPECT_EQ(err->error->code, "500");
  EXPECT_EQ(err->error->type, "server_error");
}

TEST(ParseStreamEventTest, KeyOrderAndUnreadMembersDoNotMatter) {
  // The error wins wherever it appears; unknown members (even nested ones) are skipped.
  auto err = ParseStreamEvent(
      R"({"choices":[{"text":"a"}],"x":{"choices":[1],"usage":[]},"error":{"code":-3,"param":null}})");
  ASSERT_TRUE(err.ok()) << err.status().ToString();
  ASSERT_TRUE(err->error.has_value());
  EXPECT_EQ(err->error->code, "-3");
  EXPECT_EQ(err->error->http_status, 500);
  EXPECT_EQ(err->error->message, "the serving node reported an error");
  // Only the first choice counts; later ones may be anything.
  auto first = ParseStreamEvent(
      R"({"usage":{"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":2}},)"
      R"("choices":[{"finish_reason":"stop","logprobs":{"a":[1,2]},"delta":{"content":"x","tool_calls":[]}},7,"z"]})");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->delta_text, "x");
  EXPECT_EQ(first->finish_reason, "stop");
  EXPECT_EQ(first->usage, (UsageCounts{0, 3, 2}));
  // With a delta, a stray "text" member is not read.
  auto delta = ParseStreamEvent(R"({"choices":[{"text":5,"delta":{"content":"d"}}]})");
  ASSERT_TRUE(delta.ok());
  EXPECT_EQ(delta->delta_text, "d");
  // Escapes decode.
  auto esc = ParseStreamEvent(R"({"choices":[{"text":"\u00e9\n\"\ud83d\ude00"}]})");
  ASSERT_TRUE(esc.ok());
  EXPECT_EQ(esc->delta_text, "\xC3\xA9\n\"\xF0\x9F\x98\x80");
}

TEST(ParseStreamEventTest, RefusesDuplicateReadKeysAndDeepNesting) {
  for (std::string_view bad :
       {R"({"choices":[{"text":"a","text":"b"}]})", R"({"error":null,"error":{}})",
        R"({"choices":[],"choices":[]})", R"({"usage":{"prompt_tokens":1,"prompt_tokens":2}})"}) {
    const auto r = ParseStreamEvent(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("duplicate key"), std::string::npos) << bad;
  }
  // Duplicates of keys nobody reads are fine.
  EXPECT_TRUE(ParseStreamEvent(R"({"id":1,"id":2,"choices":[]})").ok());
  std::string deep = R"({"choices":[],"x":)";
  deep.append(100000, '[');
  deep.append(100000, ']');
  deep.push_back('}');
  const auto r = ParseStreamEvent(deep);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nested too deep"), std::string::npos);
}

TEST(ParseStreamEventTest, RejectsWhatIsNotAnEvent) {
  for (std::string_view bad :
       {"", "[DONE", "{", "[]", "42", R"({"id":"x"})", R"({"choices":{}})", R"({"choices":[5]})",
        R"({"choices":[{"text":5}]})", R"({"choices":[{"delta":{"content":1}}]})",
        R"({"choices":[{"delta":[]}]})", R"({"choices":[{"text":"a","finish_reason":3}]})",
        R"({"usage":{"prompt_tokens":-1}})", R"({"usage":{"prompt_tokens":4294967296}})",
        R"({"usage":{"prompt_tokens":1.5}})", R"({"usage":[]})",
        R"({"usage":{"prompt_tokens_details":7}})", R"({"error":"x"})",
        R"({"error":{"message":7}})"}) {
    const auto r = ParseStreamEvent(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    }
  }
}

}  // namespace
}  // namespace hearsay::api
