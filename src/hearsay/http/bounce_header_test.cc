#include "hearsay/http/bounce_header.h"

#include <gtest/gtest.h>

namespace hearsay::http {
namespace {

TEST(BounceHeaderTest, RoundTripsAtMicrosecondPrecision) {
  EXPECT_EQ(FormatBounceAboveMs(12.3456), "12.346");
  EXPECT_DOUBLE_EQ(ParseBounceAboveMs(FormatBounceAboveMs(12.3456)).value(), 12.346);
  EXPECT_DOUBLE_EQ(ParseBounceAboveMs("7").value(), 7.0);
}

TEST(BounceHeaderTest, RejectsAnythingButAPlainPositiveDecimal) {
  for (std::string_view bad : {"", ".", "-1", "+1", "1e3", "0", "0.000", "1.2.3", " 1", "1 ", "nan",
                               "inf", "0x10", "1000000000", "123456789012345678901234567890123"}) {
    EXPECT_FALSE(ParseBounceAboveMs(bad).has_value()) << bad;
  }
  EXPECT_EQ(FormatBounceAboveMs(-3), "0.000");  // which a receiver then ignores
}

// Found by bounce_header_fuzz: a value just under the parser's bound used to round up to it.
TEST(BounceHeaderTest, AValueJustUnderTheBoundStillParsesBack) {
  for (double ms : {999999999.99999, 999999999.9996, 5e9}) {
    const std::optional<double> back = ParseBounceAboveMs(FormatBounceAboveMs(ms));
    ASSERT_TRUE(back.has_value()) << FormatBounceAboveMs(ms);
    EXPECT_GT(*back, 999999999.0);
  }
}

}  // namespace
}  // namespace hearsay::http
