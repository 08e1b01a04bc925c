// "host:port" addresses as the daemon's flags, config and gossip carry them.
//
// Accepted forms: "127.0.0.1:7946", "[::1]:7946", "node-3.example:7946". The port is 0..65535 (0
// asks the OS for an ephemeral port when binding). A bare IPv6 literal needs brackets, because
// "::1:7946" is ambiguous.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "hearsay/common/status.h"

namespace hearsay::net {

struct HostPort {
  std::string host;  // without brackets
  uint16_t port = 0;

  friend bool operator==(const HostPort&, const HostPort&) = default;
};

// Parses "host:port"; INVALID_ARGUMENT saying what is wrong (no port, bad port, empty host,
// unbracketed IPv6).
Result<HostPort> ParseHostPort(std::string_view text);

// "host:port", with brackets around a host that contains ':' (IPv6).
std::string FormatHostPort(std::string_view host, uint16_t port);

}  // namespace hearsay::net
