// What tenants cost a request: the API-key check, the rate-limit buckets, and a namespaced key
// chain beside the plain one (docs/security.md, "Tenants").
#include <benchmark/benchmark.h>

#include <array>
#include <string>
#include <vector>

#include "hearsay/net/api_keys.h"
#include "hearsay/net/tenant_limiter.h"
#include "hearsay/prefix/block_keys.h"

namespace hearsay::net {
namespace {

std::array<uint8_t, 38> Random(uint32_t seed) {
  std::array<uint8_t, 38> r{};
  for (size_t i = 0; i < r.size(); ++i) r[i] = static_cast<uint8_t>(seed * 2654435761u >> (i % 24));
  for (size_t i = 0; i < 4; ++i) r[i] = static_cast<uint8_t>(seed >> (8 * i));
  return r;
}

// One key checked against a file of state.range(0) keys.
void BM_ApiKeyAuthenticate(benchmark::State& state) {
  std::string file;
  std::string key;
  for (int i = 0; i < state.range(0); ++i) {
    NewApiKey k = MakeApiKey({"tenant" + std::to_string(i % 100), {}, false},
                             Random(static_cast<uint32_t>(i + 1)))
                      .value();
    file += k.line;
    if (i == state.range(0) / 2) key = k.key;
  }
  const ApiKeys keys = ApiKeys::Parse(file).value();
  for (auto _ : state) benchmark::DoNotOptimize(keys.Authenticate(key));
}
BENCHMARK(BM_ApiKeyAuthenticate)->Arg(10)->Arg(10000);

void BM_TenantLimiterAdmit(benchmark::State& state) {
  TenantLimiter limiter;
  const TenantLimits limits{1'000'000'000, 1'000'000'000};
  int64_t ns = 0;
  for (auto _ : state) {
    const TimePoint now{Duration(ns += 1000)};
    benchmark::DoNotOptimize(limiter.AdmitRequest("acme", limits, now));
    benchmark::DoNotOptimize(limiter.AdmitTokens("acme", limits, 2000, now));
  }
}
BENCHMARK(BM_TenantLimiterAdmit);

// The key chain of a 2,048-token prompt, in the shared namespace (0) and in a tenant's.
void BM_NamespacedKeys(benchmark::State& state) {
  const prefix::BlockKeyer keyer =
      prefix::BlockKeyer::Create("0123456789abcdef-cluster-secret", "m", "").value();
  std::vector<prefix::TokenId> prompt(2048);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<prefix::TokenId>(i * 7919);
  const uint64_t ns = state.range(0) == 0 ? 0 : keyer.NamespaceId("acme", "");
  std::vector<prefix::BlockKey> out;
  for (auto _ : state) {
    out.clear();
    prefix::AppendNamespacedKeys(keyer, ns, prompt, &out);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_NamespacedKeys)->Arg(0)->Arg(1);

}  // namespace
}  // namespace hearsay::net
