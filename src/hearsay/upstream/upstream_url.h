// UpstreamUrl: the parsed --upstream URL of the openai engine ("http://host:port[/base]").
//
// Only plain http is supported (the engine runs beside the node, on loopback or a private
// network); https is refused with a clear error rather than silently sent in clear text.
//
// Thread-safety: pure.
#pragma once

#include <string>
#include <string_view>

#include "hearsay/common/status.h"

namespace hearsay::upstream {

struct UpstreamUrl {
  // "host:port" for http::Client (IPv6 hosts keep their brackets).
  std::string host_port;
  // A path prefix without trailing slash ("" or "/something"), prepended to every request path.
  // A trailing "/v1" is dropped: request paths already start with /v1.
  std::string base_path;
};

// INVALID_ARGUMENT naming what is wrong: a scheme other than http, no host, a bad or missing
// port (default 80), a query or fragment.
Result<UpstreamUrl> ParseUpstreamUrl(std::string_view url);

}  // namespace hearsay::upstream
