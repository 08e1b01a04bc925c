// KvEventsSubscriber against a publisher the test runs itself with cppzmq: an XPUB socket (a PUB
// that also tells the test when the subscription arrived, so nothing is lost to ZMQ's slow
// joiner) and a ROUTER replay socket answering exactly as vLLM's ZmqEventPublisher does. Real
// sockets on loopback; every wait is bounded.
#include "hearsay/upstream/kv_events_subscriber.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "hearsay/testutil/eventually.h"
#include "hearsay/upstream/kv_event_view.h"
#include "hearsay/upstream/kv_events_test_publisher.h"
#include "hearsay/upstream/kv_events_test_util.h"

namespace hearsay::upstream::kv_events_subscriber_test {
namespace {

using namespace std::chrono_literals;
using testing::EncodeBatch;
using testing::TestPublisher;
using testing::TokenRun;
using testing::WireForm;
using testing::WireStored;

constexpr uint32_t kBlock = 4;
const std::string kTopic = testing::kTestTopic;

// Batch `seq` stores one block of its own tokens, hash 100 + seq.
std::string Payload(uint64_t seq) {
  return EncodeBatch(WireForm::kArray, 1.0 + static_cast<double>(seq),
                     {WireStored{{static_cast<int64_t>(100 + seq)},
                                 std::nullopt,
                                 TokenRun(static_cast<uint32_t>(1000 * (seq + 1)), kBlock),
                                 kBlock}});
}

using testutil::Eventually;

// Stands in for the core thread: posted tasks run at once, under a lock, and apply batches to a
// KvEventView as the node does.
class Core {
 public:
  Core()
      : view_(*prefix::BlockKeyer::Create("subscriber-test-secret-0123", "m", "",
                                          {.tokens_per_block = kBlock}),
              {}) {}
  KvEventsSubscriber::Post post() {
    return [this](std::function<void()> task) {
      std::lock_guard lock(mu_);
      task();
    };
  }
  KvEventsSubscriber::Handlers handlers() {
    return {[this](KvEventBatch b) {
              seqs_.push_back(b.seq);
              view_.Apply(b, nullptr, nullptr);
            },
            [this](std::string reason) {
              resets_.push_back(reason);
              view_.Reset();
            }};
  }
  std::vector<uint64_t> seqs() {
    std::lock_guard lock(mu_);
    return seqs_;
  }
  std::vector<std::string> resets() {
    std::lock_guard lock(mu_);
    return resets_;
  }
  size_t blocks() {
    std::lock_guard lock(mu_);
    return view_.blocks();
  }

 private:
  std::mutex mu_;
  KvEventView view_;
  std::vector<uint64_t> seqs_;
  std::vector<std::string> resets_;
};

class KvEventsSubscriberTest : public ::testing::Test {
 protected:
  std::unique_ptr<KvEventsSubscriber> Subscribe(const TestPublisher& pub, bool replay = true,
                                                std::string replay_endpoint = "") {
    KvEventsSubscriberOptions o;
    o.endpoint = pub.endpoint();
    o.replay_endpoint =
        replay ? (replay_endpoint.empty() ? pub.replay_endpoint() : replay_endpoint) : "";
    o.topic = kTopic;
    o.replay_timeout = 300ms;
    o.poll_interval = 20ms;
    auto s = KvEventsSubscriber::Start(o, core_.post(), core_.handlers());
    EXPECT_TRUE(s.ok()) << s.status().message();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  zmq::context_t ctx_{1};
  Core core_;
};

TEST_F(KvEventsSubscriberTest, DeliversBatchesInOrder) {
  TestPublisher pub(ctx_, /*with_replay=*/true);
  auto sub = Subscribe(pub);
  ASSERT_NE(sub, nullptr);
  ASSERT_TRUE(pub.AwaitSubscriber());
  for (uint64_t s = 0; s < 3; ++s) pub.Publish(s, Payload(s));
  ASSERT_TRUE(Eventually([&] { return core_.seqs().size() == 3; }));
  EXPECT_EQ(core_.seqs(), (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_EQ(core_.blocks(), 3u);
  const KvEventsSubscriberStats st = sub->stats();
  EXPECT_EQ(st.messages, 3u);
  EXPECT_EQ(st.gaps, 0u);
  EXPECT_EQ(pub.replay_requests(), 0);
}

TEST_F(KvEventsSubscriberTest, GapIsFilledByReplay) {
  for (bool with_topic : {false, true}) {
    SCOPED_TRACE(with_topic ? "replay frames with topic" : "replay frames without topic");
    Core core;
    TestPublisher pub(ctx_, /*with_replay=*/true, with_topic);
    KvEventsSubscriberOptions o{pub.endpoint(), pub.replay_endpoint(), kTopic, 2000ms, 20ms};
    auto sub = KvEventsSubscriber::Start(o, core.post(), core.handlers());
    ASSERT_TRUE(sub.ok());
    ASSERT_TRUE(pub.AwaitSubscriber());
    pub.Publish(0, Payload(0));
    pub.Keep(1, Payload(1));  // lost on the wire
    pub.Keep(2, Payload(2));
    pub.Publish(3, Payload(3));
    ASSERT_TRUE(Eventually([&] { return core.seqs().size() == 4; }));
    EXPECT_EQ(core.seqs(), (std::vector<uint64_t>{0, 1, 2, 3}));
    EXPECT_EQ(core.blocks(), 4u);  // the index ends as if nothing was lost
    EXPECT_TRUE(core.resets().empty());
    const KvEventsSubscriberStats st = (*sub)->stats();
    EXPECT_EQ(st.gaps, 1u);
    EXPECT_EQ(st.replays, 1u);
    EXPECT_EQ(st.replayed_batches, 2u);
    EXPECT_EQ(pub.replay_requests(), 1);
  }
}

TEST_F(KvEventsSubscriberTest, GapWithoutReplayEndpointResets) {
  TestPublisher pub(ctx_, /*with_replay=*/false);
  auto sub = Subscribe(pub, /*replay=*/false);
  ASSERT_NE(sub, nullptr);
  ASSERT_TRUE(pub.AwaitSubscriber());
  pub.Publish(0, Payload(0));
  pub.Publish(2, Payload(2));  // 1 lost
  ASSERT_TRUE(Eventually([&] { return core_.seqs().size() == 2; }));
  EXPECT_EQ(core_.seqs(), (std::vector<uint64_t>{0, 2}));
  ASSERT_EQ(core_.resets().size(), 1u);
  EXPECT_NE(core_.resets()[0].find("no replay endpoint"), std::string::npos);
  EXPECT_EQ(core_.blocks(), 1u);  // only what came after the reset
  EXPECT_EQ(sub->stats().resets, 1u);
}

TEST_F(KvEventsSubscriberTest, GapWithReplayServerDownResets) {
  TestPublisher pub(ctx_, /*with_replay=*/false);
  // A replay endpoint where nothing listens: the request times out.
  auto sub = Subscribe(pub, /*replay=*/true, "tcp://127.0.0.1:1");
  ASSERT_NE(sub, nullptr);
  ASSERT_TRUE(pub.AwaitSubscriber());
  pub.Publish(0, Payload(0));
  pub.Publish(5, Payload(5));
  ASSERT_TRUE(Eventually([&] { return core_.seqs().size() == 2; }));
  const KvEventsSubscriberStats st = sub->stats();
  EXPECT_EQ(st.gaps, 1u);
  EXPECT_EQ(st.replay_failures, 1u);
  EXPECT_EQ(st.resets, 1u);
  EXPECT_EQ(core_.resets().size(), 1u);
  EXPECT_EQ(core_.blocks(), 1u);
}

TEST_F(KvEventsSubscriberTest, ReplayMissingPartOfTheRangeResets) {
  TestPublisher pub(ctx_, /*with_replay=*/true);
  auto sub = Subscribe(pub);
  ASSERT_NE(sub, nullptr);
  ASSERT_TRUE(pub.AwaitSubscriber());
  pub.Publish(0, Payload(0));
  pub.Keep(2, Payload(2));  // 1 is gone from the publisher's buffer too
  pub.Publish(3, Payload(3));
  ASSERT_TRUE(Eventually([&] { return core_.seqs().size() == 2; }));
  EXPECT_EQ(core_.seqs(), (std::vector<uint64_t>{0, 3}));
  EXPECT_EQ(sub->stats().replay_failures, 1u);
  EXPECT_EQ(core_.resets().size(), 1u);
}

TEST_F(KvEventsSubscriberTest, CatchesUpOnBatchesPublishedBeforeItSubscribed) {
  TestPublisher pub(ctx_, /*with_replay=*/true);
  // The engine ran before the node started: batches 0..2 are only in the replay buffer.
  for (uint64_t s = 0; s < 3; ++s) pub.Keep(s, Payload(s));
  auto sub = Subscribe(pub);
  ASSERT_NE(sub, nullptr);
  ASSERT_TRUE(pub.AwaitSubscriber());
  pub.Publish(3, Payload(3));
  ASSERT_TRUE(Eventually([&] { return core_.seqs().size() == 4; }));
  EXPECT_EQ(core_.seqs(), (std::vector<uint64_t>{0, 1, 2, 3}));
  EXPECT_EQ(core_.blocks(), 4u);
  const KvEventsSubscriberStats st = sub->stats();
  EXPECT_EQ(st.catch_ups, 1u);
  EXPECT_EQ(st.gaps, 0u);
  EXPECT_EQ(st.replays, 0u);
  EXPECT_TRUE(core_.resets().empty());
  EXPECT_EQ(pub.replay_requests(), 1);
}

TEST_F(KvEventsSubscriberTest, CatchUpTakesWhatIsLeftOfTheBuffer) {
  TestPublisher pub(ctx_, /*with_replay=*/true);
  // Batches 0 and 1 have left the publisher's buffer; 2 and 3 are still in it.
  pub.Keep(2, Payload(2));
  auto sub = Subscribe(pub);
  ASSERT_NE(sub, nullptr);
  ASSERT_TRUE(pub.AwaitSubscriber());
  pub.Keep(3, Payload(3));
  pub.Publish(4, Payload(4));
  ASSERT_TRUE(Eventually([&] { return core_.seqs().size() == 3; }));
  EXPECT_EQ(core_.seqs(), (std::vector<uint64_t>{2, 3, 4}));
  EXPECT_EQ(sub->stats().catch_ups, 1u);
  EXPECT_TRUE(core_.resets().empty());
}

TEST_F(KvEventsSubscriberTest, FailedCatchUpStartsWithTheFirstBatch) {
  TestPublisher pub(ctx_, /*with_replay=*/false);
  auto sub = Subscribe(pub, /*replay=*/true, "tcp://127.0.0.1:1");
  ASSERT_NE(sub, nullptr);
  ASSERT_TRUE(pub.AwaitSubscriber());
  pub.Publish(7, Payload(7));
  pub.Publish(8, Payload(8));
  ASSERT_TRUE(Eventually([&] { return core_.seqs().size() == 2; }));
  EXPECT_EQ(core_.seqs(), (std::vector<uint64_t>{7, 8}));
  const KvEventsSubscriberStats st = sub->stats();
  EXPECT_EQ(st.catch_ups, 0u);
  EXPECT_EQ(st.replay_failures, 1u);
  EXPECT_TRUE(core_.resets().empty());
}

TEST_F(KvEventsSubscriberTest, MalformedMessagesAreCountedAndSkipped) {
  TestPublisher pub(ctx_, /*with_replay=*/true);
  auto sub = Subscribe(pub);
  ASSERT_NE(sub, nullptr);
  ASSERT_TRUE(pub.AwaitSubscriber());
  pub.Publish(0, Payload(0));
  pub.Send({kTopic, EncodeKvSeq(1), "\xc1 not msgpack"});  // undecodable payload
  pub.Send({kTopic, "seq", Payload(9)});                   // bad sequence frame
  pub.Send({kTopic, EncodeKvSeq(9)});                      // two frames
  pub.Publish(2, Payload(2));
  ASSERT_TRUE(Eventually([&] { return sub->stats().messages == 5; }));
  ASSERT_TRUE(Eventually([&] { return core_.seqs().size() == 2; }));
  EXPECT_EQ(core_.seqs(), (std::vector<uint64_t>{0, 2}));
  const KvEventsSubscriberStats st = sub->stats();
  EXPECT_EQ(st.malformed, 3u);
  EXPECT_EQ(st.gaps, 0u);
  EXPECT_TRUE(core_.resets().empty());
}

TEST_F(KvEventsSubscriberTest, ReconnectsAfterPublisherRestart) {
  auto pub = std::make_unique<TestPublisher>(ctx_, /*with_replay=*/false);
  const std::string endpoint = pub->endpoint();
  auto sub = Subscribe(*pub, /*replay=*/false);
  ASSERT_NE(sub, nullptr);
  ASSERT_TRUE(pub->AwaitSubscriber());
  for (uint64_t s = 0; s < 3; ++s) pub->Publish(s, Payload(s));
  ASSERT_TRUE(Eventually([&] { return core_.seqs().size() == 3; }));
  // The engine restarts: its publisher goes away and comes back on the same port, counting
  // from 0 again.
  pub.reset();
  pub = std::make_unique<TestPublisher>(ctx_, /*with_replay=*/false, false, endpoint);
  ASSERT_TRUE(pub->AwaitSubscriber());  // ZMQ reconnected by itself
  pub->Publish(0, Payload(7));
  ASSERT_TRUE(Eventually([&] { return core_.seqs().size() == 4; }));
  EXPECT_EQ(core_.seqs().back(), 0u);
  const KvEventsSubscriberStats st = sub->stats();
  EXPECT_EQ(st.restarts, 1u);
  EXPECT_EQ(st.resets, 1u);
  EXPECT_EQ(core_.blocks(), 1u);  // the old engine's blocks are gone
}

TEST(KvEventsSubscriberOptionsTest, RejectsBadEndpoints) {
  KvEventsSubscriberOptions o;
  for (const char* bad :
       {"", "127.0.0.1:5557", "tcp://host", "tcp://host:", "tcp://host:x1", "http://h:1"}) {
    o.endpoint = bad;
    EXPECT_FALSE(ValidateKvEventsSubscriberOptions(o).ok()) << bad;
  }
  o.endpoint = "tcp://10.0.0.1:5557";
  EXPECT_TRUE(ValidateKvEventsSubscriberOptions(o).ok());
  o.replay_endpoint = "nope";
  EXPECT_FALSE(ValidateKvEventsSubscriberOptions(o).ok());
}

}  // namespace
}  // namespace hearsay::upstream::kv_events_subscriber_test
