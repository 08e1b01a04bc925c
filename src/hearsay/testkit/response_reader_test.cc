#include "hearsay/testkit/response_reader.h"

#include <gtest/gtest.h>

#include <string>

namespace hearsay::testkit {
namespace {

// Feeds `text` one byte at a time, the hardest split.
Status FeedBytewise(ResponseReader& p, std::string_view text, std::string* body) {
  for (char c : text) {
    Status s = p.Feed(std::string_view(&c, 1));
    if (!s.ok()) return s;
    *body += p.TakeBody();
  }
  return OkStatus();
}

TEST(ResponseReaderTest, ContentLengthBody) {
  ResponseReader p;
  std::string body;
  ASSERT_TRUE(FeedBytewise(p,
                           "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                           "Content-Length: 7\r\n\r\n{\"a\":1}",
                           &body)
                  .ok());
  EXPECT_TRUE(p.complete());
  EXPECT_EQ(p.status_code(), 200);
  EXPECT_EQ(p.reason(), "OK");
  EXPECT_EQ(http::FindHeader(p.headers(), "CONTENT-type").value_or(""), "application/json");
  EXPECT_EQ(p.headers()[0].first, "content-type") << "names are lower case";
  EXPECT_EQ(body, "{\"a\":1}");
}

TEST(ResponseReaderTest, ChunkedBodyWithExtensionsAndTrailers) {
  ResponseReader p;
  std::string body;
  ASSERT_TRUE(FeedBytewise(p,
                           "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                           "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n",
                           &body)
                  .ok());
  EXPECT_TRUE(p.complete());
  EXPECT_EQ(body, "hello world");
}

TEST(ResponseReaderTest, HeadersAvailableBeforeBodyCompletes) {
  ResponseReader p;
  ASSERT_TRUE(p.Feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab").ok());
  EXPECT_TRUE(p.headers_done());
  EXPECT_FALSE(p.complete());
  EXPECT_EQ(p.TakeBody(), "ab");
  ASSERT_TRUE(p.Feed("c\r\n").ok());
  EXPECT_EQ(p.TakeBody(), "c");
  EXPECT_FALSE(p.complete());
  Status eof = p.FinishOnEof();
  EXPECT_EQ(eof.code(), StatusCode::kDataLoss) << eof.ToString();
}

TEST(ResponseReaderTest, HeadersAvailableWhileAChunkSizeIsIncomplete) {
  ResponseReader p;
  ASSERT_TRUE(p.Feed("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n3")
                  .ok());
  ASSERT_TRUE(p.headers_done());
  EXPECT_EQ(http::FindHeader(p.headers(), "content-type").value_or(""), "text/event-stream");
  ASSERT_TRUE(p.Feed("\r\nabc\r\n0\r\n\r\n").ok());
  EXPECT_TRUE(p.complete());
  EXPECT_EQ(p.TakeBody(), "abc");
}

TEST(ResponseReaderTest, CloseDelimitedBodyEndsAtEof) {
  ResponseReader p;
  ASSERT_TRUE(p.Feed("HTTP/1.0 200 OK\r\nServer: x\r\n\r\nsome body").ok());
  EXPECT_FALSE(p.complete());
  EXPECT_TRUE(p.FinishOnEof().ok());
  EXPECT_TRUE(p.complete());
  EXPECT_EQ(p.TakeBody(), "some body");
}

TEST(ResponseReaderTest, SkipsInterimResponsesAndEmptyBodies) {
  ResponseReader p;
  ASSERT_TRUE(p.Feed("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nX: y\r\n\r\n").ok());
  EXPECT_TRUE(p.complete());
  EXPECT_EQ(p.status_code(), 204);
  EXPECT_EQ(p.headers().size(), 1u);
  ResponseReader head(/*head_request=*/true);
  ASSERT_TRUE(head.Feed("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n").ok());
  EXPECT_TRUE(head.complete());
}

TEST(ResponseReaderTest, RejectsMalformedResponses) {
  for (const char* bad :
       {"HTTP/2 200 OK\r\n\r\n", "HTTP/1.1 2x0 OK\r\n\r\n",
        "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "HTTP/1.1 200 OK\nServer: x\n\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY\r\n"}) {
    ResponseReader p;
    Status s = p.Feed(bad);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << bad;
    EXPECT_FALSE(p.Feed("more").ok()) << "errors are final: " << bad;
  }
}

TEST(ResponseReaderTest, BoundsTheHeaderBlock) {
  ResponseReader p;
  ASSERT_TRUE(p.Feed("HTTP/1.1 200 OK\r\n").ok());
  const std::string big(ResponseReader::kMaxHeaderBytes + 1, 'a');
  EXPECT_EQ(p.Feed("X: " + big).code(), StatusCode::kDataLoss);
}

TEST(ResponseReaderTest, EofBeforeAnythingIsAnError) {
  ResponseReader p;
  Status s = p.FinishOnEof();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("before any response"), std::string::npos);
}

}  // namespace
}  // namespace hearsay::testkit
