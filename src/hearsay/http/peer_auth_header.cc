#include "hearsay/http/peer_auth_header.h"

#include <charconv>

#include "hearsay/common/check.h"

namespace hearsay::http {
namespace {

void AppendHex(const uint8_t* p, size_t n, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < n; ++i) {
    out->push_back(kHex[p[i] >> 4]);
    out->push_back(kHex[p[i] & 15]);
  }
}

int Nibble(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool ParseHex(std::string_view hex, uint8_t* out, size_t n) {
  if (hex.size() != 2 * n) return false;
  for (size_t i = 0; i < n; ++i) {
    const int hi = Nibble(hex[2 * i]), lo = Nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

// 0, or 1 to 19 digits without a leading zero, within int64_t.
bool ParseTimestamp(std::string_view text, int64_t* out) {
  if (text.empty() || text.size() > 19 || (text.size() > 1 && text[0] == '0')) return false;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
  }
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string FormatPeerAuth(const PeerAuthValue& value) {
  HEARSAY_CHECK(value.ts_ms >= 0);
  std::string out = std::to_string(value.ts_ms);
  out.reserve(kMaxPeerAuthChars);
  out.push_back('.');
  AppendHex(value.nonce.data(), value.nonce.size(), &out);
  out.push_back('.');
  AppendHex(value.mac.data(), value.mac.size(), &out);
  return out;
}

std::optional<PeerAuthValue> ParsePeerAuth(std::string_view text) {
  if (text.size() > kMaxPeerAuthChars) return std::nullopt;
  const size_t dot1 = text.find('.');
  if (dot1 == std::string_view::npos) return std::nullopt;
  const size_t dot2 = text.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos) return std::nullopt;
  PeerAuthValue v;
  if (!ParseTimestamp(text.substr(0, dot1), &v.ts_ms) ||
      !ParseHex(text.substr(dot1 + 1, dot2 - dot1 - 1), v.nonce.data(), v.nonce.size()) ||
      !ParseHex(text.substr(dot2 + 1), v.mac.data(), v.mac.size())) {
    return std::nullopt;
  }
  return v;
}

}  // namespace hearsay::http
