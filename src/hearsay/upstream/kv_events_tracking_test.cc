#include "hearsay/upstream/kv_events_tracking.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "hearsay/simenv/virtual_scheduler.h"
#include "hearsay/upstream/fake_transport_test_util.h"
#include "hearsay/upstream/kv_events_test_util.h"

namespace hearsay::upstream::kv_events_tracking_test {
namespace {

using namespace std::chrono_literals;
using prefix::BlockEvent;
using prefix::BlockKey;
using testing::EncodeBatch;
using testing::TokenRun;
using testing::WireCleared;
using testing::WireEvent;
using testing::WireForm;
using testing::WireRemoved;
using testing::WireStored;

constexpr uint32_t kBlock = 4;

struct NullObserver final : engine::EngineObserver {
  void OnAdmitted(engine::RequestId, const engine::Admission&) override {}
  void OnFirstToken(engine::RequestId, const engine::FirstToken&) override {}
  void OnText(engine::RequestId, std::string_view) override {}
  void OnComplete(engine::RequestId, const engine::Usage&) override {}
  void OnError(engine::RequestId, const Status&) override {}
};

class KvEventsTrackingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    keyer_ = *prefix::BlockKeyer::Create("kv-events-test-secret-0123456789", "m", "",
                                         {.tokens_per_block = kBlock});
    OpenAiEngineOptions o;
    o.flavor = UpstreamFlavor::kVllm;
    o.capacity_tokens = 4096;
    o.max_in_flight = 1000;
    auto e = OpenAiEngine::Create(sched_, transport_, keyer_, o);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
    tracking_ = std::make_unique<KvEventsTracking>(*engine_, keyer_, KvEventViewOptions{});
  }
  void Batch(const std::vector<WireEvent>& events) {
    Result<KvEventBatch> b =
        DecodeKvEventBatch(EncodeKvSeq(seq_++), EncodeBatch(WireForm::kMap, 1.0, events));
    ASSERT_TRUE(b.ok()) << b.status().message();
    tracking_->OnBatch(*b);
  }
  // Sends a request for `prompt`: the estimate predicts it cached.
  void Send(engine::RequestId id, const std::vector<uint32_t>& prompt) {
    engine::EngineRequest r;
    r.id = id;
    r.prompt.assign(prompt.begin(), prompt.end());
    r.max_output_tokens = 4;
    r.api_path = "/v1/completions";
    r.api_body = R"({"model":"m","prompt":"hello","max_tokens":4})";
    ASSERT_TRUE(engine_->Submit(std::move(r), &observer_).ok());
  }
  // Applies drained union events to a model of what peers believe, checking they stay coherent.
  void SyncPeerModel() {
    std::vector<BlockEvent> events;
    tracking_->DrainCacheEvents(events);
    for (const BlockEvent& e : events) {
      if (e.kind == BlockEvent::Kind::kAdded) {
        EXPECT_TRUE(peer_.insert(e.key).second) << "added twice";
      } else {
        EXPECT_EQ(peer_.erase(e.key), 1u) << "removed what was not added";
      }
    }
    std::vector<BlockEvent> snap;
    tracking_->AppendCacheSnapshot(snap);
    std::set<BlockKey> snap_keys;
    for (const BlockEvent& e : snap) snap_keys.insert(e.key);
    EXPECT_EQ(snap_keys, peer_);
  }
  size_t Cached(const std::vector<uint32_t>& prompt) const {
    return tracking_->CachedPrefixTokens(
        std::vector<prefix::TokenId>(prompt.begin(), prompt.end()));
  }
  size_t Estimated(const std::vector<uint32_t>& prompt) const {
    return engine_->CachedPrefixTokens(std::vector<prefix::TokenId>(prompt.begin(), prompt.end()));
  }

  simenv::VirtualScheduler sched_;
  testing::FakeTransport transport_;
  NullObserver observer_;
  prefix::BlockKeyer keyer_ = *prefix::BlockKeyer::Create("x-secret-0123456789abcdef", "m", "");
  std::unique_ptr<OpenAiEngine> engine_;
  std::unique_ptr<KvEventsTracking> tracking_;
  uint64_t seq_ = 0;
  std::set<BlockKey> peer_;
};

TEST_F(KvEventsTrackingTest, EventsAloneMakeAPrefixCached) {
  const std::vector<uint32_t> prompt = TokenRun(500, 3 * kBlock);
  EXPECT_EQ(Cached(prompt), 0u);
  // Another client of the engine (not through this node) cached the prompt.
  Batch({WireStored{{1, 2, 3}, std::nullopt, prompt, kBlock}});
  EXPECT_EQ(Estimated(prompt), 0u);
  EXPECT_EQ(Cached(prompt), 3 * kBlock);
  SyncPeerModel();
  EXPECT_EQ(peer_.size(), 3u);
  EXPECT_EQ(tracking_->stats().stored_matching_estimate, 0u);
}

TEST_F(KvEventsTrackingTest, EventsConfirmPredictionsAndTheirRemovalsCutTheEstimate) {
  const std::vector<uint32_t> prompt = TokenRun(1, 4 * kBlock);
  Send(1, prompt);
  EXPECT_EQ(Estimated(prompt), 4 * kBlock);  // predicted at send
  // The engine computed and stored it: the stored keys are the ones the node predicted.
  Batch({WireStored{{10, 11, 12, 13}, std::nullopt, prompt, kBlock}});
  EXPECT_EQ(tracking_->stats().stored_matching_estimate, 4u);
  SyncPeerModel();
  EXPECT_EQ(peer_.size(), 4u);  // one key per block, whichever sources hold it

  // The engine evicts the last two blocks: the estimate, though it predicted them, drops them.
  Batch({WireRemoved{{13, 12}}});
  EXPECT_EQ(Cached(prompt), 2 * kBlock);
  EXPECT_EQ(Estimated(prompt), 2 * kBlock);
  EXPECT_EQ(tracking_->stats().estimate_blocks_cut, 2u);
  SyncPeerModel();
  EXPECT_EQ(peer_.size(), 2u);

  // The engine cleared its cache: nothing is cached, by either source.
  Batch({WireCleared{}});
  EXPECT_EQ(Cached(prompt), 0u);
  EXPECT_EQ(Estimated(prompt), 0u);
  EXPECT_EQ(tracking_->stats().estimate_clears, 1u);
  SyncPeerModel();
  EXPECT_TRUE(peer_.empty());
}

TEST_F(KvEventsTrackingTest, ResetDropsOnlyTheEventView) {
  const std::vector<uint32_t> sent = TokenRun(1, 2 * kBlock);
  const std::vector<uint32_t> other = TokenRun(900, 2 * kBlock);
  Send(1, sent);
  Batch({WireStored{{1, 2}, std::nullopt, other, kBlock}});
  SyncPeerModel();
  EXPECT_EQ(peer_.size(), 4u);
  tracking_->OnReset("gap");
  EXPECT_EQ(Cached(other), 0u);
  EXPECT_EQ(Cached(sent), 2 * kBlock);  // prediction still stands
  SyncPeerModel();
  EXPECT_EQ(peer_.size(), 2u);
}

TEST_F(KvEventsTrackingTest, DisagreeingKeysAreDetected) {
  // The engine stores blocks the node sent, but tokenized differently (the node's tokens are not
  // the engine's): no stored block ever matches a prediction.
  for (uint32_t i = 0; i < KvEventsTracking::kDisagreeAfterBlocks / 4; ++i) {
    const std::vector<uint32_t> prompt = TokenRun(1000 * (i + 1), 4 * kBlock);
    Send(i + 1, prompt);
    std::vector<uint32_t> engine_tokens = prompt;
    for (uint32_t& t : engine_tokens) t += 7;
    const int64_t h = 4 * static_cast<int64_t>(i);
    Batch({WireStored{{h, h + 1, h + 2, h + 3}, std::nullopt, engine_tokens, kBlock}});
  }
  EXPECT_TRUE(tracking_->keys_disagree());
}

}  // namespace
}  // namespace hearsay::upstream::kv_events_tracking_test
