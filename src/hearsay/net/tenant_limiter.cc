#include "hearsay/net/tenant_limiter.h"

#include <algorithm>
#include <cmath>

namespace hearsay::net {

std::string RetryAfterSeconds(Duration d) {
  const double s = std::ceil(ToSeconds(d));
  return std::to_string(static_cast<uint64_t>(std::max(1.0, s)));
}

}  // namespace hearsay::net
