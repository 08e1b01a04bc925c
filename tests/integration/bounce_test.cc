// Late binding of forwards between two real nodes (node::NodeOptions::bounce_margin_ms): the
// entry forwards with X-Hearsay-Bounce-Above-Ms, a target that would be slower than that sends
// the request back unserved ("bounced"), and the entry routes it again without that peer; the
// client still gets its answer. Asserted from the answer and both nodes' /metrics.
//
// The setup makes the bounce deterministic, with no race against gossip: node 1 (the target)
// runs the slow `consumer` engine preset (0.25 ms per prefill token, t0 30 ms), node 0 (the
// entry) the fast default (0.03 ms, t0 6 ms). The entry prices every member with its own cost
// model (a simulated engine reports no measured speed), so it believes the target as fast as
// itself. Node 1 holds a 1,600-token prefix; a request entering at node 0 with that prefix plus
// 400 new tokens is priced by node 0 at about 18 ms at the holder (400 new tokens) against about
// 69 ms here (2,000 new tokens), so it is forwarded, with 69 ms as the threshold. Node 1 prices
// itself from its exact cache and its own preset: 30 + 0.25 × 400 + ... ≈ 137 ms, over 69 ms by
// far more than the 1 ms margin, so it bounces; node 0, with no other peer, serves the request.
//
// Without the bounce, node 1 would serve the forward: the answer would report the prefix as
// cached and node 1's served counter would move, as the control test below shows with a target
// as fast as the entry believes; so every assertion of the bounce test would fail.
#include <gtest/gtest.h>

#include "integration_env.h"

namespace hearsay::integration {
namespace {

constexpr const char* kBouncedOut = "hearsay_forwards_bounced_total";
constexpr const char* kBouncedIn = "hearsay_peer_requests_bounced_total";
constexpr size_t kEntry = 0;
constexpr size_t kTarget = 1;
// 100 blocks: 7 gossip landmarks (one per 16 blocks), so the entry's estimate of the holder's
// cache covers nearly all of it.
constexpr int kPrefixWords = 1600;
constexpr int kNewWords = 400;

// Node `address`'s counter `name` (summed over labels `labels`), or -1 (failing the test).
double Counter(const std::string& address, const char* name,
               const testkit::MetricLabels& labels = {}) {
  auto metrics = Metrics(address);
  EXPECT_TRUE(metrics.ok()) << metrics.status().ToString();
  return metrics.ok() ? testkit::SumMetric(*metrics, name, labels) : -1;
}

// The counters a bounce moves, at both nodes.
struct Counters {
  double entry_bounced = 0;
  double entry_local = 0;
  double entry_forwarded = 0;
  double target_bounced = 0;
  double target_served_for_peers = 0;
};

Counters Read(LocalCluster& cluster) {
  const std::string& entry = cluster.node(kEntry).http_address;
  const std::string& target = cluster.node(kTarget).http_address;
  Counters c;
  c.entry_bounced = Counter(entry, kBouncedOut);
  c.entry_local = Counter(entry, kRequestsMetric, {{"decision", "local"}});
  c.entry_forwarded = Counter(entry, kRequestsMetric, {{"decision", "forwarded"}});
  c.target_bounced = Counter(target, kBouncedIn);
  c.target_served_for_peers = Counter(target, kPeerServedMetric);
  return c;
}

// Two nodes, the target on `target_preset` and serving its own clients itself (so the prefix is
// planted there, not routed away); the prefix planted on the target, and the entry knowing it
// (gossiped cache summary, measured RTT). Returns null after failing the test.
std::unique_ptr<LocalCluster> StartWithPrefixOnTarget(const std::string& target_preset,
                                                      const std::string& prefix) {
  LocalClusterOptions o = ClusterOptions(2);
  o.per_node_flags = {{}, {"--policy", "local", "--engine-preset", target_preset}};
  std::unique_ptr<LocalCluster> cluster = StartCluster(o);
  if (cluster == nullptr) return nullptr;
  Result<HttpResponse> plant =
      PostCompletion(cluster->node(kTarget).http_address, CompletionBody(prefix + " planted", 1));
  EXPECT_TRUE(plant.ok() && plant->status == 200)
      << (plant.ok() ? plant->body : plant.status().ToString());
  Result<size_t> holder = WaitForSoleHolder(*cluster, 15s);
  EXPECT_TRUE(holder.ok() && *holder == kTarget)
      << (holder.ok() ? "holder " + std::to_string(*holder) : holder.status().ToString()) << "\n"
      << cluster->AllLogTails();
  // The entry prices the forward with its measured delay to the target.
  const bool measured = testutil::Eventually([&] {
    Result<launch::ClusterView> view = cluster->View(kEntry);
    const launch::MemberInfo* m = view.ok() ? view->Find(cluster->node(kTarget).node_id) : nullptr;
    return m != nullptr && m->rtt_ms.has_value();
  });
  EXPECT_TRUE(measured) << "the entry never measured its RTT to the target";
  if (::testing::Test::HasFailure()) return nullptr;
  return cluster;
}

TEST(BounceTest, SlowTargetBouncesTheForwardAndTheEntryServesIt) {
  const std::string prefix = Words("bounce", kPrefixWords);
  std::unique_ptr<LocalCluster> cluster = StartWithPrefixOnTarget("consumer", prefix);
  ASSERT_NE(cluster, nullptr);
  const Counters before = Read(*cluster);
  ASSERT_EQ(before.entry_bounced, 0);
  ASSERT_EQ(before.target_bounced, 0);

  Result<HttpResponse> r =
      PostCompletion(cluster->node(kEntry).http_address,
                     CompletionBody(prefix + " " + Words("ask", kNewWords), 4));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->status, 200) << r->body << "\n" << cluster->AllLogTails();
  const json answer = BodyJson(*r);
  EXPECT_GE(PromptTokens(answer), kPrefixWords + kNewWords) << r->body;
  EXPECT_EQ(answer["usage"]["completion_tokens"], 4) << r->body;
  ASSERT_TRUE(answer["choices"].is_array() && answer["choices"].size() == 1) << r->body;
  EXPECT_FALSE(answer["choices"][0]["text"].get<std::string>().empty()) << r->body;
  // Served by the entry, which never saw the prefix: nothing cached. (The target would have
  // found ~1,600 tokens cached.)
  EXPECT_EQ(CachedTokens(answer), 0) << r->body;

  const Counters after = Read(*cluster);
  EXPECT_EQ(after.entry_bounced, before.entry_bounced + 1) << cluster->AllLogTails();
  EXPECT_EQ(after.target_bounced, before.target_bounced + 1);
  EXPECT_EQ(after.target_served_for_peers, before.target_served_for_peers);
  EXPECT_EQ(after.entry_local, before.entry_local + 1);
  EXPECT_EQ(after.entry_forwarded, before.entry_forwarded);
  // A bounce is the peer protocol at work, not an error: no 503 counted at either node (an alert
  // on hearsay_http_errors_total{status="503"} must not fire), and the answer names its server.
  EXPECT_EQ(Counter(cluster->node(kTarget).http_address, "hearsay_http_errors_total",
                    {{"status", "503"}}),
            0);
  EXPECT_EQ(Counter(cluster->node(kEntry).http_address, "hearsay_http_errors_total"), 0);
  EXPECT_EQ(r->Header("x-hearsay-served-by").value_or(""), cluster->node(kEntry).node_id);
  EXPECT_EQ(r->Header("x-hearsay-entry").value_or(""), cluster->node(kEntry).node_id);
}

// The control: the same request, with a target as fast as the entry believes, is forwarded and
// served there (so the bounce above is the target's own speed at work, not the setup).
TEST(BounceTest, TargetAsFastAsBelievedServesTheForward) {
  const std::string prefix = Words("served", kPrefixWords);
  std::unique_ptr<LocalCluster> cluster = StartWithPrefixOnTarget("h100-llama3-8b", prefix);
  ASSERT_NE(cluster, nullptr);
  const Counters before = Read(*cluster);

  Result<HttpResponse> r =
      PostCompletion(cluster->node(kEntry).http_address,
                     CompletionBody(prefix + " " + Words("ask", kNewWords), 4));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->status, 200) << r->body;
  const json answer = BodyJson(*r);
  EXPECT_EQ(answer["usage"]["completion_tokens"], 4) << r->body;
  // Every full block of the prefix but possibly the last is a hit at the target.
  EXPECT_GE(CachedTokens(answer), (kPrefixWords / kBlockTokens - 1) * kBlockTokens) << r->body;

  const Counters after = Read(*cluster);
  EXPECT_EQ(after.entry_bounced, before.entry_bounced);
  EXPECT_EQ(after.target_bounced, before.target_bounced);
  EXPECT_EQ(after.target_served_for_peers, before.target_served_for_peers + 1);
  EXPECT_EQ(after.entry_forwarded, before.entry_forwarded + 1);
  EXPECT_EQ(after.entry_local, before.entry_local);
}

}  // namespace
}  // namespace hearsay::integration
