// Node::Cancel against requests whose terminal callback is already on its way: a request the node
// ends unserved (a bounce, a bad request) posts its OnError; a Cancel that comes first must still
// find it, and no callback may reach the sink after it (the daemon frees the sink on Cancel). One
// node, no peers, in virtual time.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <vector>

#include "hearsay/engine/sim_engine.h"
#include "hearsay/env/rng.h"
#include "hearsay/node/lone_node_test_util.h"
#include "hearsay/node/node.h"
#include "hearsay/prefix/block_keys.h"
#include "hearsay/simenv/virtual_scheduler.h"

namespace hearsay::node {
namespace {

using lone::NoPeers;
using lone::NullTransport;

// Counts every callback; any callback after Cancel is the bug this file guards against.
struct CountingSink final : ResponseSink {
  int first = 0;
  int complete = 0;
  int errors = 0;
  void OnFirstToken(uint64_t, const PeerFirstToken&) override { ++first; }
  void OnComplete(uint64_t, const PeerUsage&) override { ++complete; }
  void OnError(uint64_t, const Status&, bool) override { ++errors; }
  int calls() const { return first + complete + errors; }
};

class NodeCancelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<prefix::BlockKeyer> keyer =
        prefix::BlockKeyer::Create("node-cancel-test-cluster-secret", "sim-model", "", {});
    ASSERT_TRUE(keyer.ok()) << keyer.status().ToString();
    keyer_.emplace(*keyer);
    Result<std::unique_ptr<engine::SimEngine>> engine =
        engine::SimEngine::Create(scheduler_, engine::SimEngineOptions{}, *keyer_);
    ASSERT_TRUE(engine.ok());
    engine_ = std::move(*engine);
    NodeOptions o;
    o.id = "n0";
    o.address = "n0";
    o.bounce_margin_ms = 0;  // any estimate above the sender's bounces
    Result<std::unique_ptr<Node>> node =
        Node::Create(std::move(o), *engine_, *keyer_, scheduler_, rng_, transport_, peers_);
    ASSERT_TRUE(node.ok()) << node.status().ToString();
    node_ = std::move(*node);
    node_->Start({});
  }

  void TearDown() override {
    node_.reset();
    engine_.reset();
  }

  // A forwarded request whose sender asks for a bounce above `bounce_above_ms`.
  static PeerRequest Forwarded(uint64_t id, double bounce_above_ms) {
    PeerRequest r;
    r.id = id;
    for (uint32_t t = 0; t < 512; ++t) r.prompt.push_back(1000 + t);
    r.max_output_tokens = 4;
    r.forwarded = true;
    r.bounce_above_ms = bounce_above_ms;
    return r;
  }

  simenv::VirtualScheduler scheduler_;
  Rng rng_{7};
  NullTransport transport_;
  NoPeers peers_;
  std::optional<prefix::BlockKeyer> keyer_;
  std::unique_ptr<engine::SimEngine> engine_;
  std::unique_ptr<Node> node_;
};

TEST_F(NodeCancelTest, ABouncedRequestLeftBeforeItsErrorIsDeliveredGetsNoCallback) {
  CountingSink sink;
  // Far below the prefill of 512 uncached tokens: bounced, its OnError posted.
  node_->Submit(Forwarded(1, 1e-6), &sink);
  EXPECT_EQ(sink.calls(), 0);  // never from inside Submit
  // Its connection closed meanwhile: the host cancels it and frees the sink.
  EXPECT_TRUE(node_->Cancel(1, &sink));
  scheduler_.RunFor(FromSeconds(1));
  EXPECT_EQ(sink.calls(), 0);
  EXPECT_EQ(node_->stats().bounced, 1u);
}

TEST_F(NodeCancelTest, ARejectedRequestLeftBeforeItsErrorIsDeliveredGetsNoCallback) {
  CountingSink sink;
  PeerRequest empty = Forwarded(2, 0);
  empty.prompt.clear();
  node_->Submit(std::move(empty), &sink);
  EXPECT_TRUE(node_->Cancel(2, &sink));
  scheduler_.RunFor(FromSeconds(1));
  EXPECT_EQ(sink.calls(), 0);
}

TEST_F(NodeCancelTest, ABouncedRequestNotCancelledGetsItsOneError) {
  CountingSink sink;
  node_->Submit(Forwarded(3, 1e-6), &sink);
  scheduler_.RunFor(FromSeconds(1));
  EXPECT_EQ(sink.errors, 1);
  EXPECT_EQ(sink.calls(), 1);
  // It has ended: nothing left to cancel.
  EXPECT_FALSE(node_->Cancel(3, &sink));
}

TEST_F(NodeCancelTest, ARequestServedHereIsCancelledWithoutACallback) {
  CountingSink sink;
  node_->Submit(Forwarded(4, 0), &sink);  // no bounce asked: served here
  EXPECT_TRUE(node_->Cancel(4, &sink));
  scheduler_.RunFor(FromSeconds(1));
  EXPECT_EQ(sink.calls(), 0);
}

}  // namespace
}  // namespace hearsay::node
