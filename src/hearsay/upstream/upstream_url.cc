// UpstreamUrl: see upstream_url.h.
#include "hearsay/upstream/upstream_url.h"

#include <charconv>
#include <string>

namespace hearsay::upstream {

Result<UpstreamUrl> ParseUpstreamUrl(std::string_view url) {
  // Built with append: GCC 12 warns (-Wrestrict, a false positive) on "'" + std::string(...).
  std::string quoted(1, '\'');
  quoted.append(url.substr(0, 200));
  quoted.push_back('\'');
  constexpr std::string_view kHttp = "http://";
  if (url.starts_with("https://")) {
    return InvalidArgumentError("upstream URL " + quoted +
                                ": https is not supported; run the engine beside the node and "
                                "use http://");
  }
  if (!url.starts_with(kHttp)) {
    return InvalidArgumentError("upstream URL " + quoted + " must start with http://");
  }
  std::string_view rest = url.substr(kHttp.size());
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return InvalidArgumentError("upstream URL " + quoted + " must not have a query or fragment");
  }
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos) {
    return InvalidArgumentError("upstream URL " + quoted + " must not carry credentials");
  }
  std::string_view host;
  std::string_view port_text;
  if (authority.starts_with("[")) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return InvalidArgumentError("upstream URL " + quoted + ": unterminated IPv6 address");
    }
    host = authority.substr(0, close + 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return InvalidArgumentError("upstream URL " + quoted + ": bad port");
      port_text = after.substr(1);
    }
  } else {
    const size_t colon = authority.rfind(':');
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (host.empty() || host == "[]") {
    return InvalidArgumentError("upstream URL " + quoted + " has no host");
  }
  unsigned port = 80;
  if (!port_text.empty() || authority.ends_with(":")) {
    auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || p != port_text.data() + port_text.size() || port == 0 ||
        port > 65535) {
      return InvalidArgumentError("upstream URL " + quoted + ": port must be in 1..65535");
    }
  }
  while (path.ends_with("/")) path.remove_suffix(1);
  if (path.ends_with("/v1")) path.remove_suffix(3);
  UpstreamUrl out;
  out.host_port = std::string(host) + ":" + std::to_string(port);
  out.base_path = std::string(path);
  return out;
}

}  // namespace hearsay::upstream
