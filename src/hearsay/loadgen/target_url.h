// Target URLs of the load generator: "http://host:port[/]" or bare "host:port", as `hearsay bench
// --target` takes them (comma-separated), turned into the "host:port" form http::Client wants.
//
// Only plain HTTP is supported (the daemon serves no TLS); a path other than "/" is refused
// rather than silently dropped, because the request paths are the API's own.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hearsay/common/status.h"

namespace hearsay::loadgen {

// "http://127.0.0.1:8080/" -> "127.0.0.1:8080"; "[::1]:80" stays as is. INVALID_ARGUMENT for
// another scheme, a missing or bad port, an empty host, or a path.
Result<std::string> ParseTarget(std::string_view url);

// A comma-separated list of targets; empty items are errors too. At least one target.
Result<std::vector<std::string>> ParseTargetList(std::string_view urls);

}  // namespace hearsay::loadgen
