// ParseHostPort and the header helpers.
#include "hearsay/http/host_port.h"

#include <gtest/gtest.h>

#include "hearsay/http/headers.h"

namespace hearsay::http {
namespace {

TEST(HostPortTest, ParsesNamesAddressesAndBracketedIpv6) {
  auto a = ParseHostPort("127.0.0.1:8080");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 8080);
  auto b = ParseHostPort("gpu-07.example:0");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "gpu-07.example");
  EXPECT_EQ(b->port, 0);
  auto c = ParseHostPort("[::1]:65535");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->host, "::1");
  EXPECT_EQ(c->port, 65535);
}

TEST(HostPortTest, RejectsMalformedInput) {
  for (const char* bad : {"", "host", "host:", ":80", "host:65536", "host:-1", "host:8x",
                          "host: 80", "::1:80", "[::1:80", "[]:80", "a]:80", "host:123456"}) {
    auto r = ParseHostPort(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(HeadersTest, LookupIgnoresCase) {
  Headers h = {{"Content-Type", "a"}, {"X-Two", "1"}, {"x-two", "2"}};
  EXPECT_EQ(FindHeader(h, "content-type"), "a");
  EXPECT_EQ(FindHeader(h, "X-TWO"), "1") << "the first of repeated names";
  EXPECT_FALSE(FindHeader(h, "missing").has_value());
  EXPECT_TRUE(EqualsIgnoreCase("Keep-Alive", "keep-alive"));
  EXPECT_FALSE(EqualsIgnoreCase("keep-alive", "keep-alivf"));
  EXPECT_EQ(ReasonPhrase(431), "Request Header Fields Too Large");
  EXPECT_EQ(ReasonPhrase(299), "Unknown");
}

}  // namespace
}  // namespace hearsay::http
