#include "hearsay/api/request_budget.h"

#include <gtest/gtest.h>

#include <string>

#include "hearsay/api/hostile_json_test_util.h"
#include "hearsay/api/json_scanner.h"
#include "hearsay/api/openai_request.h"

namespace hearsay::api {
namespace {

using testing::Body;
using testing::kShapes;
using testing::LargestFitting;
using testing::ManyKeys;
using testing::Shape;
using testing::WideArray;

constexpr size_t kBodyLimit = testing::kDefaultBodyLimit;

std::string Wrap(std::string_view value) { return testing::Wrap("m", value); }

// The scanner's work on `body` with repeated keys refused (as ScanRequest reads it): bytes
// passed plus key comparisons.
size_t ScannerWork(const std::string& body) {
  JsonScanner s(body);
  s.RefuseDuplicateKeys();
  s.Skip(1);
  return s.offset() + s.key_comparisons();
}

// The work per byte of input, for every shape at sizes doubling from 1/64 of the body limit up to
// it. The budget's pass (bytes read plus SAX events) is linear: the same per byte at every size,
// within 25%. The scanner is linear but for its repeated-key check (sorting, n log n): a few
// operations per byte, growing by at most 25% per doubling (quadratic work would double).
TEST(RequestBudgetTest, WorkPerByteStaysBoundedForEveryShapeUpToTheBodyLimit) {
  const Budget unlimited{SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX};
  for (const Shape& shape : kShapes) {
    SCOPED_TRACE(shape.name);
    const size_t largest = LargestFitting(shape, kBodyLimit);
    ASSERT_GE(Body(shape, largest).size(), kBodyLimit / 4);
    double budget_per_byte_smallest = 0, scanner_per_byte_before = 0;
    for (size_t n = largest / 64 > 0 ? largest / 64 : 1; n <= largest; n *= 2) {
      const std::string body = Body(shape, n);
      ASSERT_LE(body.size(), kBodyLimit);
      const double size = static_cast<double>(body.size());
      // The budget's pass reads each byte at most once and delivers at most one event per byte.
      const JsonShape measured = MeasureJson(body, unlimited);
      EXPECT_LE(measured.steps, body.size());
      EXPECT_LE(measured.events, measured.steps);
      const double budget_per_byte = static_cast<double>(measured.steps + measured.events) / size;
      if (budget_per_byte_smallest == 0) budget_per_byte_smallest = budget_per_byte;
      EXPECT_LE(budget_per_byte, 1.25 * budget_per_byte_smallest) << body.size() << " bytes";
      const size_t scanner = ScannerWork(body);
      EXPECT_LE(scanner, 8 * body.size()) << scanner << " operations for " << body.size();
      const double scanner_per_byte = static_cast<double>(scanner) / size;
      if (scanner_per_byte_before > 0) {
        EXPECT_LE(scanner_per_byte, 1.25 * scanner_per_byte_before) << body.size() << " bytes";
      }
      scanner_per_byte_before = scanner_per_byte;
    }
  }
}

TEST(RequestBudgetTest, EveryShapeAtTheBodyLimitIsAnsweredWithTheDefaultBudget) {
  Limits limits;
  for (const Shape& shape : kShapes) {
    SCOPED_TRACE(shape.name);
    const std::string body = Body(shape, LargestFitting(shape, kBodyLimit));
    const auto result = ParseRequest(Endpoint::kCompletions, body, limits);
    // Within the budget it parses; over it, the error names the budget.
    if (const auto* e = std::get_if<ApiError>(&result)) {
      EXPECT_EQ(e->http_status, 400);
      EXPECT_EQ(e->code, "request_too_complex") << e->message;
    }
  }
}

TEST(RequestBudgetTest, CountsMembersItemsDepthAndNumbersOutsideStrings) {
  const Budget b;
  const JsonShape s = MeasureJson(R"({"a":[1,2,[3]],"b:[{":{"c":-12.5e+3},"d":[],"e":[ ]})", b);
  EXPECT_EQ(s.members, 5u);      // a, b:[{, c, d, e
  EXPECT_EQ(s.array_items, 4u);  // 1, 2, [3], 3
  EXPECT_EQ(s.depth, 3u);
  EXPECT_EQ(s.longest_number, 8u);  // -12.5e+3
  // An escaped quote does not end a string.
  EXPECT_EQ(MeasureJson(R"({"x\":1,":2})", b).members, 1u);
}

TEST(RequestBudgetTest, EachLimitAnswersWithAClearError) {
  Limits limits;
  limits.budget = Budget{3, 3, 4, 5};
  auto err = [&](std::string_view body) {
    const auto r = ParseRequest(Endpoint::kCompletions, body, limits);
    return std::holds_alternative<ApiError>(r) ? std::get<ApiError>(r) : ApiError{};
  };
  EXPECT_EQ(err(R"({"model":"m","prompt":"x","a":1,"b":2})").code, "request_too_complex");
  EXPECT_NE(err(R"({"model":"m","prompt":"x","a":1,"b":2})").message.find("3 object members"),
            std::string::npos);
  EXPECT_EQ(err(R"({"model":"m","prompt":"x","a":[1,2,3,4]})").code, "request_too_complex");
  EXPECT_EQ(err(R"({"model":"m","prompt":"x","a":[[[[[]]]]]})").code, "invalid_json");
  EXPECT_EQ(err(R"({"model":"m","prompt":"x","a":123456})").code, "request_too_complex");
  // Exactly at every limit is fine.
  const auto ok =
      ParseRequest(Endpoint::kCompletions, R"({"model":"m","prompt":"x","a":[[12345,1]]})", limits);
  EXPECT_TRUE(std::holds_alternative<ApiRequest>(ok));
}

TEST(RequestBudgetTest, StopsAsSoonAsABudgetIsExceeded) {
  const Budget b;
  const std::string keys = Wrap(ManyKeys(100000));
  JsonShape s = MeasureJson(keys, b);
  EXPECT_EQ(s.members, b.max_members + 1);
  EXPECT_LT(s.steps, keys.size() / 5);
  const std::string wide = Wrap(WideArray(200000));
  s = MeasureJson(wide, b);
  EXPECT_EQ(s.array_items, b.max_array_items + 1);
  EXPECT_LT(s.steps, wide.size() / 2 + 100);
  const std::string deep = std::string(500000, '[') + std::string(500000, ']');
  s = MeasureJson(deep, b);
  EXPECT_EQ(s.depth, b.max_depth + 1);
  EXPECT_LE(s.steps, b.max_depth + 2);
  // A number is measured once the lexer has read all of it.
  const std::string number = Wrap("[" + std::string(100000, '7') + "," + WideArray(1000) + "]");
  s = MeasureJson(number, b);
  EXPECT_EQ(s.longest_number, 100000u);
  EXPECT_LT(s.steps, number.size());
}

TEST(RequestBudgetTest, CountsNumbersAsWritten) {
  const Budget b;
  const auto length = [&](const std::string& number) {
    return MeasureJson("[" + number + "]", b).longest_number;
  };
  EXPECT_EQ(length("0"), 1u);
  EXPECT_EQ(length("-0"), 2u);
  EXPECT_EQ(length("42"), 2u);
  EXPECT_EQ(length("-9223372036854775808"), 20u);
  EXPECT_EQ(length("18446744073709551615"), 20u);
  EXPECT_EQ(length("18446744073709551616"), 20u);  // past uint64_t: read as a double
  EXPECT_EQ(length("-12.5e+3"), 8u);
  EXPECT_EQ(length(std::string(300, '7')), 300u);  // a finite double
  EXPECT_EQ(length("1e999"), 5u);                  // past the double's range: a parse error
  EXPECT_EQ(length(std::string(400, '7')), 400u);
}

TEST(RequestBudgetTest, MalformedBodiesAreLeftToTheParser) {
  Limits limits;
  limits.budget = Budget{1, 100, 8, 16};
  const auto code = [&](std::string_view body) {
    const auto r = ParseRequest(Endpoint::kCompletions, body, limits);
    return std::holds_alternative<ApiError>(r) ? std::get<ApiError>(r).code : "";
  };
  // Counting stops at the first syntax error, so the parser reports it.
  EXPECT_FALSE(CheckBudget(R"({"model" "m","prompt":"x","a":1})", limits.budget).has_value());
  EXPECT_EQ(code(R"({"model" "m","prompt":"x","a":1})"), "invalid_json");
  // A budget exceeded before the error is reported first.
  EXPECT_EQ(code(R"({"model":"m","prompt":"x" "a":1})"), "request_too_complex");
  // Trailing bytes after the value are an error, never counted.
  EXPECT_EQ(MeasureJson(R"({"a":1} {"b":2})", limits.budget).members, 1u);
}

TEST(RequestBudgetTest, RepeatedKeysAreStillFoundByTheSortedCheck) {
  for (const char* body :
       {R"({"a":1,"b":2,"a":3})", R"({"x":{"k":1,"j":2,"k":3}})", R"({"\u0061":1,"a":2})"}) {
    JsonScanner s(body);
    s.RefuseDuplicateKeys();
    EXPECT_FALSE(s.Skip(1)) << body;
  }
  // The same key in sibling objects is not a repeat.
  JsonScanner s(R"([{"a":1,"b":2},{"a":1,"b":2}])");
  s.RefuseDuplicateKeys();
  EXPECT_TRUE(s.Skip(1));
}

}  // namespace
}  // namespace hearsay::api
