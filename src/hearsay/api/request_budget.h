// The request budget: what one client body may cost before anything parses it.
//
// A body is checked in one linear pass (MeasureJson: nlohmann's SAX parser with a handler that
// only counts) before the tree parser sees it; the request scanner, which reads valid requests
// without a tree, keeps the same counts itself and gives up past them (JsonScanner::LimitCounts).
// The work every later step does is so bounded by the budget as well as by the body size: object members and array elements (summed
// over the whole body), nesting depth and the length of one number. The pass stops at the first
// count over the budget (a number is measured once the lexer has read all of it). The parsers
// themselves are linear or n log n in these counts (json_scanner.h checks repeated keys by
// sorting), so a body within the budget costs at most a few milliseconds, whatever its shape
// (request_budget_test.cc counts the work per byte). The body's size is the HTTP server's limit
// (413); the prompt's tokens are checked against the context window once the prompt is tokenized
// (CheckContext in openai_request.h).
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "hearsay/api/api_error.h"

namespace hearsay::api {

// Budget::max_depth's default: deeper nesting is refused before the JSON parser sees the body.
inline constexpr size_t kMaxJsonDepth = 64;

struct Budget {
  // Object members, summed over every object of the body.
  size_t max_members = 10000;
  // Array elements, summed over every array of the body.
  size_t max_array_items = 100000;
  // Arrays and objects nested in each other.
  size_t max_depth = kMaxJsonDepth;
  // Characters of one number (digits, sign, point and exponent).
  size_t max_number_chars = 256;
};

// What a body holds, as far as the pass went (it stops at the first count over its budget).
struct JsonShape {
  size_t members = 0;
  size_t array_items = 0;
  size_t depth = 0;
  size_t longest_number = 0;
  // Bytes the parser read: each at most once, so at most the body's size.
  size_t steps = 0;
  // SAX events the parser delivered (values, keys, container ends): at most one per byte read.
  size_t events = 0;
};

// Counts `body`'s shape in one pass, stopping once a count exceeds `budget`. Repeated keys count
// every time. Malformed input is counted up to its first syntax error and left for the parser to
// report.
JsonShape MeasureJson(std::string_view body, const Budget& budget);

// nullopt when `body` fits `budget`, else a 400 invalid_request_error (code
// "request_too_complex") naming the limit that was exceeded.
std::optional<ApiError> CheckBudget(std::string_view body, const Budget& budget);

}  // namespace hearsay::api
