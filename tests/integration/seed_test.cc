// --seed end to end: a node's randomness comes from its seed, so two nodes with the same seed,
// given the same requests over the same membership, make the same `random` routing choices, and
// a node with another seed does not. The seed in use is logged at start.
#include <string>
#include <vector>

#include "integration_env.h"

namespace hearsay::integration {
namespace {

constexpr int kRequests = 32;

// Whether each of kRequests requests entering node `entry` was forwarded ('F') or served there
// ('L'), by the entry's hearsay_requests_total{decision="forwarded"} after each.
std::string Choices(LocalCluster& cluster, size_t entry) {
  const std::string& address = cluster.node(entry).http_address;
  auto forwarded = [&]() -> double {
    Result<std::vector<testkit::MetricSample>> m = Metrics(address);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? testkit::SumMetric(*m, kRequestsMetric, {{"decision", "forwarded"}}) : -1;
  };
  std::string out;
  double before = forwarded();
  for (int i = 0; i < kRequests; ++i) {
    Result<HttpResponse> r = PostCompletion(
        address, CompletionBody(Words("seed" + std::to_string(entry) + "r" + std::to_string(i), 24),
                                /*max_tokens=*/2));
    EXPECT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().ToString());
    const double after = forwarded();
    out += after > before ? 'F' : 'L';
    before = after;
  }
  return out;
}

TEST(SeedTest, SameSeedSameRandomChoicesAndTheSeedIsLogged) {
  LocalClusterOptions o = ClusterOptions(3, "random");
  o.per_node_flags = {{"--seed", "1234"}, {"--seed", "1234"}, {"--seed", "98765"}};
  std::unique_ptr<LocalCluster> cluster = StartCluster(o);
  ASSERT_NE(cluster, nullptr);

  const std::string a = Choices(*cluster, 0);
  const std::string b = Choices(*cluster, 1);
  const std::string c = Choices(*cluster, 2);
  // Each node's self candidate comes first, then its two peers: the same draws give the same
  // local-or-forwarded pattern. Both kinds occur (a random policy over 3 members).
  EXPECT_EQ(a, b);
  EXPECT_NE(a.find('F'), std::string::npos) << a;
  EXPECT_NE(a.find('L'), std::string::npos) << a;
  // Another seed, other choices (equal by chance with probability (5/9)^32, about 1e-8).
  EXPECT_NE(a, c);

  EXPECT_NE(cluster->LogTail(0, 2000).find(" seed=1234 "), std::string::npos)
      << cluster->LogTail(0);
  EXPECT_NE(cluster->LogTail(2, 2000).find(" seed=98765 "), std::string::npos)
      << cluster->LogTail(2);
}

TEST(SeedTest, WithoutASeedTheNodeLogsTheOneItDrew) {
  std::unique_ptr<LocalCluster> cluster = StartCluster(ClusterOptions(1, "random"));
  ASSERT_NE(cluster, nullptr);
  const std::string log = cluster->LogTail(0, 2000);
  const size_t at = log.find("event=start");
  ASSERT_NE(at, std::string::npos) << log;
  const size_t seed = log.find(" seed=", at);
  ASSERT_NE(seed, std::string::npos) << log;
  const std::string value = log.substr(seed + 6, log.find(' ', seed + 6) - seed - 6);
  EXPECT_FALSE(value.empty());
  EXPECT_NE(value, "0") << "a seed drawn from the OS is logged, not the default 0";
  // The start line lists the settings that differ from the defaults, not all of them.
  const size_t end = log.find('\n', at);
  const std::string line = log.substr(at, end == std::string::npos ? end : end - at);
  EXPECT_LT(line.size(), 700u) << line;
  EXPECT_NE(line.find("settings=\""), std::string::npos) << line;
  EXPECT_EQ(line.find("limits.max_json_depth="), std::string::npos) << line;
}

}  // namespace
}  // namespace hearsay::integration
