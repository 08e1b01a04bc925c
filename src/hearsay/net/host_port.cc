#include "hearsay/net/host_port.h"

#include <charconv>

namespace hearsay::net {

Result<HostPort> ParseHostPort(std::string_view text) {
  // Built by append: GCC 12 warns falsely (-Wrestrict) on "\"" + std::string(...).
  std::string quoted(1, '"');
  quoted.append(text);
  quoted.push_back('"');
  HostPort hp;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) {
      return InvalidArgumentError("address " + quoted + ": missing ']' after an IPv6 literal");
    }
    hp.host = std::string(text.substr(1, close - 1));
    if (close + 1 >= text.size() || text[close + 1] != ':') {
      return InvalidArgumentError("address " + quoted + ": expected ':port' after ']'");
    }
    port_text = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return InvalidArgumentError("address " + quoted + ": expected host:port");
    }
    hp.host = std::string(text.substr(0, colon));
    if (hp.host.find(':') != std::string::npos) {
      return InvalidArgumentError("address " + quoted +
                                  ": an IPv6 host needs brackets, as in [::1]:7946");
    }
    port_text = text.substr(colon + 1);
  }
  if (hp.host.empty()) return InvalidArgumentError("address " + quoted + ": empty host");
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
      port > 65535) {
    return InvalidArgumentError("address " + quoted + ": port must be a number in 0..65535");
  }
  hp.port = static_cast<uint16_t>(port);
  return hp;
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

}  // namespace hearsay::net
