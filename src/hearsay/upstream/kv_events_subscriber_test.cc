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

#include "hearsay/upstream/kv_event_view.h"
#include "hearsay/upstream/kv_events_test_util.h"

namespace hearsay::upstream {
namespace {

using namespace std::chrono_literals;
using testing::EncodeBatch;
using testing::TokenRun;
using testing::WireForm;
using testing::WireStored;

constexpr uint32_t kBlock = 4;
const std::string kTopic = "kv@test";

// Batch `seq` stores one block of its own tokens, hash 100 + seq.
std::string Payload(uint64_t seq) {
  return EncodeBatch(WireForm::kArray, 1.0 + static_cast<double>(seq),
                     {WireStored{{static_cast<int64_t>(100 + seq)},
                                 std::nullopt,
                                 TokenRun(static_cast<uint32_t>(1000 * (seq + 1)), kBlock),
                                 kBlock}});
}

template <typename Pred>
bool WaitFor(Pred pred, std::chrono::milliseconds limit = 5000ms) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(2ms);
  }
  return pred();
}

class TestPublisher {
 public:
  // Binds the PUB side on an ephemeral loopback port (or `endpoint`), and a replay ROUTER when
  // `with_replay`.
  TestPublisher(zmq::context_t& ctx, bool with_replay, bool replay_with_topic = false,
                std::string endpoint = "tcp://127.0.0.1:*")
      : ctx_(ctx), replay_with_topic_(replay_with_topic) {
    pub_ = zmq::socket_t(ctx_, zmq::socket_type::xpub);
    pub_.set(zmq::sockopt::linger, 0);
    pub_.set(zmq::sockopt::rcvtimeo, 5000);
    pub_.bind(endpoint);
    endpoint_ = pub_.get(zmq::sockopt::last_endpoint);
    if (with_replay) {
      router_ = zmq::socket_t(ctx_, zmq::socket_type::router);
      router_.set(zmq::sockopt::linger, 0);
      router_.bind("tcp://127.0.0.1:*");
      replay_endpoint_ = router_.get(zmq::sockopt::last_endpoint);
      thread_ = std::thread([this] { ServeReplay(); });
    }
  }
  ~TestPublisher() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }

  // Blocks until a subscriber's subscription arrives.
  bool AwaitSubscriber() {
    zmq::message_t m;
    return pub_.recv(m).has_value() && m.size() >= 1 && m.data<char>()[0] == 1;
  }
  // Sends [topic, seq, payload] and keeps it for replay.
  void Publish(uint64_t seq, const std::string& payload) {
    Keep(seq, payload);
    Send({kTopic, EncodeKvSeq(seq), payload});
  }
  // Keeps a batch for replay without sending it: the subscriber misses it.
  void Keep(uint64_t seq, const std::string& payload) {
    std::lock_guard lock(mu_);
    buffer_[seq] = payload;
  }
  void Send(const std::vector<std::string>& frames) {
    std::vector<zmq::const_buffer> parts;
    for (const std::string& f : frames) parts.push_back(zmq::buffer(f));
    ASSERT_TRUE(zmq::send_multipart(pub_, parts).has_value());
  }
  void ClosePub() { pub_.close(); }

  const std::string& endpoint() const { return endpoint_; }
  const std::string& replay_endpoint() const { return replay_endpoint_; }
  int replay_requests() const { return replay_requests_.load(); }

 private:
  // vLLM's _service_replay: [id, "", start] -> [id, "", seq, payload] for every buffered
  // seq >= start, then [id, "", -1, ""].
  void ServeReplay() {
    while (!stop_.load()) {
      zmq::pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, 20ms);
      if ((item.revents & ZMQ_POLLIN) == 0) continue;
      std::vector<zmq::message_t> req;
      if (!zmq::recv_multipart(router_, std::back_inserter(req))) continue;
      if (req.size() != 3) continue;
      ++replay_requests_;
      const uint64_t start = *DecodeKvSeq(req[2].to_string_view());
      const std::string id(req[0].to_string_view());
      std::map<uint64_t, std::string> copy;
      {
        std::lock_guard lock(mu_);
        copy = buffer_;
      }
      auto send = [&](const std::string& seq, const std::string& payload) {
        std::vector<zmq::const_buffer> parts{zmq::buffer(id), zmq::const_buffer("", 0)};
        if (replay_with_topic_) parts.push_back(zmq::buffer(kTopic));
        parts.push_back(zmq::buffer(seq));
        parts.push_back(zmq::buffer(payload));
        zmq::send_multipart(router_, parts);
      };
      for (const auto& [seq, payload] : copy) {
        if (seq >= start) send(EncodeKvSeq(seq), payload);
      }
      send(EncodeKvSeq(kKvReplayEndSeq), "");
    }
  }

  zmq::context_t& ctx_;
  bool replay_with_topic_;
  zmq::socket_t pub_, router_;
  std::string endpoint_, replay_endpoint_;
  std::mutex mu_;
  std::map<uint64_t, std::string> buffer_;
  std::atomic<bool> stop_{false};
  std::atomic<int> replay_requests_{0};
  std::thread thread_;
};

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
  ASSERT_TRUE(pub.AwaitSubscriber());
  for (uint64_t s = 0; s < 3; ++s) pub.Publish(s, Payload(s));
  ASSERT_TRUE(WaitFor([&] { return core_.seqs().size() == 3; }));
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
    ASSERT_TRUE(WaitFor([&] { return core.seqs().size() == 4; }));
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
  ASSERT_TRUE(pub.AwaitSubscriber());
  pub.Publish(0, Payload(0));
  pub.Publish(2, Payload(2));  // 1 lost
  ASSERT_TRUE(WaitFor([&] { return core_.seqs().size() == 2; }));
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
  ASSERT_TRUE(pub.AwaitSubscriber());
  pub.Publish(0, Payload(0));
  pub.Publish(5, Payload(5));
  ASSERT_TRUE(WaitFor([&] { return core_.seqs().size() == 2; }));
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
  ASSERT_TRUE(pub.AwaitSubscriber());
  pub.Publish(0, Payload(0));
  pub.Keep(2, Payload(2));  // 1 is gone from the publisher's buffer too
  pub.Publish(3, Payload(3));
  ASSERT_TRUE(WaitFor([&] { return core_.seqs().size() == 2; }));
  EXPECT_EQ(core_.seqs(), (std::vector<uint64_t>{0, 3}));
  EXPECT_EQ(sub->stats().replay_failures, 1u);
  EXPECT_EQ(core_.resets().size(), 1u);
}

TEST_F(KvEventsSubscriberTest, MalformedMessagesAreCountedAndSkipped) {
  TestPublisher pub(ctx_, /*with_replay=*/true);
  auto sub = Subscribe(pub);
  ASSERT_TRUE(pub.AwaitSubscriber());
  pub.Publish(0, Payload(0));
  pub.Send({kTopic, EncodeKvSeq(1), "\xc1 not msgpack"});  // undecodable payload
  pub.Send({kTopic, "seq", Payload(9)});                   // bad sequence frame
  pub.Send({kTopic, EncodeKvSeq(9)});                      // two frames
  pub.Publish(2, Payload(2));
  ASSERT_TRUE(WaitFor([&] { return sub->stats().messages == 5; }));
  ASSERT_TRUE(WaitFor([&] { return core_.seqs().size() == 2; }));
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
  ASSERT_TRUE(pub->AwaitSubscriber());
  for (uint64_t s = 0; s < 3; ++s) pub->Publish(s, Payload(s));
  ASSERT_TRUE(WaitFor([&] { return core_.seqs().size() == 3; }));
  // The engine restarts: its publisher goes away and comes back on the same port, counting
  // from 0 again.
  pub.reset();
  pub = std::make_unique<TestPublisher>(ctx_, /*with_replay=*/false, false, endpoint);
  ASSERT_TRUE(pub->AwaitSubscriber());  // ZMQ reconnected by itself
  pub->Publish(0, Payload(7));
  ASSERT_TRUE(WaitFor([&] { return core_.seqs().size() == 4; }));
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
}  // namespace hearsay::upstream
