#include "hearsay/loadgen/target_url.h"

#include <charconv>

namespace hearsay::loadgen {

Result<std::string> ParseTarget(std::string_view url) {
  HEARSAY_ASSIGN_OR_RETURN(TargetUrl t, ParseTargetUrl(url));
  if (t.https) {
    return InvalidArgumentError("target " + std::string(url) + ": only http:// is supported here");
  }
  return std::move(t.host_port);
}

Result<TargetUrl> ParseTargetUrl(std::string_view url) {
  const std::string original(url);
  TargetUrl out;
  const size_t scheme = url.find("://");
  if (scheme != std::string_view::npos) {
    const std::string_view name = url.substr(0, scheme);
    if (name != "http" && name != "https") {
      return InvalidArgumentError("target " + original +
                                  ": only http:// and https:// are supported");
    }
    out.https = name == "https";
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
  out.host_port = std::string(url);
  return out;
}

Result<std::vector<std::string>> ParseTargetList(std::string_view urls) {
  HEARSAY_ASSIGN_OR_RETURN(std::vector<TargetUrl> targets, ParseTargetUrlList(urls));
  std::vector<std::string> out;
  for (TargetUrl& t : targets) {
    if (t.https)
      return InvalidArgumentError("target https://" + t.host_port +
                                  ": only http:// is supported here");
    out.push_back(std::move(t.host_port));
  }
  return out;
}

Result<std::vector<TargetUrl>> ParseTargetUrlList(std::string_view urls) {
  std::vector<TargetUrl> out;
  size_t start = 0;
  while (true) {
    const size_t comma = urls.find(',', start);
    const std::string_view item = urls.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (item.empty()) return InvalidArgumentError("empty target in '" + std::string(urls) + "'");
    HEARSAY_ASSIGN_OR_RETURN(TargetUrl target, ParseTargetUrl(item));
    if (!out.empty() && out.front().https != target.https) {
      return InvalidArgumentError("targets mix http:// and https://: use one scheme");
    }
    out.push_back(std::move(target));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace hearsay::loadgen
