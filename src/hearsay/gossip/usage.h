// Usage: what a node's clients offer it per tenant (requests and tokens per unit of time),
// gossiped as one versioned record of the node's state beside its load and service records
// (origin_store.h, wire.h). Every node enforces a tenant's rate limits on its own entry traffic
// at the share of the limit its offered traffic is of the tenant's total across live members
// (node/cluster_limiter.h), so the limits hold across the whole cluster.
//
// A tenant is named by TenantHash of its name (names stay on the node that knows them; 8 bytes
// a tenant keep the record small). A record holds at most kMaxUsageTenants tenants, sorted by
// hash, each once; the writer keeps the busiest ones when it has more. The decoder refuses
// anything else (DATA_LOSS), so a record one node accepts fits every peer's decoder.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "hearsay/common/bytes.h"

namespace hearsay::gossip {

// Limits of one usage record (enforced by the writer and by the wire decoder).
inline constexpr size_t kMaxUsageTenants = 128;
// Bound of each rate: far above any real tenant, low enough that a sum over every origin of a
// message (kMaxOrigins) stays exact in a double and cannot overflow 64 bits.
inline constexpr uint64_t kMaxUsageRate = uint64_t{1} << 40;

// One tenant's offered traffic at one entry node, as rates over the node's recent window.
struct TenantUsage {
  uint64_t tenant = 0;             // TenantHash of the tenant's name
  uint64_t milli_requests_ps = 0;  // offered requests per second, in thousandths
  uint64_t tokens_per_minute = 0;  // offered tokens (prompt + max_tokens) per minute
  friend bool operator==(const TenantUsage&, const TenantUsage&) = default;
};

// A node's usage as a versioned record of its state (0: none written yet).
struct UsageRecord {
  uint64_t version = 0;
  std::vector<TenantUsage> tenants;  // sorted by tenant, each once, at most kMaxUsageTenants
  friend bool operator==(const UsageRecord&, const UsageRecord&) = default;
};

// The tenant's 64-bit name hash (FNV-1a): the same on every node and every build.
uint64_t TenantHash(std::string_view name);
// True if `tenants` is within the limits above (sorted, unique, bounded count and rates).
bool ValidUsage(const std::vector<TenantUsage>& tenants);
// The record's wire encoding (wire.h carries it in a delta): version, count, then each tenant's
// hash (8 bytes, little-endian) and its two rates as varints.
void PutUsageRecord(ByteWriter& w, const UsageRecord& record);
// Reads one record; fails `r` if it breaks a limit above.
UsageRecord ReadUsageRecord(ByteReader& r);
size_t EncodedSize(const UsageRecord& record);

}  // namespace hearsay::gossip
