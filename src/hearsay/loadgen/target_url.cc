#include "hearsay/loadgen/target_url.h"

#include <charconv>

namespace hearsay::loadgen {

Result<std::string> ParseTarget(std::string_view url) {
  const std::string original(url);
  const size_t scheme = url.find("://");
  if (scheme != std::string_view::npos) {
    if (url.substr(0, scheme) != "http") {
      return InvalidArgumentError("target " + original + ": only http:// is supported");
    }
    url.remove_prefix(scheme + 3);
  }
  const size_t slash = url.find('/');
  if (slash != std::string_view::npos) {
    if (url.substr(slash) != "/") {
      return InvalidArgumentError("target " + original +
                                  ": give the server's address without a path");
    }
    url = url.substr(0, slash);
  }
  const size_t colon = url.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return InvalidArgumentError("target " + original + ": expected host:port");
  }
  const std::string_view host = url.substr(0, colon);
  const std::string_view port = url.substr(colon + 1);
  if (host.front() == '[' ? host.back() != ']' || host.size() < 3
                          : host.find_first_of("[]:") != std::string_view::npos) {
    return InvalidArgumentError("target " + original + ": bad host (IPv6 needs brackets)");
  }
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value == 0 ||
      value > 65535) {
    return InvalidArgumentError("target " + original + ": bad port '" + std::string(port) + "'");
  }
  return std::string(url);
}

Result<std::vector<std::string>> ParseTargetList(std::string_view urls) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = urls.find(',', start);
    const std::string_view item = urls.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (item.empty()) return InvalidArgumentError("empty target in '" + std::string(urls) + "'");
    HEARSAY_ASSIGN_OR_RETURN(std::string target, ParseTarget(item));
    out.push_back(std::move(target));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace hearsay::loadgen
