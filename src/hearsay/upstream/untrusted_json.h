// Parsing JSON from an upstream engine, which is untrusted input.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace hearsay::upstream {

// Never throws: bad input gives a discarded (invalid) value. Nesting deeper than 64 is cut by the
// parser callback, so such documents then fail the caller's shape checks instead of recursing.
inline nlohmann::json ParseUntrustedJson(std::string_view text) {
  constexpr int kMaxDepth = 64;
  return nlohmann::json::parse(
      text.begin(), text.end(),
      [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) { return depth <= kMaxDepth; },
      /*allow_exceptions=*/false);
}

}  // namespace hearsay::upstream
