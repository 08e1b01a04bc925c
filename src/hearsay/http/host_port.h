// "host:port" strings as the daemon's flags, config and gossip carry them (the one parser: the
// HTTP client and server, the gossip transport and the daemon config all use it).
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

  friend bool operator==(const HostPort&, const HostPort&) = default;
};

// INVALID_ARGUMENT for an empty host, a missing or out-of-range port, or stray brackets.
Result<HostPort> ParseHostPort(std::string_view text);

// "host:port", with brackets around a host that contains ':' (IPv6).
std::string FormatHostPort(std::string_view host, uint16_t port);

}  // namespace hearsay::http
