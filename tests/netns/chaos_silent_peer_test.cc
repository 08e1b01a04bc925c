// A forward to a peer that drops everything silently, on the test bed. The peer is the one
// holder of a long prefix, so every other entry forwards its sibling prompts there; then it is
// stopped (SIGSTOP: its kernel still accepts connections and bytes, nothing answers, no reset)
// and the siblings arrive before gossip suspects it. Each forward must be given up at its
// first-token deadline (a few expected times to first token, at least
// limits.forward_deadline_floor_ms) and retried elsewhere, not after the forward timeout, which
// the nodes here set to 30 s: the client's own 20 s timeout would fail the request first.
#include <csignal>

#include "chaos_watch.h"

namespace hearsay::integration::chaos_silent_peer_test {
namespace {

constexpr size_t kNodes = 4;
// 640 tokens: 40 blocks, several gossip landmarks, so every peer prices the holder far cheaper.
constexpr int kPrefixWords = 640;

double Decisions(const std::string& address, const std::string& decision) {
  Result<std::vector<testkit::MetricSample>> metrics = Metrics(address);
  EXPECT_TRUE(metrics.ok()) << metrics.status().ToString();
  return metrics.ok() ? testkit::SumMetric(*metrics, kRequestsMetric, {{"decision", decision}})
                      : -1;
}

TEST(ChaosSilentPeerTest, AForwardToAStoppedHolderIsRetriedAtItsDeadline) {
  if (Status why = launch::NetnsBed::CheckAvailable(); !why.ok()) {
    GTEST_SKIP() << "SKIPPED: the test bed needs network namespaces: " << why.ToString();
  }
  LocalClusterOptions options = HolderRoutingOptions(kNodes);
  options.extra_flags = {"--forward-timeout-ms", kLongForwardTimeoutMs};
  std::unique_ptr<BedCluster> bc = StartBedCluster(options);
  ASSERT_NE(bc, nullptr);
  LocalCluster& cluster = *bc->cluster;
  const std::string prefix = Words("silent", kPrefixWords);

  Result<HttpResponse> first =
      PostCompletion(cluster.node(0).http_address, CompletionBody(prefix + " planted", 4));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->status, 200) << first->body;
  Result<size_t> holder = WaitForSoleHolder(cluster, 15s);
  ASSERT_TRUE(holder.ok()) << holder.status().ToString();
  const size_t h = *holder;
  std::vector<size_t> entries;
  for (size_t e = 0; e < kNodes; ++e) {
    if (e == h) continue;
    entries.push_back(e);
    ASSERT_TRUE(testutil::Eventually([&] {
      Result<launch::ClusterView> view = cluster.View(e);
      const launch::MemberInfo* m = view.ok() ? view->Find(cluster.node(h).node_id) : nullptr;
      return m != nullptr && m->rtt_ms.has_value();
    })) << cluster.node(e).node_id
        << " never measured its RTT to the holder";
  }
  std::map<size_t, double> retried_before;
  for (size_t e : entries) retried_before[e] = Decisions(cluster.node(e).http_address, "retried");

  DeadRoutingWatch watch(cluster, bc->records);
  ASSERT_TRUE(cluster.Signal(h, SIGSTOP).ok());
  std::vector<Outcome> outcomes(entries.size());
  std::vector<std::thread> clients;
  for (size_t k = 0; k < entries.size(); ++k) {
    clients.emplace_back([&, k] {
      const size_t e = entries[k];
      const auto start = Clock::now();
      Result<HttpResponse> r =
          PostCompletion(cluster.node(e).http_address,
                         CompletionBody(prefix + " sibling from " + cluster.node(e).node_id, 4));
      const auto end = Clock::now();
      outcomes[k].phase = "stopped";
      outcomes[k].entry = e;
      outcomes[k].latency = std::chrono::duration_cast<std::chrono::milliseconds>(end - start);
      outcomes[k].failure = Incomplete(r);
      outcomes[k].served_by = r.ok() ? r->Header("x-hearsay-served-by").value_or("") : "";
      outcomes[k].start_ms = SteadyMs(start);
      outcomes[k].end_ms = SteadyMs(end);
    });
  }
  for (std::thread& t : clients) t.join();
  double retried = 0;
  for (size_t e : entries) {
    retried += Decisions(cluster.node(e).http_address, "retried") - retried_before[e];
  }
  ASSERT_TRUE(cluster.Signal(h, SIGCONT).ok());

  std::string latencies;
  for (const Outcome& o : outcomes) {
    EXPECT_EQ(o.failure, "") << "via node-" << o.entry;
    EXPECT_LT(o.latency, kSilentPeerBound) << "via node-" << o.entry;
    latencies +=
        " node-" + std::to_string(o.entry) + " " + std::to_string(o.latency.count()) + " ms;";
  }
  // The scenario happened: at least one entry forwarded to the stopped holder and gave it up.
  EXPECT_GE(retried, 1) << latencies;
  std::printf(
      "chaos: holder node-%zu of %zu stopped (SIGSTOP), forward timeout %s ms: %zu siblings, "
      "%.0f forwards to it given up and retried elsewhere; latency by entry:%s\n",
      h, kNodes, kLongForwardTimeoutMs, entries.size(), retried, latencies.c_str());
  // One JSON body each (not streamed): no TTFT of their own.
  Report("stopped-holder", outcomes, {"", "stopped", ""}, -1, watch.Finish(outcomes));
}

}  // namespace
}  // namespace hearsay::integration::chaos_silent_peer_test
