// Request bodies shaped to be expensive: many keys, long strings of escapes, wide and deep
// arrays, long numbers, and seeded random mixes of them. Each shape makes the hostile value (a
// request's "metadata" member) from a count of its unit, so a test or benchmark can grow it up to
// the body limit. Shared by request_budget_test.cc (the work per byte) and the hostile-body
// benchmark (bench/hostile/, /health beside these bodies on a real node).
//
// Test-only. Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "hearsay/api/json_scanner.h"
#include "hearsay/api/request_budget.h"
#include "hearsay/env/rng.h"

namespace hearsay::api::testing {

// The daemon's default body limit (limits.max_body_bytes).
inline constexpr size_t kDefaultBodyLimit = size_t{1} << 20;

// A completions request for `model` with `value` as its "metadata" member.
inline std::string Wrap(std::string_view model, std::string_view value) {
  std::string body = R"({"model":")";
  body.append(model);
  body.append(R"(","prompt":"x","max_tokens":4,"metadata":)");
  body.append(value);
  body.push_back('}');
  return body;
}

// One object of n distinct keys.
inline std::string ManyKeys(size_t n) {
  std::string o = "{";
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) o.push_back(',');
    o.push_back('"');
    o.append(std::to_string(i * 2654435761u % 1000000007u));
    o.append("\":0");
  }
  return o + "}";
}
// One string of 2n escapes.
inline std::string LongEscapes(size_t n) {
  std::string s = "\"";
  for (size_t i = 0; i < n; ++i) s += "\\u00e9\\n";
  return s + "\"";
}
// One array of n elements.
inline std::string WideArray(size_t n) {
  std::string a = "[";
  for (size_t i = 0; i < n; ++i) a += i == 0 ? "0" : ",0";
  return a + "]";
}
// n small arrays inside arrays nested nearly as deep as the request scanner reads.
inline std::string DeepThenWide(size_t n) {
  std::string a(kMaxScanDepth - 4, '[');
  for (size_t i = 0; i < n; ++i) a += i == 0 ? "[1]" : ",[1]";
  return a + std::string(kMaxScanDepth - 4, ']');
}
// One number of n digits.
inline std::string LongNumber(size_t n) { return std::string(n, '7'); }
// n objects of two members.
inline std::string ManySmallObjects(size_t n) {
  std::string a = "[";
  for (size_t i = 0; i < n; ++i) a += i == 0 ? R"({"a":1,"b":2})" : R"(,{"a":1,"b":2})";
  return a + "]";
}
// n keys of escapes (a surrogate pair among them), each with an escaped value.
inline std::string EscapedKeys(size_t n) {
  std::string o = "{";
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) o.push_back(',');
    o += "\"\\ud83d\\ude00\\t" + std::to_string(i) + "\":\"\\\"\"";
  }
  return o + "}";
}
// n siblings nested to the default depth limit.
inline std::string DeepSiblings(size_t n) {
  const size_t deep = kMaxJsonDepth - 2;
  std::string a = "[";
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) a.push_back(',');
    a += std::string(deep, '[') + "0" + std::string(deep, ']');
  }
  return a + "]";
}
// n numbers of the longest length the default budget allows (256 characters).
inline std::string LongNumbers(size_t n) {
  std::string a = "[";
  for (size_t i = 0; i < n; ++i) a += (i == 0 ? "-" : ",-") + std::string(250, '9') + "e-300";
  return a + "]";
}

// Appends a random value of the shapes above, nested in each other, until `out` holds `bytes`.
inline void AppendRandomValue(Rng& rng, size_t depth, size_t bytes, std::string* out) {
  const uint64_t pick = depth >= 48 ? 7 : rng.Below(9);
  switch (pick) {
    case 0:
    case 1:  // an object of random members
      out->push_back('{');
      for (size_t i = 0; out->size() < bytes && rng.Below(64) != 0; ++i) {
        if (i > 0) out->push_back(',');
        *out += "\"k" + std::to_string(rng.Below(1u << 20)) + (rng.Below(2) ? "\\n\":" : "\":");
        AppendRandomValue(rng, depth + 1, bytes, out);
      }
      out->push_back('}');
      break;
    case 2:
    case 3:  // an array of random elements
      out->push_back('[');
      for (size_t i = 0; out->size() < bytes && rng.Below(64) != 0; ++i) {
        if (i > 0) out->push_back(',');
        AppendRandomValue(rng, depth + 1, bytes, out);
      }
      out->push_back(']');
      break;
    case 4:  // a string of escapes
      out->push_back('"');
      for (uint64_t i = rng.Below(256); i > 0; --i) *out += rng.Below(2) ? "\\u00e9" : "\\\\";
      out->push_back('"');
      break;
    case 5:  // a long number
      *out += "-" + std::string(1 + rng.Below(255), '7');
      break;
    case 6:  // nesting
      *out += std::string(8, '[') + "[]" + std::string(8, ']');
      break;
    default:
      *out += rng.Below(2) ? "true" : "null";
      break;
  }
}

// An array of random values of about 64n bytes, drawn from `seed`.
inline std::string RandomMix(uint64_t seed, size_t n) {
  Rng rng(seed);
  std::string a = "[";
  while (a.size() < 64 * n) {
    if (a.size() > 1) a.push_back(',');
    AppendRandomValue(rng, 1, 64 * n, &a);
  }
  return a + "]";
}
inline std::string RandomMix1(size_t n) { return RandomMix(1, n); }
inline std::string RandomMix2(size_t n) { return RandomMix(2, n); }
inline std::string RandomMix3(size_t n) { return RandomMix(3, n); }

struct Shape {
  const char* name;
  std::string (*value)(size_t n);  // the hostile value with n units
};

inline constexpr Shape kShapes[] = {
    {"many_keys", ManyKeys},       {"long_escapes", LongEscapes},
    {"wide_array", WideArray},     {"deep_then_wide", DeepThenWide},
    {"long_number", LongNumber},   {"many_small_objects", ManySmallObjects},
    {"escaped_keys", EscapedKeys}, {"deep_siblings", DeepSiblings},
    {"long_numbers", LongNumbers}, {"random_mix_1", RandomMix1},
    {"random_mix_2", RandomMix2},  {"random_mix_3", RandomMix3},
};

// The body of `shape` with n units, for `model`.
inline std::string Body(const Shape& shape, size_t n, std::string_view model = "m") {
  return Wrap(model, shape.value(n));
}

// About the largest n whose body fits `limit` bytes (within 1%): sizes grow about linearly in n.
inline size_t LargestFitting(const Shape& shape, size_t limit) {
  size_t n = 1;
  while (Body(shape, n * 2).size() <= limit) n *= 2;
  const double per_unit = static_cast<double>(Body(shape, n).size()) / static_cast<double>(n);
  for (size_t guess = static_cast<size_t>(static_cast<double>(limit) / per_unit); guess > n;
       guess -= guess / 100 + 1) {
    if (Body(shape, guess).size() <= limit) return guess;
  }
  return n;
}

}  // namespace hearsay::api::testing
