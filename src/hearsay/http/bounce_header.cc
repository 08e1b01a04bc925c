#include "hearsay/http/bounce_header.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace hearsay::http {

std::string FormatBounceAboveMs(double ms) {
  // Rounded to the microsecond, below the parser's bound (1e9 ms): rounding a value just under
  // the bound must not carry it over, or the receiver would ignore the header.
  constexpr double kLargest = 999999999.999;
  char buf[40];
  const int n = std::snprintf(buf, sizeof buf, "%.3f",
                              std::isfinite(ms) && ms > 0 ? std::min(ms, kLargest) : 0.0);
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

std::optional<double> ParseBounceAboveMs(std::string_view text) {
  if (text.empty() || text.size() > 32) return std::nullopt;
  int dots = 0;
  for (char ch : text) {
    if (ch == '.') {
      ++dots;
    } else if (ch < '0' || ch > '9') {
      return std::nullopt;
    }
  }
  if (dots > 1 || text == ".") return std::nullopt;
  double value = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, value, std::chars_format::fixed);
  if (ec != std::errc() || p != end) return std::nullopt;
  if (!(value > 0 && value < 1e9)) return std::nullopt;
  return value;
}

}  // namespace hearsay::http
