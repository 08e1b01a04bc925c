// TenantLimiter: per-tenant rate limits (api_keys.h TenantLimits) as token buckets, on one node.
//
// Each limited tenant has up to two buckets. Requests per second: holds max(1, rps) and refills
// at rps per second; a request takes 1. Tokens per minute: holds tpm and refills at tpm/60 per
// second; a request takes its prompt tokens plus its max_tokens (what it may use, charged at
// admission and not refunded). A take is granted while the bucket holds at least
// min(cost, capacity), and may then leave it in debt (a request larger than the whole bucket
// still passes when the bucket is full, and the debt holds the tenant to its average rate). A
// refusal says after how long the same take would be granted (Retry-After).
//
// Time is given by the caller (the node's clock), so tests run in virtual time. Limits are taken
// from each call: a reload of the keys file that changes a tenant's limits applies to its next
// request (the bucket keeps its level, clamped to the new capacity).
//
// Thread-safety: every method may be called from any thread (one mutex, one short critical
// section per call).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "hearsay/env/time.h"
#include "hearsay/net/api_keys.h"

namespace hearsay::net {

// One token bucket. Not thread-safe by itself.
class TokenBucket {
 public:
  // Takes `cost` at `now` from a bucket of `capacity` refilled at `per_second`: 0 when granted,
  // else how long until it would be.
  Duration Take(double cost, double capacity, double per_second, TimePoint now);
  double level() const { return level_; }

 private:
  bool started_ = false;
  double level_ = 0;
  TimePoint last_{};
};

class TenantLimiter {
 public:
  struct Verdict {
    bool ok = true;
    Duration retry_after{0};
    const char* limit = "";  // "rps" or "tpm" when refused
  };

  // One request of `tenant` at `now` (its rps bucket).
  Verdict AdmitRequest(std::string_view tenant, const TenantLimits& limits, TimePoint now);
  // `tokens` tokens of `tenant` at `now` (its tpm bucket).
  Verdict AdmitTokens(std::string_view tenant, const TenantLimits& limits, uint64_t tokens,
                      TimePoint now);

 private:
  struct Buckets {
    TokenBucket rps, tpm;
  };
  std::mutex mu_;
  std::map<std::string, Buckets, std::less<>> buckets_;  // guarded by mu_
  Buckets& For(std::string_view tenant);
};

// Retry-After's value: whole seconds, rounded up, at least 1.
std::string RetryAfterSeconds(Duration d);

}  // namespace hearsay::net
