#include "hearsay/harness/sse_parser.h"

#include <gtest/gtest.h>

namespace hearsay::harness {
namespace {

TEST(SseParserTest, ParsesOpenAiStyleStreamInAnySplit) {
  const std::string stream =
      "data: {\"a\":1}\n\n: keep-alive comment\n\ndata: {\"b\":2}\r\n\r\nevent: end\ndata: "
      "[DONE]\n\n";
  for (size_t split = 0; split <= stream.size(); ++split) {
    SseParser p;
    std::vector<SseEvent> events;
    ASSERT_TRUE(p.Feed(std::string_view(stream).substr(0, split), &events).ok());
    ASSERT_TRUE(p.Feed(std::string_view(stream).substr(split), &events).ok());
    ASSERT_EQ(events.size(), 3u) << "split at " << split;
    EXPECT_EQ(events[0].data, "{\"a\":1}");
    EXPECT_EQ(events[1].data, "{\"b\":2}");
    EXPECT_EQ(events[2].event, "end");
    EXPECT_EQ(events[2].data, "[DONE]");
    EXPECT_FALSE(p.has_partial_event());
  }
}

TEST(SseParserTest, JoinsDataLinesAndHandlesBareCr) {
  SseParser p;
  std::vector<SseEvent> events;
  ASSERT_TRUE(p.Feed("data:one\rdata:  two\r\rid: 7\nretry: 5\nunknown\n\n", &events).ok());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "one\n two");
}

TEST(SseParserTest, ReportsAnUnfinishedEvent) {
  SseParser p;
  std::vector<SseEvent> events;
  ASSERT_TRUE(p.Feed("data: {\"partial\"", &events).ok());
  EXPECT_TRUE(events.empty());
  EXPECT_TRUE(p.has_partial_event());
  ASSERT_TRUE(p.Feed("}\n", &events).ok());
  EXPECT_TRUE(p.has_partial_event()) << "no blank line yet";
}

TEST(SseParserTest, BoundsLineLength) {
  SseParser p;
  std::vector<SseEvent> events;
  const std::string huge(SseParser::kMaxLineBytes + 1, 'x');
  EXPECT_EQ(p.Feed(huge, &events).code(), StatusCode::kResourceExhausted);
  EXPECT_FALSE(p.Feed("\n\n", &events).ok());
}

}  // namespace
}  // namespace hearsay::harness
