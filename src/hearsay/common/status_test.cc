#include "hearsay/common/status.h"

#include <gtest/gtest.h>

#include <memory>

namespace hearsay {
namespace {

Result<int> ParsePositive(int x) {
  if (x <= 0) return InvalidArgumentError("must be positive");
  return x;
}

Result<int> Doubled(int x) {
  HEARSAY_ASSIGN_OR_RETURN(int v, ParsePositive(x));
  return v * 2;
}

Status Validate(int x) {
  HEARSAY_RETURN_IF_ERROR(ParsePositive(x).status());
  return OkStatus();
}

TEST(StatusTest, OkByDefault) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  Status s = NotFoundError("no such peer: n3");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NOT_FOUND: no such peer: n3");
}

TEST(ResultTest, ValueAndErrorPropagate) {
  EXPECT_EQ(*Doubled(4), 8);
  Result<int> bad = Doubled(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.value_or(7), 7);
  EXPECT_TRUE(Validate(3).ok());
  EXPECT_EQ(Validate(0).code(), StatusCode::kInvalidArgument);
}

TEST(ResultTest, HoldsMoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(5);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 5);
}

TEST(ResultDeathTest, ValueOfErrorCrashes) {
  Result<int> bad = InvalidArgumentError("x");
  EXPECT_DEATH((void)bad.value(), "check failed");
}

TEST(ResultDeathTest, BuildingFromOkStatusCrashes) {
  EXPECT_DEATH({ Result<int> r{OkStatus()}; }, "OK Status");
}

}  // namespace
}  // namespace hearsay
