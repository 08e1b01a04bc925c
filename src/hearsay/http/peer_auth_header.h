// The text form of a per-request authenticator, the value of the X-Hearsay-Peer-Auth header
// (http/peer_headers.h) of a forward and of X-Hearsay-Admin-Token of an admin request:
//
//   <unix ms>.<nonce: 32 hex>.<mac: 64 hex>
//
// net/peer_auth.h makes and checks the MAC; this is only the codec, kept apart so that its fuzz
// target (peer_auth_header_fuzz.cc) needs neither the daemon nor libsodium. The value arrives
// before anything about the request is authenticated, so the parser treats it as untrusted bytes
// and accepts only the canonical form: the timestamp in decimal digits without sign or leading
// zero (0 through INT64_MAX), lower-case hex. So every value it accepts is exactly what
// FormatPeerAuth writes for the fields it returns, and is at most kMaxPeerAuthChars long.
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hearsay::http {

// The fields of one authenticator.
struct PeerAuthValue {
  int64_t ts_ms = 0;  // when it was made, unix ms; never negative
  std::array<uint8_t, 16> nonce{};
  std::array<uint8_t, 32> mac{};
  bool operator==(const PeerAuthValue&) const = default;
};

// The longest value the parser accepts: 19 digits, two dots and 96 hex digits.
inline constexpr size_t kMaxPeerAuthChars = 19 + 1 + 32 + 1 + 64;

// `value` in its text form. ts_ms must not be negative.
std::string FormatPeerAuth(const PeerAuthValue& value);

// The fields of a header's value, or nullopt unless `text` is in the canonical form above.
std::optional<PeerAuthValue> ParsePeerAuth(std::string_view text);

}  // namespace hearsay::http
