// Target URLs of the load generator: "http://host:port[/]" or bare "host:port", as `hearsay bench
// --target` takes them (comma-separated), turned into the "host:port" form http::Client wants.
//
// "https://" is accepted by ParseTargetUrl, which says so (the caller then needs a TLS client
// context); ParseTarget takes plain HTTP only. A path other than "/" is refused rather than
// silently dropped, because the request paths are the API's own.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hearsay/common/status.h"

namespace hearsay::loadgen {

struct TargetUrl {
  std::string host_port;  // "host:port"
  bool https = false;     // the URL said https://
  friend bool operator==(const TargetUrl&, const TargetUrl&) = default;
};

// "https://node.example:8443" -> {"node.example:8443", true}; "http://h:1/" and "h:1" -> plain.
// INVALID_ARGUMENT for another scheme, a missing or bad port, an empty host, or a path.
Result<TargetUrl> ParseTargetUrl(std::string_view url);

// "http://127.0.0.1:8080/" -> "127.0.0.1:8080"; "[::1]:80" stays as is. INVALID_ARGUMENT for
// another scheme (https included), a missing or bad port, an empty host, or a path.
Result<std::string> ParseTarget(std::string_view url);

// A comma-separated list of targets; empty items are errors too. At least one target.
Result<std::vector<std::string>> ParseTargetList(std::string_view urls);
// The same with https:// allowed: all targets must use the same scheme.
Result<std::vector<TargetUrl>> ParseTargetUrlList(std::string_view urls);

}  // namespace hearsay::loadgen
