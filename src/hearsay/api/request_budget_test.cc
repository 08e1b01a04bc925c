#include "hearsay/api/request_budget.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "hearsay/api/json_scanner.h"
#include "hearsay/api/openai_request.h"

namespace hearsay::api {
namespace {

constexpr size_t kBodyLimit = size_t{1} << 20;  // the daemon's default body limit

std::string Wrap(std::string_view extra) {
  std::string body = R"({"model":"m","prompt":"x","max_tokens":4,"metadata":)";
  body.append(extra);
  body.push_back('}');
  return body;
}

// The hostile shapes of a body, each with n repetitions of its unit.
std::string ManyKeys(size_t n) {
  std::string o = "{";
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) o.push_back(',');
    o.push_back('"');
    o.append(std::to_string(i * 2654435761u % 1000000007u));
    o.append("\":0");
  }
  return Wrap(o + "}");
}
std::string LongEscapes(size_t n) {
  std::string s = "\"";
  for (size_t i = 0; i < n; ++i) s += "\\u00e9\\n";
  return Wrap(s + "\"");
}
std::string WideArray(size_t n) {
  std::string a = "[";
  for (size_t i = 0; i < n; ++i) a += i == 0 ? "0" : ",0";
  return Wrap(a + "]");
}
std::string DeepThenWide(size_t n) {
  std::string a(kMaxScanDepth - 4, '[');
  for (size_t i = 0; i < n; ++i) a += i == 0 ? "[1]" : ",[1]";
  return Wrap(a + std::string(kMaxScanDepth - 4, ']'));
}
std::string LongNumber(size_t n) { return Wrap(std::string(n, '7')); }
std::string ManySmallObjects(size_t n) {
  std::string a = "[";
  for (size_t i = 0; i < n; ++i) a += i == 0 ? R"({"a":1,"b":2})" : R"(,{"a":1,"b":2})";
  return Wrap(a + "]");
}

struct Shape {
  const char* name;
  std::function<std::string(size_t)> make;
};

const Shape kShapes[] = {{"many_keys", ManyKeys},     {"long_escapes", LongEscapes},
                         {"wide_array", WideArray},   {"deep_then_wide", DeepThenWide},
                         {"long_number", LongNumber}, {"many_small_objects", ManySmallObjects}};

// The scanner's work on `body` with repeated keys refused (as ScanRequest reads it): bytes
// passed plus key comparisons.
size_t ScannerWork(const std::string& body) {
  JsonScanner s(body);
  s.RefuseDuplicateKeys();
  s.Skip(1);
  return s.offset() + s.key_comparisons();
}

// The largest n whose body fits the body limit.
size_t LargestFitting(const Shape& shape) {
  size_t n = 1;
  while (shape.make(n * 2).size() <= kBodyLimit) n *= 2;
  return n;
}

TEST(RequestBudgetTest, WorkPerByteStaysBoundedForEveryShapeUpToTheBodyLimit) {
  for (const Shape& shape : kShapes) {
    SCOPED_TRACE(shape.name);
    const size_t n = LargestFitting(shape);
    const std::string half = shape.make(n / 2);
    const std::string full = shape.make(n);
    ASSERT_LE(full.size(), kBodyLimit);
    // The budget's pass looks at each byte at most once.
    Budget unlimited{SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX};
    EXPECT_LE(MeasureJson(full, unlimited).steps, full.size());
    // The scanner: a few operations per byte, and twice the input costs about twice the work
    // (quadratic work would quadruple it).
    const size_t w_half = ScannerWork(half);
    const size_t w_full = ScannerWork(full);
    EXPECT_LE(w_full, 8 * full.size()) << w_full << " operations for " << full.size() << " bytes";
    const double growth = static_cast<double>(w_full) / static_cast<double>(w_half);
    const double size_growth = static_cast<double>(full.size()) / static_cast<double>(half.size());
    EXPECT_LE(growth, 1.25 * size_growth) << w_half << " -> " << w_full;
  }
}

TEST(RequestBudgetTest, EveryShapeAtTheBodyLimitIsAnsweredWithTheDefaultBudget) {
  Limits limits;
  for (const Shape& shape : kShapes) {
    SCOPED_TRACE(shape.name);
    const std::string body = shape.make(LargestFitting(shape));
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
