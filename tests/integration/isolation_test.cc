// Loud isolation: a node started with another cluster key, or with --insecure, beside a keyed
// pair never joins; it says so in /health ("status": "degraded" with the reason, still HTTP 200),
// in /cluster and in its log, and the keyed nodes count the gossip they cannot open and warn
// (docs/operations.md, "Health and isolation").
#include <gtest/gtest.h>
#include <sodium.h>

#include <fstream>

#include "hearsay/gossip/keyring.h"
#include "hearsay/launch/child_process.h"
#include "hearsay/launch/temp_dir.h"
#include "integration_env.h"

namespace hearsay::integration {
namespace {

// The codes of a /health body's issues, comma-separated ("" if none or unreadable).
std::string IssueCodes(const json& health) {
  std::string codes;
  if (!health.is_object() || !health.contains("issues")) return codes;
  for (const auto& i : health["issues"]) codes += i.value("code", std::string("?")) + ",";
  return codes;
}

// Waits (bounded) until `address`'s /health says `status`; returns the last body.
json WaitForHealth(const std::string& address, const std::string& status) {
  json last;
  (void)testutil::Eventually(
      [&] {
        Result<HttpResponse> r = testkit::HttpGet(address, "/health", kCallTimeout);
        if (!r.ok()) return false;
        EXPECT_EQ(r->status, 200) << r->body;  // degraded but serving
        last = json::parse(r->body, nullptr, false);
        return last.is_object() && last.value("status", "") == status;
      },
      40s);
  return last;
}

TEST(IsolationTest, ANodeThatCannotJoinSaysSoAndTheKeyedNodesCountIt) {
  ASSERT_GE(sodium_init(), 0);
  auto dir = launch::TempDir::Create("hearsay-isolation-");
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  std::unique_ptr<LocalCluster> cluster = StartCluster(ClusterOptions(2));
  ASSERT_NE(cluster, nullptr);
  std::array<uint8_t, gossip::kClusterKeyBytes> bytes{};
  randombytes_buf(bytes.data(), bytes.size());
  const std::string wrong_key = (*dir)->File("wrong.key");
  std::ofstream(wrong_key) << gossip::ClusterKey::FromBytes(bytes).value().ToBase64() << "\n";

  Result<std::vector<uint16_t>> ports = launch::PickFreeLoopbackPorts(4, /*udp_too=*/true);
  ASSERT_TRUE(ports.ok());
  struct Outsider {
    std::string name;
    std::vector<std::string> key_flags;
    std::string http;
    std::string log;
    std::unique_ptr<launch::ChildProcess> process;
  } outsiders[] = {{"wrong-key", {"--cluster-key-file", wrong_key}, "", "", nullptr},
                   {"insecure", {"--insecure"}, "", "", nullptr}};
  for (size_t i = 0; i < 2; ++i) {
    Outsider& o = outsiders[i];
    o.http = "127.0.0.1:" + std::to_string((*ports)[2 * i]);
    o.log = (*dir)->File(o.name + ".log");
    std::vector<std::string> argv = {
        HEARSAY_BINARY, "node",
        "--http",       o.http,
        "--gossip",     "127.0.0.1:" + std::to_string((*ports)[2 * i + 1]),
        "--node-id",    o.name,
        "--join",       cluster->node(0).gossip_address};
    argv.insert(argv.end(), o.key_flags.begin(), o.key_flags.end());
    auto child = launch::ChildProcess::Spawn(argv, o.log);
    ASSERT_TRUE(child.ok()) << child.status().ToString();
    o.process = std::move(child).value();
  }

  for (Outsider& o : outsiders) {
    SCOPED_TRACE(o.name);
    const json health = WaitForHealth(o.http, "degraded");
    ASSERT_EQ(health.value("status", ""), "degraded")
        << health.dump() << launch::TailFile(o.log, 30);
    EXPECT_NE(IssueCodes(health).find("alone"), std::string::npos) << health.dump();
    Result<HttpResponse> cluster_view = testkit::HttpGet(o.http, "/cluster", kCallTimeout);
    ASSERT_TRUE(cluster_view.ok());
    EXPECT_EQ(BodyJson(*cluster_view)["self"]["health"], "degraded") << cluster_view->body;
    EXPECT_NE(launch::TailFile(o.log, 200).find("issue=alone"), std::string::npos)
        << launch::TailFile(o.log, 30);
    // It still serves its own clients.
    Result<HttpResponse> served = PostCompletion(o.http, CompletionBody("alone but serving", 2));
    ASSERT_TRUE(served.ok());
    EXPECT_EQ(served->status, 200) << served->body;
  }

  // The seed drops both outsiders' gossip, counts it by reason and warns, but stays ok: it has
  // its peer.
  const std::string& seed = cluster->node(0).http_address;
  auto metrics = Metrics(seed);
  ASSERT_TRUE(metrics.ok()) << metrics.status().ToString();
  EXPECT_GT(testkit::SumMetric(*metrics, "hearsay_gossip_unopenable_total",
                               {{"reason", "unauthenticated"}}),
            0);
  EXPECT_GT(testkit::SumMetric(*metrics, "hearsay_gossip_unopenable_total",
                               {{"reason", "security-mismatch"}}),
            0);
  EXPECT_EQ(testkit::SumMetric(*metrics, "hearsay_degraded"), 0);
  Result<HttpResponse> seed_health = testkit::HttpGet(seed, "/health", kCallTimeout);
  ASSERT_TRUE(seed_health.ok());
  EXPECT_EQ(BodyJson(*seed_health)["status"], "ok") << seed_health->body;
  for (Outsider& o : outsiders) o.process->Kill();
}

}  // namespace
}  // namespace hearsay::integration
