#include "hearsay/loadgen/stream_recorder.h"

#include <gtest/gtest.h>

#include <string>

namespace hearsay::loadgen {
namespace {

using std::chrono::milliseconds;

constexpr std::string_view kRoleOnly =
    R"(data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]})"
    "\n\n";

std::string Chunk(std::string_view text) {
  return std::string(
             R"(data: {"id":"c","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":")") +
         std::string(text) + R"(","finish_reason":null}]})" + "\n\n";
}

std::string Usage(int prompt, int cached, int completion) {
  return R"(data: {"id":"c","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":)" +
         std::to_string(prompt) + R"(,"completion_tokens":)" + std::to_string(completion) +
         R"(,"total_tokens":)" + std::to_string(prompt + completion) +
         R"(,"prompt_tokens_details":{"cached_tokens":)" + std::to_string(cached) + "}}}\n\n";
}

constexpr std::string_view kDone = "data: [DONE]\n\n";

TEST(StreamRecorderTest, MeasuresTtftItlAndUsage) {
  StreamRecorder rec(7, 2, milliseconds(100));
  rec.OnHeaders(200, false);
  rec.OnBody(Chunk(" one"), milliseconds(130));
  rec.OnBody(Chunk(" two"), milliseconds(140));
  rec.OnBody(Chunk(" three") + Usage(50, 32, 3), milliseconds(165));
  rec.OnBody(kDone, milliseconds(166));
  const RequestResult r = rec.Finish(OkStatus(), milliseconds(170));
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.id, 7u);
  EXPECT_EQ(r.target, 2u);
  EXPECT_EQ(r.ttft, milliseconds(30));
  ASSERT_EQ(r.itl.size(), 2u);
  EXPECT_EQ(r.itl[0], milliseconds(10));
  EXPECT_EQ(r.itl[1], milliseconds(25));
  EXPECT_EQ(r.e2e, milliseconds(70));
  EXPECT_TRUE(r.has_usage);
  EXPECT_EQ(r.prompt_tokens, 50u);
  EXPECT_EQ(r.cached_tokens, 32u);
  EXPECT_EQ(r.completion_tokens, 3u);
}

TEST(StreamRecorderTest, RoleOnlyDeltaIsNotTheFirstToken) {
  StreamRecorder rec(0, 0, milliseconds(0));
  rec.OnHeaders(200, false);
  rec.OnBody(kRoleOnly, milliseconds(5));
  rec.OnBody(Chunk(" hi"), milliseconds(20));
  rec.OnBody(std::string(kDone), milliseconds(21));
  const RequestResult r = rec.Finish(OkStatus(), milliseconds(21));
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.ttft, milliseconds(20));
  EXPECT_FALSE(r.has_usage);
}

TEST(StreamRecorderTest, EventsSplitAcrossChunksAreReassembled) {
  const std::string body = Chunk(" a") + Usage(4, 0, 1) + std::string(kDone);
  StreamRecorder rec(0, 0, milliseconds(0));
  rec.OnHeaders(200, false);
  for (size_t i = 0; i < body.size(); ++i) rec.OnBody(body.substr(i, 1), milliseconds(10 + i));
  const RequestResult r = rec.Finish(OkStatus(), milliseconds(10000));
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.prompt_tokens, 4u);
  // The first content event completes at its blank line, well after its first byte.
  ASSERT_TRUE(r.ttft.has_value());
  EXPECT_GT(*r.ttft, milliseconds(10));
}

TEST(StreamRecorderTest, HttpErrorKeepsStatusAndBody) {
  StreamRecorder rec(0, 0, milliseconds(0));
  rec.OnHeaders(429, true);
  rec.OnBody(R"({"error":{"message":"too many requests"}})", milliseconds(1));
  const RequestResult r = rec.Finish(OkStatus(), milliseconds(2));
  EXPECT_EQ(r.error, ErrorKind::kHttpStatus);
  EXPECT_EQ(r.http_status, 429);
  EXPECT_NE(r.error_message.find("too many requests"), std::string::npos);
  EXPECT_FALSE(r.ttft.has_value());
  EXPECT_EQ(ErrorKindName(r.error, r.http_status), "http_429");
}

TEST(StreamRecorderTest, ErrorEventFailsTheStream) {
  StreamRecorder rec(0, 0, milliseconds(0));
  rec.OnHeaders(200, false);
  rec.OnBody(Chunk(" a"), milliseconds(1));
  rec.OnBody(
      R"(data: {"error":{"message":"peer went away","type":"server_error","param":null,"code":null}})"
      "\n\n",
      milliseconds(2));
  rec.OnBody(kDone, milliseconds(3));
  const RequestResult r = rec.Finish(OkStatus(), milliseconds(3));
  EXPECT_EQ(r.error, ErrorKind::kStream);
  EXPECT_NE(r.error_message.find("peer went away"), std::string::npos);
  EXPECT_TRUE(r.itl.empty());
}

TEST(StreamRecorderTest, StreamWithoutDoneIsAFailure) {
  StreamRecorder rec(0, 0, milliseconds(0));
  rec.OnHeaders(200, false);
  rec.OnBody(Chunk(" a"), milliseconds(1));
  EXPECT_EQ(rec.Finish(OkStatus(), milliseconds(2)).error, ErrorKind::kStream);
}

TEST(StreamRecorderTest, GarbageIsAProtocolError) {
  StreamRecorder rec(0, 0, milliseconds(0));
  rec.OnHeaders(200, false);
  rec.OnBody("data: {not json\n\n", milliseconds(1));
  rec.OnBody(kDone, milliseconds(2));
  EXPECT_EQ(rec.Finish(OkStatus(), milliseconds(2)).error, ErrorKind::kProtocol);
}

TEST(StreamRecorderTest, TransportErrorsAreClassified) {
  {
    StreamRecorder rec(0, 0, milliseconds(0));
    EXPECT_EQ(rec.Finish(Status(StatusCode::kUnavailable, "refused"), milliseconds(1)).error,
              ErrorKind::kConnect);
  }
  {
    StreamRecorder rec(0, 0, milliseconds(0));
    EXPECT_EQ(rec.Finish(Status(StatusCode::kDeadlineExceeded, "slow"), milliseconds(1)).error,
              ErrorKind::kTimeout);
  }
  {
    StreamRecorder rec(0, 0, milliseconds(0));
    rec.OnHeaders(200, false);
    rec.OnBody(Chunk(" a"), milliseconds(1));
    EXPECT_EQ(rec.Finish(Status(StatusCode::kUnavailable, "reset"), milliseconds(2)).error,
              ErrorKind::kStream);
  }
  {
    StreamRecorder rec(0, 0, milliseconds(0));
    EXPECT_EQ(rec.Finish(Status(StatusCode::kAborted, "stop"), milliseconds(1)).error,
              ErrorKind::kCancelled);
  }
}

TEST(StreamRecorderTest, AcceptsANonStreamingJsonBody) {
  StreamRecorder rec(0, 0, milliseconds(10));
  rec.OnHeaders(200, true);
  rec.OnBody(R"({"object":"text_completion","choices":[{"text":"x"}],)", milliseconds(40));
  rec.OnBody(
      R"("usage":{"prompt_tokens":9,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":8}}})",
      milliseconds(41));
  const RequestResult r = rec.Finish(OkStatus(), milliseconds(50));
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.ttft, milliseconds(40));
  EXPECT_EQ(r.prompt_tokens, 9u);
  EXPECT_EQ(r.cached_tokens, 8u);
}

}  // namespace
}  // namespace hearsay::loadgen
