// "host:port" strings as the daemon's flags and gossip carry them.
//
// Accepted forms: "name:port", "1.2.3.4:port", "[::1]:port". The port is a decimal 0..65535.
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "hearsay/common/status.h"

namespace hearsay::http {

struct HostPort {
  // Without brackets for IPv6.
  std::string host;
  uint16_t port = 0;
};

// INVALID_ARGUMENT for an empty host, a missing or out-of-range port, or stray brackets.
Result<HostPort> ParseHostPort(std::string_view text);

}  // namespace hearsay::http
