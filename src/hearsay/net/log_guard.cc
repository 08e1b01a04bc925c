#include "hearsay/net/log_guard.h"

namespace hearsay::net {

std::string LogField(std::string_view value, size_t max_bytes) {
  if (value.empty()) return "-";
  static constexpr char kHex[] = "0123456789abcdef";
  const bool cut = value.size() > max_bytes;
  if (cut) value = value.substr(0, max_bytes);
  std::string out;
  out.reserve(value.size() + 3);
  for (const char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if (c > 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '=') {
      out.push_back(ch);
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  if (cut) out += "...";
  return out;
}

std::optional<uint64_t> LogRateLimiter::Admit(Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (now - window_start_ >= std::chrono::seconds(1)) {
    window_start_ = now;
    in_window_ = 0;
  }
  if (in_window_ >= per_second_) {
    ++suppressed_;
    return std::nullopt;
  }
  ++in_window_;
  const uint64_t held_back = suppressed_;
  suppressed_ = 0;
  return held_back;
}

}  // namespace hearsay::net
