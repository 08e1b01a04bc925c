// HTTP header lists shared by the server, the client and their users.
//
// Headers are an ordered list of (name, value) pairs: order is kept and repeated names are allowed,
// as HTTP permits. Lookups compare names case-insensitively; the server hands requests over with
// names already lowercased.
//
// Thread-safety: plain values.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hearsay::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

// ASCII case-insensitive equality, as HTTP field names compare.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// The value of the first header named `name` (any case), or nullopt.
std::optional<std::string_view> FindHeader(const Headers& headers, std::string_view name);

// The standard reason phrase for `status` ("OK", "Not Found", ...), or "Unknown".
std::string_view ReasonPhrase(int status);

}  // namespace hearsay::http
