// Fuzz target: the X-Hearsay-Peer-Auth and X-Hearsay-Admin-Token values arrive before anything is
// authenticated. Properties checked (a violation aborts):
//   - ParsePeerAuth accepts exactly what a naive reference accepts (three dot-separated parts: a
//     decimal timestamp without sign or leading zero that fits int64_t, 32 and 64 lower-case hex
//     digits);
//   - whatever it accepts is at most kMaxPeerAuthChars long, formats back to the very same text
//     (parse -> format -> parse round-trips), and no proper prefix of it is accepted;
//   - the first 56 bytes, read as a timestamp, nonce and MAC, format to a value that parses back
//     to the same fields, and that value with any byte appended is refused.
// The seed corpus (fuzz/corpus/peer_auth_header_fuzz/) holds valid and near-valid values.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/common/check.h"
#include "hearsay/http/peer_auth_header.h"

namespace hearsay::http {
namespace {

bool LowerHex(std::string_view s, size_t n) {
  if (s.size() != n) return false;
  for (const char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// The reference: split at every dot, then check each part on its own.
bool ReferenceAccepts(std::string_view text) {
  std::vector<std::string_view> parts;
  size_t from = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '.') {
      parts.push_back(text.substr(from, i - from));
      from = i + 1;
    }
  }
  if (parts.size() != 3) return false;
  const std::string_view ts = parts[0];
  if (ts.empty() || (ts.size() > 1 && ts[0] == '0')) return false;
  for (const char c : ts) {
    if (c < '0' || c > '9') return false;
  }
  // Within int64_t: fewer digits than INT64_MAX, or as many and not above it.
  constexpr std::string_view kMax = "9223372036854775807";
  if (ts.size() > kMax.size() || (ts.size() == kMax.size() && ts > kMax)) return false;
  return LowerHex(parts[1], 32) && LowerHex(parts[2], 64);
}

void CheckText(std::string_view text) {
  const std::optional<PeerAuthValue> parsed = ParsePeerAuth(text);
  HEARSAY_CHECK(parsed.has_value() == ReferenceAccepts(text));
  if (!parsed) return;
  HEARSAY_CHECK(text.size() <= kMaxPeerAuthChars);
  HEARSAY_CHECK(parsed->ts_ms >= 0);
  HEARSAY_CHECK(FormatPeerAuth(*parsed) == text);
  HEARSAY_CHECK(ParsePeerAuth(FormatPeerAuth(*parsed)) == parsed);
  for (size_t n = 0; n < text.size(); ++n) HEARSAY_CHECK(!ParsePeerAuth(text.substr(0, n)));
}

void CheckFields(const uint8_t* data, size_t size) {
  PeerAuthValue v;
  if (size < 8 + v.nonce.size() + v.mac.size()) return;
  uint64_t ts = 0;
  std::memcpy(&ts, data, 8);
  v.ts_ms = static_cast<int64_t>(ts & uint64_t{INT64_MAX});
  std::memcpy(v.nonce.data(), data + 8, v.nonce.size());
  std::memcpy(v.mac.data(), data + 8 + v.nonce.size(), v.mac.size());
  const std::string text = FormatPeerAuth(v);
  HEARSAY_CHECK(text.size() <= kMaxPeerAuthChars);
  HEARSAY_CHECK(ParsePeerAuth(text) == v);
  HEARSAY_CHECK(!ParsePeerAuth(text + static_cast<char>(data[size - 1])));
}

}  // namespace
}  // namespace hearsay::http

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hearsay::http::CheckText(std::string_view(reinterpret_cast<const char*>(data), size));
  hearsay::http::CheckFields(data, size);
  return 0;
}
