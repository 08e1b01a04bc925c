// Parsing of "host:port".
#include "hearsay/http/host_port.h"

#include <charconv>

namespace hearsay::http {

Result<HostPort> ParseHostPort(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError("bad address '" + std::string(text) +
                                "' (want host:port): " + std::string(why));
  };
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return bad("no port");
  std::string_view host = text.substr(0, colon);
  std::string_view port = text.substr(colon + 1);
  if (!host.empty() && host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return bad("unbalanced brackets");
    host = host.substr(1, host.size() - 2);
  } else if (host.find_first_of("[]:") != std::string_view::npos) {
    return bad("an IPv6 address needs brackets");
  }
  if (host.empty()) return bad("empty host");
  if (port.empty() || port.size() > 5) return bad("port must be 0..65535");
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value > 65535) {
    return bad("port must be 0..65535");
  }
  return HostPort{std::string(host), static_cast<uint16_t>(value)};
}

std::string FormatHostPort(std::string_view host, uint16_t port) {
  const bool v6 = host.find(':') != std::string_view::npos;
  std::string out;
  if (v6) out.push_back('[');
  out.append(host);
  if (v6) out.push_back(']');
  out.push_back(':');
  out.append(std::to_string(port));
  return out;
}

}  // namespace hearsay::http
