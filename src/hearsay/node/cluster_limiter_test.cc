#include "hearsay/node/cluster_limiter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hearsay::node {
namespace {

// "p3" (GCC 12 warns wrongly about "p" + std::to_string(3)).
std::string Name(const char* prefix, size_t i) {
  std::string out = prefix;
  out.append(std::to_string(i));
  return out;
}

TimePoint T(double seconds) { return TimePoint{} + FromSeconds(seconds); }

// Offers `per_second` requests a second of tenant "a" from `from` to `to` at `l`; returns how
// many were admitted.
int Offer(ClusterLimiter& l, uint64_t rps, double per_second, double from, double to) {
  int admitted = 0;
  const double step = 1.0 / per_second;
  for (double t = from; t < to - 1e-9; t += step) admitted += l.AdmitRequest("a", rps, T(t)).ok;
  return admitted;
}

gossip::UsageRecord Record(uint64_t version, double rps, uint64_t tpm = 0) {
  return gossip::UsageRecord{version,
                             {{gossip::TenantHash("a"), static_cast<uint64_t>(rps * 1000), tpm}}};
}

TEST(ClusterLimiterTest, AloneItIsOneTokenBucket) {
  ClusterLimiter l;
  // 10 rps allowed, 40 offered for 10 s: the full bucket (10), then 10 a second.
  const int admitted = Offer(l, 10, 40, 0, 10);
  EXPECT_NEAR(admitted, 10 + 100, 2);
  const ClusterLimiter::Verdict v = l.AdmitRequest("a", 10, T(10));
  EXPECT_EQ(v.share, 1.0);
  // Unlimited tenants are counted, never refused.
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(l.AdmitRequest("b", 0, T(11)).ok);
}

TEST(ClusterLimiterTest, ShareFollowsTheOfferedRatesOfPeers) {
  ClusterLimiter l;
  // Three peers report 10 rps each for "a"; this node offers 10 rps too: a quarter of 20 rps.
  for (int p = 0; p < 3; ++p) l.OnPeerUsage(Name("p", p), 1, Record(5, 10), T(0));
  Offer(l, 20, 10, 0, 4.5);
  for (int p = 0; p < 3; ++p) l.OnPeerUsage(Name("p", p), 1, Record(6, 10), T(4.5));
  const int admitted = Offer(l, 20, 10, 4.5, 8.5);
  EXPECT_NEAR(admitted, 20, 4);  // 5 rps for 4 s (the bucket stays near empty)
  const auto tenants = l.Tenants(T(8.5));
  ASSERT_EQ(tenants.size(), 1u);
  EXPECT_NEAR(tenants[0].rps_share, 0.25, 0.05);
  EXPECT_NEAR(tenants[0].cluster_offered_rps, 40, 3);
  EXPECT_EQ(l.fresh_peers(T(8.5)), 3u);
}

TEST(ClusterLimiterTest, StaleRecordsAndGonePeersStopCounting) {
  ClusterLimiterOptions o;
  o.stale_after = FromSeconds(3);
  ClusterLimiter l(o);
  l.OnPeerUsage("p", 1, Record(5, 30), T(0));
  l.OnPeerUsage("q", 1, Record(5, 30), T(2));
  l.AdmitRequest("a", 10, T(0.1));
  EXPECT_LT(l.Tenants(T(2.5))[0].rps_share, 0.1);
  EXPECT_EQ(l.fresh_peers(T(2.9)), 2u);
  EXPECT_EQ(l.fresh_peers(T(3.0)), 1u);  // p's record went stale
  l.OnPeerChanged("q", 1, true);         // still alive: counts
  EXPECT_EQ(l.fresh_peers(T(3.0)), 1u);
  l.OnPeerChanged("q", 1, false);  // dead
  EXPECT_EQ(l.fresh_peers(T(3.0)), 0u);
  EXPECT_EQ(l.Tenants(T(3.0))[0].rps_share, 1.0);
  EXPECT_EQ(l.Tenants(T(3.0))[0].cluster_offered_rps, l.Tenants(T(3.0))[0].offered_rps);
}

TEST(ClusterLimiterTest, ANewerGenerationReplacesAnOlderOneAndAnEmptyRecordClears) {
  ClusterLimiter l;
  l.AdmitRequest("a", 10, T(0));
  l.OnPeerUsage("p", 2, Record(5, 30), T(0));
  l.OnPeerUsage("p", 1, Record(9, 90), T(0.1));  // late record of the old generation: ignored
  EXPECT_NEAR(l.Tenants(T(0.1))[0].cluster_offered_rps - l.Tenants(T(0.1))[0].offered_rps, 30,
              1e-6);
  l.OnPeerUsage("p", 3, Record(1, 60), T(0.2));
  EXPECT_NEAR(l.Tenants(T(0.2))[0].cluster_offered_rps - l.Tenants(T(0.2))[0].offered_rps, 60,
              1e-6);
  l.OnPeerChanged("p", 4, true);  // restarted: the old generation's record goes
  EXPECT_EQ(l.fresh_peers(T(0.25)), 0u);
  l.OnPeerUsage("p", 4, Record(1, 60), T(0.25));
  l.OnPeerUsage("p", 4, gossip::UsageRecord{2, {}}, T(0.3));
  EXPECT_EQ(l.fresh_peers(T(0.3)), 0u);
  EXPECT_EQ(l.Tenants(T(0.3))[0].rps_share, 1.0);
}

TEST(ClusterLimiterTest, TokensUseTheirOwnShare) {
  ClusterLimiter l;
  // This node offers 1,000 tokens a second (100-token requests every 0.1 s), a peer three times
  // that: this node's bucket is a quarter of 60,000 tpm, 250 tokens a second.
  const uint64_t peer_tpm = 3 * 60'000;
  int admitted = 0;
  for (int i = 0; i < 1200; ++i) {
    if (i % 5 == 0) l.OnPeerUsage("p", 1, Record(1 + i, 0, peer_tpm), T(i * 0.1));
    const bool ok = l.AdmitTokens("a", 60'000, 100, T(i * 0.1)).ok;
    if (i >= 600) admitted += ok ? 1 : 0;  // after the first full bucket has drained
  }
  EXPECT_NEAR(admitted, 60 * 2.5, 10);
  EXPECT_NEAR(l.Tenants(T(120))[0].tpm_share, 0.25, 0.03);
}

TEST(ClusterLimiterTest, PublishesEveryIntervalWithTrafficAndOnceWhenIdle) {
  ClusterLimiterOptions o;
  o.publish_interval = FromSeconds(1);
  ClusterLimiter l(o);
  EXPECT_FALSE(l.UsageToPublish(T(0)).has_value());  // nothing offered, nothing said yet
  l.AdmitRequest("unlimited", 0, T(0));              // never published
  l.AdmitRequest("a", 1000, T(0));
  l.AdmitTokens("a", 1'000'000, 600, T(0));
  auto u = l.UsageToPublish(T(0));
  ASSERT_TRUE(u.has_value());
  ASSERT_EQ(u->size(), 1u);
  EXPECT_EQ((*u)[0].tenant, gossip::TenantHash("a"));
  EXPECT_EQ((*u)[0].milli_requests_ps, 500u);    // 1 request / 2 s window
  EXPECT_EQ((*u)[0].tokens_per_minute, 18000u);  // 600 / 2 s * 60
  EXPECT_FALSE(l.UsageToPublish(T(0.5)).has_value());
  EXPECT_TRUE(l.UsageToPublish(T(1)).has_value());
  // Long idle: the rates decay to 0, one empty record says so, then nothing.
  u = l.UsageToPublish(T(100));
  ASSERT_TRUE(u.has_value());
  EXPECT_TRUE(u->empty());
  EXPECT_FALSE(l.UsageToPublish(T(200)).has_value());
}

TEST(ClusterLimiterTest, ARecordKeepsTheBusiestTenantsSortedByHash) {
  ClusterLimiter l;
  const size_t n = gossip::kMaxUsageTenants + 20;
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k <= i; ++k) l.AdmitRequest(Name("t", i), 1'000'000, T(0));
  }
  const auto u = l.UsageToPublish(T(0));
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->size(), gossip::kMaxUsageTenants);
  EXPECT_TRUE(gossip::ValidUsage(*u));
  for (const gossip::TenantUsage& t : *u) {
    // The 20 quietest (t0..t19) are left out.
    for (size_t i = 0; i < 20; ++i) EXPECT_NE(t.tenant, gossip::TenantHash(Name("t", i)));
  }
}

// N entry nodes exchange their records every 0.5 s (as gossip would, a round late); the tenant
// offers 3 R in total, unevenly. After the first exchange the total admitted stays near R.
TEST(ClusterLimiterTest, EntryNodesTogetherAdmitAboutTheLimit) {
  for (const int n : {3, 8}) {
    std::vector<ClusterLimiter> nodes(n);
    const uint64_t limit = 40;
    std::vector<double> offered(n);
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += offered[i] = 1.0 + i;  // node i offers in proportion i + 1
    for (double& o : offered) o = o / sum * 3 * limit;
    std::vector<double> next(n, 0);
    int admitted_after = 0;
    const double step = 0.001;
    for (int k = 0; k < 20000; ++k) {
      const double t = k * step;
      for (int i = 0; i < n; ++i) {
        while (next[i] <= t) {
          const bool ok = nodes[i].AdmitRequest("a", limit, T(next[i])).ok;
          if (next[i] >= 5 && ok) ++admitted_after;
          next[i] += 1.0 / offered[i];
        }
      }
      if (k % 500 == 0) {
        for (int i = 0; i < n; ++i) {
          const auto u = nodes[i].UsageToPublish(T(t));
          if (!u) continue;
          for (int j = 0; j < n; ++j) {
            if (j != i) nodes[j].OnPeerUsage(Name("n", i), 1, {uint64_t(k + 1), *u}, T(t));
          }
        }
      }
    }
    const double rate = admitted_after / 15.0;
    EXPECT_GT(rate, 0.9 * limit) << n;
    EXPECT_LT(rate, 1.1 * limit) << n;
  }
}

}  // namespace
}  // namespace hearsay::node
