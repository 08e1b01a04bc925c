#include "hearsay/http/peer_auth_header.h"

#include <gtest/gtest.h>

#include <string>

namespace hearsay::http {
namespace {

const std::string kNonce = "000102030405060708090a0b0c0d0e0f";
const std::string kMac = "f0e1d2c3b4a5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff";

TEST(PeerAuthHeaderTest, ParsesAndFormatsTheCanonicalForm) {
  const std::string text = "1700000000000." + kNonce + "." + kMac;
  const std::optional<PeerAuthValue> v = ParsePeerAuth(text);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->ts_ms, 1'700'000'000'000);
  EXPECT_EQ(v->nonce[0], 0x00);
  EXPECT_EQ(v->nonce[15], 0x0f);
  EXPECT_EQ(v->mac[0], 0xf0);
  EXPECT_EQ(v->mac[31], 0xff);
  EXPECT_EQ(FormatPeerAuth(*v), text);
  // The extremes of the timestamp.
  for (const char* ts : {"0", "9223372036854775807"}) {
    const std::string t = std::string(ts) + "." + kNonce + "." + kMac;
    ASSERT_TRUE(ParsePeerAuth(t).has_value()) << ts;
    EXPECT_EQ(FormatPeerAuth(*ParsePeerAuth(t)), t);
  }
  EXPECT_EQ(FormatPeerAuth(PeerAuthValue{INT64_MAX, {}, {}}).size(), kMaxPeerAuthChars);
}

TEST(PeerAuthHeaderTest, RefusesEveryNonCanonicalOrOverLongValue) {
  const std::string upper_mac = "F0E1D2C3B4A5968778695A4B3C2D1E0F00112233445566778899AABBCCDDEEFF";
  for (const std::string& bad : {
           std::string(""),
           "1700000000000." + kNonce,                           // no MAC
           "1700000000000." + kNonce + "." + kMac + ".",        // a fourth part
           "1700000000000." + kNonce + "." + kMac + "0",        // a long MAC
           "1700000000000." + kNonce + "." + kMac.substr(1),    // a short MAC
           "1700000000000." + kNonce + "0." + kMac.substr(1),   // the dot moved
           "1700000000000." + kNonce + "." + upper_mac,         // upper-case hex
           "01700000000000." + kNonce + "." + kMac,             // a leading zero
           "-1." + kNonce + "." + kMac,                         // a sign
           "+1." + kNonce + "." + kMac,                         //
           " 1." + kNonce + "." + kMac,                         // a space
           "." + kNonce + "." + kMac,                           // no timestamp
           "9223372036854775808." + kNonce + "." + kMac,        // over INT64_MAX
           "99999999999999999999." + kNonce + "." + kMac,       // 20 digits
           std::string(4096, '1') + "." + kNonce + "." + kMac,  // far over the length
       }) {
    EXPECT_FALSE(ParsePeerAuth(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace hearsay::http
