// Which unchanged loads a node publishes again (NodeOptions::load_refresh): an idle one, so peers
// see it fresh, and not one with a queue, which peers drain by the report's age. One node, no
// peers, an engine whose load the test sets, in virtual time.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <vector>

#include "hearsay/engine/engine.h"
#include "hearsay/env/rng.h"
#include "hearsay/node/lone_node_test_util.h"
#include "hearsay/node/node.h"
#include "hearsay/prefix/block_keys.h"
#include "hearsay/simenv/virtual_scheduler.h"

namespace hearsay::node {
namespace {

using lone::NoPeers;
using lone::NullTransport;

// Serves nothing; reports whatever load the test sets, unchanged until the test changes it (as an
// upstream engine's estimate holds through a long prefill).
class FixedLoadEngine final : public engine::Engine {
 public:
  engine::EngineLoad load;
  Status Submit(engine::EngineRequest, engine::EngineObserver*) override {
    return UnavailableError("this engine serves nothing");
  }
  bool Cancel(engine::RequestId) override { return false; }
  engine::EngineLoad Load() const override { return load; }
  size_t CachedPrefixTokens(std::span<const engine::TokenId>) const override { return 0; }
  void DrainCacheEvents(std::vector<prefix::BlockEvent>&) override {}
  void AppendCacheSnapshot(std::vector<prefix::BlockEvent>&) const override {}
};

class NodeLoadRefreshTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<prefix::BlockKeyer> keyer =
        prefix::BlockKeyer::Create("node-load-refresh-test-secret", "sim-model", "", {});
    ASSERT_TRUE(keyer.ok()) << keyer.status().ToString();
    keyer_.emplace(*keyer);
    NodeOptions o;
    o.id = "n0";
    o.address = "n0";
    o.load_refresh = FromMillis(200);
    Result<std::unique_ptr<Node>> node =
        Node::Create(std::move(o), engine_, *keyer_, scheduler_, rng_, transport_, peers_);
    ASSERT_TRUE(node.ok()) << node.status().ToString();
    node_ = std::move(*node);
    node_->Start({});
  }

  void TearDown() override { node_.reset(); }

  // Versions of the node's own load record written over `window`, after a first second that
  // publishes the load as set.
  uint64_t VersionsWrittenOver(Duration window) {
    scheduler_.RunFor(FromSeconds(1));
    const uint64_t before = node_->gossip().own_store().load().version;
    scheduler_.RunFor(window);
    return node_->gossip().own_store().load().version - before;
  }

  simenv::VirtualScheduler scheduler_;
  Rng rng_{5};
  NullTransport transport_;
  NoPeers peers_;
  FixedLoadEngine engine_;
  std::optional<prefix::BlockKeyer> keyer_;
  std::unique_ptr<Node> node_;
};

TEST_F(NodeLoadRefreshTest, AnIdleLoadThatHoldsIsPublishedAgainEveryRefresh) {
  engine_.load.running_requests = 1;  // decoding, nothing waiting
  EXPECT_GE(VersionsWrittenOver(FromMillis(1000)), 4u);
}

// Re-publishing a queue as new would tell peers it has not drained while the engine works it off.
TEST_F(NodeLoadRefreshTest, AQueueThatHoldsIsLeftToAgeUntilTheHeartbeat) {
  engine_.load.waiting_requests = 2;
  engine_.load.waiting_prefill_tokens = 3000;
  engine_.load.estimated_queue_wait = FromMillis(1500);
  EXPECT_EQ(VersionsWrittenOver(FromMillis(900)), 0u);
}

TEST_F(NodeLoadRefreshTest, AQueueThatChangesIsPublishedAtOnce) {
  engine_.load.waiting_requests = 2;
  engine_.load.estimated_queue_wait = FromMillis(1500);
  scheduler_.RunFor(FromSeconds(1));
  const uint64_t before = node_->gossip().own_store().load().version;
  engine_.load.estimated_queue_wait = FromMillis(900);
  scheduler_.RunFor(FromMillis(150));
  EXPECT_EQ(node_->gossip().own_store().load().version, before + 1);
}

}  // namespace
}  // namespace hearsay::node
