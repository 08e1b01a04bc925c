#include "hearsay/gossip/usage.h"

#include "hearsay/gossip/wire.h"

namespace hearsay::gossip {

uint64_t TenantHash(std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : name) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

bool ValidUsage(const std::vector<TenantUsage>& tenants) {
  if (tenants.size() > kMaxUsageTenants) return false;
  for (size_t i = 0; i < tenants.size(); ++i) {
    if (i > 0 && tenants[i].tenant <= tenants[i - 1].tenant) return false;
    if (tenants[i].milli_requests_ps > kMaxUsageRate ||
        tenants[i].tokens_per_minute > kMaxUsageRate) {
      return false;
    }
  }
  return true;
}

void PutUsageRecord(ByteWriter& w, const UsageRecord& record) {
  w.PutVarint(record.version);
  w.PutVarint(record.tenants.size());
  for (const TenantUsage& t : record.tenants) {
    w.PutU64(t.tenant);
    w.PutVarint(t.milli_requests_ps);
    w.PutVarint(t.tokens_per_minute);
  }
}

UsageRecord ReadUsageRecord(ByteReader& r) {
  UsageRecord rec;
  rec.version = r.ReadVarint();
  const size_t n = r.ReadCount(kMaxUsageTenants, 8 + 1 + 1);
  rec.tenants.reserve(n);
  for (size_t i = 0; i < n && r.ok(); ++i) {
    TenantUsage t;
    t.tenant = r.ReadU64();
    t.milli_requests_ps = r.ReadVarint();
    t.tokens_per_minute = r.ReadVarint();
    if (t.milli_requests_ps > kMaxUsageRate || t.tokens_per_minute > kMaxUsageRate) {
      r.Fail("usage rate out of range");
    }
    if (i > 0 && t.tenant <= rec.tenants.back().tenant) r.Fail("usage tenants not increasing");
    rec.tenants.push_back(t);
  }
  return rec;
}

size_t EncodedSize(const UsageRecord& record) {
  size_t n = VarintSize(record.version) + VarintSize(record.tenants.size());
  for (const TenantUsage& t : record.tenants) {
    n += 8 + VarintSize(t.milli_requests_ps) + VarintSize(t.tokens_per_minute);
  }
  return n;
}

}  // namespace hearsay::gossip
