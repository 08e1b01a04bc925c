#include "hearsay/net/completion_sink.h"

#include <gtest/gtest.h>

namespace hearsay::net {
namespace {

TEST(RedactAddressesTest, RedactsHostsAndPortsAndKeepsTheRest) {
  EXPECT_EQ(RedactAddresses("upstream engine: connection to 127.0.0.1:8081 refused"),
            "upstream engine: connection to <address> refused");
  EXPECT_EQ(RedactAddresses("forward to [::1]:9000: timeout"), "forward to <address>: timeout");
  EXPECT_EQ(RedactAddresses("peer gpu3.internal:8000 failed; peer localhost:80 too"),
            "peer <address> failed; peer <address> too");
  EXPECT_EQ(RedactAddresses("upstream engine answered HTTP 503: kv cache exploded"),
            "upstream engine answered HTTP 503: kv cache exploded");
  EXPECT_EQ(RedactAddresses("no answer within 1500 ms"), "no answer within 1500 ms");
  EXPECT_EQ(RedactAddresses("time 12:30:45.5"), "time 12:30:45.5");
  EXPECT_EQ(RedactAddresses(""), "");
}

TEST(RedactAddressesTest, ClientFacingKeepsTheCode) {
  const Status s = ClientFacing(UnavailableError("connection to 10.1.2.3:8081 refused"));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "connection to <address> refused");
}

}  // namespace
}  // namespace hearsay::net
