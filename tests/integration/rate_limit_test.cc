// Cluster-wide tenant rate limits on three `hearsay node` processes: a tenant whose client sends
// to every entry node in turn gets about its limit in total, not three times it (docs/security.md,
// "Tenants"). The bounds leave room for a noisy 2-core machine: the client only has to offer well
// above the limit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>

#include "hearsay/net/api_keys.h"
#include "hearsay/testkit/metrics_text.h"
#include "integration_env.h"

namespace hearsay::integration {
namespace {

TEST(RateLimitTest, ThreeEntryNodesTogetherAdmitAboutTheTenantsLimit) {
  constexpr uint64_t kLimit = 10;  // requests per second, for the whole cluster
  std::array<uint8_t, 38> random{};
  for (size_t i = 0; i < random.size(); ++i) random[i] = static_cast<uint8_t>(3 + i * 29);
  const net::NewApiKey key = net::MakeApiKey({"acme", {kLimit, 0}, false}, random).value();
  LocalClusterOptions o = ClusterOptions(3);
  const std::string keys_file =
      ::testing::TempDir() + "/hearsay_rate_limit_" + std::to_string(::getpid()) + ".keys";
  std::ofstream(keys_file, std::ios::trunc) << key.line;
  o.extra_flags = {"--api-keys-file", keys_file};
  std::unique_ptr<LocalCluster> cluster = StartCluster(o);
  ASSERT_NE(cluster, nullptr);
  const std::string body = CompletionBody("hi", 1);
  const testkit::HttpHeaders auth = {{"authorization", "Bearer " + key.key}};
  size_t turn = 0;
  // The client sends to the three nodes in turn, one request at a time, as fast as they answer.
  auto send_for = [&](std::chrono::milliseconds d, int* admitted, int* refused) {
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < d) {
      Result<HttpResponse> r = testkit::HttpPostJson(cluster->node(turn++ % 3).http_address,
                                                     "/v1/completions", body, kCallTimeout, auth);
      if (!r.ok()) continue;
      if (admitted != nullptr) *admitted += r->status == 200 ? 1 : 0;
      if (refused != nullptr) *refused += r->status == 429 ? 1 : 0;
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  // At one pace throughout: until every node holds both peers' usage (the first gossip round)
  // and the shares of the limit the nodes enforce add up to about 1.
  std::string why;
  ASSERT_TRUE(testutil::Eventually(
      [&] {
        send_for(1000ms, nullptr, nullptr);
        double shares = 0;
        for (size_t i = 0; i < 3; ++i) {
          Result<std::vector<testkit::MetricSample>> m = Metrics(cluster->node(i).http_address);
          if (!m.ok()) return false;
          const std::optional<double> peers = testkit::FindMetric(*m, "hearsay_tenant_usage_peers");
          const std::optional<double> share = testkit::FindMetric(
              *m, "hearsay_tenant_limit_share", {{"tenant", "acme"}, {"limit", "rps"}});
          why = "node " + std::to_string(i) + ": peers " + std::to_string(peers.value_or(-1)) +
                ", share " + std::to_string(share.value_or(-1));
          if (peers != 2.0 || !share) return false;
          shares += *share;
        }
        why = "shares add up to " + std::to_string(shares);
        return shares > 0.7 && shares < 1.3;
      },
      60s))
      << why << "\n"
      << cluster->AllLogTails();
  int admitted = 0, refused = 0;
  const double seconds = send_for(8000ms, &admitted, &refused);
  const double rate = admitted / seconds;
  std::printf(
      "cluster-wide limit %llu rps over 3 node processes: admitted %.2f rps (%d admitted, "
      "%d refused in %.1f s)\n",
      static_cast<unsigned long long>(kLimit), rate, admitted, refused, seconds);
  ASSERT_GT(refused, admitted) << "the client did not offer much above the limit";
  EXPECT_LT(rate, 1.5 * kLimit);  // per-node limits would admit 3x
  EXPECT_GT(rate, 0.5 * kLimit);
  std::remove(keys_file.c_str());
}

}  // namespace
}  // namespace hearsay::integration
