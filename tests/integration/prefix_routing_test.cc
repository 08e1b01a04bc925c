// Requests that share a prompt prefix are forwarded to the node that holds it: asserted from the
// engines' own cached-token counts (usage.prompt_tokens_details.cached_tokens) and from the
// entry and holder nodes' /metrics counters.
#include <gtest/gtest.h>

#include "integration_env.h"

namespace hearsay::integration {
namespace {

// Requests by route decision at `address` (decision: "local", "forwarded", "retried").
double Decisions(const std::string& address, const std::string& decision) {
  auto metrics = Metrics(address);
  EXPECT_TRUE(metrics.ok()) << metrics.status().ToString();
  return metrics.ok() ? testkit::SumMetric(*metrics, kRequestsMetric, {{"decision", decision}})
                      : -1;
}

// Requests `address` served for a peer (they arrived with the hop marker).
double ServedForPeers(const std::string& address) {
  auto metrics = Metrics(address);
  EXPECT_TRUE(metrics.ok()) << metrics.status().ToString();
  return metrics.ok() ? testkit::SumMetric(*metrics, kPeerServedMetric) : -1;
}

TEST(PrefixRoutingTest, SharedPrefixGoesToItsHolder) {
  std::unique_ptr<LocalCluster> cluster = StartCluster(HolderRoutingOptions(4));
  ASSERT_NE(cluster, nullptr);
  // 640 tokens: 40 blocks, several gossip landmarks (one per 16 blocks), so every peer's
  // estimate of the holder is far above any other node's.
  constexpr int kPrefixWords = 640;
  const std::string prefix = Words("shared", kPrefixWords);

  // 1. One request plants the prefix in one engine's cache; a fresh prompt has no cached tokens.
  Result<HttpResponse> first =
      PostCompletion(cluster->node(0).http_address, CompletionBody(prefix + " first question", 4));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->status, 200) << first->body;
  EXPECT_EQ(CachedTokens(BodyJson(*first)), 0) << first->body;
  const int64_t prompt_tokens = PromptTokens(BodyJson(*first));
  ASSERT_GE(prompt_tokens, kPrefixWords);

  // 2. Gossip tells every node who holds it.
  Result<size_t> holder = WaitForSoleHolder(*cluster, 15s);
  ASSERT_TRUE(holder.ok()) << holder.status().ToString() << "\n" << cluster->AllLogTails();
  const size_t h = *holder;
  const std::string holder_address = cluster->node(h).http_address;
  // And every entry has measured its delay to the holder (the policy prices the forward by it).
  for (size_t e = 0; e < cluster->size(); ++e) {
    if (e == h) continue;
    const bool measured = testutil::Eventually([&] {
      Result<launch::ClusterView> view = cluster->View(e);
      const launch::MemberInfo* m = view.ok() ? view->Find(cluster->node(h).node_id) : nullptr;
      return m != nullptr && m->rtt_ms.has_value();
    });
    ASSERT_TRUE(measured) << cluster->node(e).node_id << " never measured its RTT to the holder";
  }
  const double served_before = ServedForPeers(holder_address);

  // 3. The same prefix with a different question, entering at every other node, is forwarded to
  //    the holder: the holder's engine reports the prefix's full blocks as cached.
  int entries = 0;
  for (size_t e = 0; e < cluster->size(); ++e) {
    if (e == h) continue;
    ++entries;
    SCOPED_TRACE("entry " + cluster->node(e).node_id + ", holder " + cluster->node(h).node_id);
    const std::string& entry = cluster->node(e).http_address;
    const double forwarded_before = Decisions(entry, "forwarded");
    Result<HttpResponse> r = PostCompletion(
        entry, CompletionBody(prefix + " question from " + cluster->node(e).node_id, 4));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->status, 200) << r->body;
    const int64_t cached = CachedTokens(BodyJson(*r));
    // Every full block of the shared prefix but possibly the last (the word that follows the
    // prefix can change where the prefix's last token ends) is a hit.
    const int64_t full_prefix_blocks = kPrefixWords / kBlockTokens;
    EXPECT_GE(cached, (full_prefix_blocks - 1) * kBlockTokens) << r->body;
    EXPECT_LE(cached, PromptTokens(BodyJson(*r))) << r->body;
    EXPECT_EQ(Decisions(entry, "forwarded"), forwarded_before + 1);
  }
  EXPECT_EQ(ServedForPeers(holder_address), served_before + entries);
  // The holder made no forwarding decisions of its own for these.
  EXPECT_EQ(Decisions(holder_address, "forwarded"), 0);
}

TEST(PrefixRoutingTest, StreamingRequestsReportCachedTokensToo) {
  std::unique_ptr<LocalCluster> cluster = StartCluster(HolderRoutingOptions(2));
  ASSERT_NE(cluster, nullptr);
  const std::string prefix = Words("streamed", 320);
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    Result<testkit::StreamOutcome> s = testkit::HttpPostStream(
        cluster->node(round).http_address, "/v1/completions",
        CompletionBody(prefix + " again", 8, /*stream=*/true), kCallTimeout);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_EQ(s->status, 200) << s->body;
    EXPECT_TRUE(s->transport.ok()) << s->transport.ToString();
    ASSERT_TRUE(s->saw_done());
    EXPECT_FALSE(s->saw_error_event());
    // The usage chunk is the last before [DONE].
    ASSERT_GE(s->events.size(), 2u);
    json usage_chunk = json::parse(s->events[s->events.size() - 2].event.data, nullptr, false);
    ASSERT_TRUE(usage_chunk.contains("usage")) << usage_chunk.dump();
    const int64_t cached = CachedTokens(usage_chunk);
    if (round == 0) {
      EXPECT_EQ(cached, 0);
    } else {
      // Entering at the other node, the identical prompt still finds its cache.
      EXPECT_GE(cached, 320 - 2 * kBlockTokens) << usage_chunk.dump();
    }
    if (round == 0) {
      ASSERT_TRUE(WaitForSoleHolder(*cluster, 15s).ok()) << cluster->AllLogTails();
    }
  }
}

}  // namespace
}  // namespace hearsay::integration
