#include "hearsay/net/tenant_limiter.h"

#include <algorithm>
#include <cmath>

namespace hearsay::net {

Duration TokenBucket::Take(double cost, double capacity, double per_second, TimePoint now) {
  if (!started_) {
    started_ = true;
    level_ = capacity;
    last_ = now;
  }
  if (now > last_) {
    level_ = std::min(capacity, level_ + ToSeconds(now - last_) * per_second);
    last_ = now;
  }
  level_ = std::min(level_, capacity);
  const double need = std::min(cost, capacity);
  if (level_ >= need) {
    level_ -= cost;
    return Duration{0};
  }
  return FromSeconds((need - level_) / per_second);
}

TenantLimiter::Buckets& TenantLimiter::For(std::string_view tenant) {
  auto it = buckets_.find(tenant);
  if (it == buckets_.end()) it = buckets_.emplace(std::string(tenant), Buckets{}).first;
  return it->second;
}

TenantLimiter::Verdict TenantLimiter::AdmitRequest(std::string_view tenant,
                                                   const TenantLimits& limits, TimePoint now) {
  if (limits.rps == 0) return {};
  std::lock_guard<std::mutex> lock(mu_);
  const double rps = static_cast<double>(limits.rps);
  const Duration wait = For(tenant).rps.Take(1, std::max(1.0, rps), rps, now);
  if (wait == Duration{0}) return {};
  return Verdict{false, wait, "rps"};
}

TenantLimiter::Verdict TenantLimiter::AdmitTokens(std::string_view tenant,
                                                  const TenantLimits& limits, uint64_t tokens,
                                                  TimePoint now) {
  if (limits.tpm == 0) return {};
  std::lock_guard<std::mutex> lock(mu_);
  const double tpm = static_cast<double>(limits.tpm);
  const Duration wait = For(tenant).tpm.Take(static_cast<double>(tokens), tpm, tpm / 60.0, now);
  if (wait == Duration{0}) return {};
  return Verdict{false, wait, "tpm"};
}

std::string RetryAfterSeconds(Duration d) {
  const double s = std::ceil(ToSeconds(d));
  return std::to_string(static_cast<uint64_t>(std::max(1.0, s)));
}

}  // namespace hearsay::net
