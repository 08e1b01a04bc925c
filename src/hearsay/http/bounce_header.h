// The text form of PeerRequest::bounce_above_ms on the daemon's HTTP peer path: the sender puts
// it in the kBounceAboveHeader request header (http/peer_headers.h) of a forward, and the receiving
// daemon parses it back (node::NodeOptions::bounce_margin_ms explains the bounce). The header rides
// the authenticated peer request; the parser still treats it as untrusted bytes. Thread-safety:
// pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "hearsay/http/peer_headers.h"

namespace hearsay::http {

// `ms` in the header's text form: a plain decimal with microsecond precision.
std::string FormatBounceAboveMs(double ms);

// The value of a header, or nullopt when it is not a plain decimal number (digits, at most one
// '.', no sign, no exponent, at most 32 bytes) or is not in (0, 1e9) ms. A receiver ignores a bad
// value: the request is then served, never lost.
std::optional<double> ParseBounceAboveMs(std::string_view text);

}  // namespace hearsay::http
