// A 4-node cluster of real processes forms and converges; a node that is stopped with SIGTERM
// drains, exits 0 and is seen as having left.
#include <gtest/gtest.h>

#include <set>

#include "integration_env.h"

namespace hearsay::integration {
namespace {

TEST(ClusterTest, FourNodesFormAndConverge) {
  std::unique_ptr<LocalCluster> cluster = StartCluster(ClusterOptions(4));
  ASSERT_NE(cluster, nullptr);
  // Start() returned only once every node's /cluster listed the others alive; check the views
  // in full: every node lists the same four members, with the addresses they were given, each
  // with a generation (a node's incarnation of its life), and serves the API.
  for (size_t i = 0; i < cluster->size(); ++i) {
    SCOPED_TRACE(cluster->node(i).node_id);
    Result<launch::ClusterView> view = cluster->View(i);
    ASSERT_TRUE(view.ok()) << view.status().ToString();
    std::set<std::string> ids;
    for (const launch::MemberInfo& m : view->members) ids.insert(m.node_id);
    EXPECT_EQ(ids, (std::set<std::string>{"node-0", "node-1", "node-2", "node-3"}));
    for (size_t j = 0; j < cluster->size(); ++j) {
      const launch::MemberInfo* m = view->Find(cluster->node(j).node_id);
      ASSERT_NE(m, nullptr);
      EXPECT_EQ(m->state, "alive");
      EXPECT_GT(m->generation, 0u);
      if (j != i) {
        EXPECT_EQ(m->api_address, cluster->node(j).http_address);
        EXPECT_EQ(m->gossip_address, cluster->node(j).gossip_address);
      }
    }
    Result<HttpResponse> models =
        testkit::HttpGet(cluster->node(i).http_address, "/v1/models", kCallTimeout);
    ASSERT_TRUE(models.ok()) << models.status().ToString();
    EXPECT_EQ(models->status, 200);
    json m = BodyJson(*models);
    ASSERT_TRUE(m.contains("data") && m["data"].is_array() && !m["data"].empty()) << models->body;
    EXPECT_EQ(m["data"][0]["id"], kModel);
  }
  // Every node's peers gauge agrees: three others alive.
  for (size_t i = 0; i < cluster->size(); ++i) {
    auto metrics = Metrics(cluster->node(i).http_address);
    ASSERT_TRUE(metrics.ok()) << metrics.status().ToString();
    EXPECT_EQ(testkit::SumMetric(*metrics, "hearsay_peers", {{"state", "alive"}}), 3)
        << cluster->node(i).node_id;
  }
}

TEST(ClusterTest, SigtermLeavesGracefully) {
  std::unique_ptr<LocalCluster> cluster = StartCluster(ClusterOptions(3));
  ASSERT_NE(cluster, nullptr);
  const auto start = std::chrono::steady_clock::now();
  Status stopped = cluster->Stop(2);  // SIGTERM, then a bounded wait for exit status 0
  ASSERT_TRUE(stopped.ok()) << stopped.ToString();
  // A graceful leave is announced, not detected: the others see "left" well before a failure
  // detector could have declared the node dead (the suspicion timeout alone is 4 s at least).
  Status views = cluster->WaitForViews({2}, 4s);
  EXPECT_TRUE(views.ok()) << views.ToString() << "\n" << cluster->AllLogTails();
  for (size_t i = 0; i < 2; ++i) {
    Result<launch::ClusterView> view = cluster->View(i);
    ASSERT_TRUE(view.ok());
    const launch::MemberInfo* m = view->Find("node-2");
    if (m != nullptr) {
      EXPECT_EQ(m->state, "left") << "seen by node-" << i;
    }
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);
}

}  // namespace
}  // namespace hearsay::integration
