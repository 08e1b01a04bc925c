// Cluster-wide tenant rate limits on three real nodes (net::Daemon, the simulated engine,
// loopback sockets): a tenant sending to every entry node gets about its limit in total, not
// three times it (docs/security.md, "Tenants").
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hearsay/net/api_keys.h"
#include "hearsay/net/blocking_client_test_util.h"
#include "hearsay/net/daemon.h"
#include "hearsay/net/daemon_test_util.h"
#include "hearsay/testutil/eventually.h"

namespace hearsay::net {
namespace {

using testing::Metric;

using namespace std::chrono_literals;
using json = nlohmann::json;
using testutil::Eventually;

DaemonConfig Config(const std::string& keys_file) {
  DaemonConfig c = testing::LoopbackConfig();
  c.cluster_key_file = testing::ClusterKeyFile("cluster_limits");
  c.api_keys_file = keys_file;
  return c;
}

class Caller : public testing::BlockingClient {
 public:
  int Complete(const std::string& hp, const std::string& key) {
    const json body = {{"model", "hearsay-sim"}, {"prompt", "hi"}, {"max_tokens", 1}};
    return Call("POST", hp, "/v1/completions", body.dump(), {{"authorization", "Bearer " + key}})
        .status;
  }
};

TEST(ClusterLimitsDaemonTest, ThreeEntryNodesTogetherAdmitAboutTheTenantsLimit) {
  const std::string file = testing::TempPath("cluster_limits", "keys");
  std::remove(file.c_str());
  constexpr uint64_t kLimit = 8;  // requests per second, for the whole cluster
  std::array<uint8_t, 38> random{};
  for (size_t i = 0; i < random.size(); ++i) random[i] = static_cast<uint8_t>(7 + i * 13);
  const NewApiKey key = MakeApiKey({"acme", {kLimit, 0}, false}, random).value();
  std::ofstream(file, std::ios::app) << key.line;
  spdlog::set_level(spdlog::level::warn);
  std::vector<std::unique_ptr<Daemon>> nodes;
  for (int i = 0; i < 3; ++i) {
    DaemonConfig c = Config(file);
    if (i > 0) c.join = {nodes[0]->gossip_address()};
    Result<std::unique_ptr<Daemon>> d = Daemon::Create(std::move(c));
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    nodes.push_back(std::move(*d));
  }
  Caller c;
  ASSERT_TRUE(Eventually([&] {
    for (const auto& n : nodes) {
      if (json::parse(c.Call("GET", n->http_address(), "/cluster").body)["members"].size() != 2) {
        return false;
      }
    }
    return true;
  }));
  // The client sends to the three nodes in turn, as fast as they answer (far above the limit).
  size_t turn = 0;
  auto send = [&] { return c.Complete(nodes[turn++ % 3]->http_address(), key.key); };
  // The client keeps one pace throughout; every second it looks at the nodes' metrics, until
  // every node holds both peers' usage of the tenant (the first gossip round) and enforces its
  // share, about a third each, adding up to about 1.
  auto send_for = [&](std::chrono::milliseconds d, int* admitted, int* limited) {
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < d) {
      const int status = send();
      if (admitted != nullptr) *admitted += status == 200 ? 1 : 0;
      if (limited != nullptr) *limited += status == 429 ? 1 : 0;
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::string why;
  ASSERT_TRUE(Eventually(
      [&] {
        send_for(1000ms, nullptr, nullptr);
        double shares = 0;
        for (const auto& n : nodes) {
          const std::string m = c.Call("GET", n->http_address(), "/metrics").body;
          const double share =
              Metric(m, "hearsay_tenant_limit_share{limit=\"rps\",tenant=\"acme\"}");
          why = "peers " + std::to_string(Metric(m, "hearsay_tenant_usage_peers")) + " share " +
                std::to_string(share);
          if (Metric(m, "hearsay_tenant_usage_peers") != 2 || share < 0.1 || share > 0.7) {
            return false;
          }
          shares += share;
        }
        why = "shares add up to " + std::to_string(shares);
        return shares > 0.7 && shares < 1.3;
      },
      40s))
      << why;
  // Admitted over a measured stretch: about the limit in total. Alone, each node would admit
  // the limit (3x in total); the bounds leave room for a noisy machine.
  int admitted = 0, limited = 0;
  const double seconds = send_for(6000ms, &admitted, &limited);
  const double rate = admitted / seconds;
  std::printf(
      "cluster-wide limit %llu rps over 3 entry nodes: admitted %.2f rps (%d admitted, "
      "%d refused in %.1f s)\n",
      static_cast<unsigned long long>(kLimit), rate, admitted, limited, seconds);
  EXPECT_GT(limited, admitted);  // the client offered far more than the limit
  EXPECT_LT(rate, 1.6 * kLimit);
  EXPECT_GT(rate, 0.4 * kLimit);
  for (auto& n : nodes) EXPECT_TRUE(n->Shutdown());
  std::remove(file.c_str());
}

}  // namespace
}  // namespace hearsay::net
