// Test helper: a vLLM KV-event publisher the tests run themselves with cppzmq. An XPUB socket (a
// PUB that also tells the test when a subscription arrived, so nothing is lost to ZMQ's slow
// joiner) sends [topic, seq, payload]; a ROUTER replay socket, served on its own thread, answers
// exactly as vLLM's ZmqEventPublisher._service_replay does.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "hearsay/testutil/eventually.h"
#include "hearsay/upstream/kv_events_decoder.h"

namespace hearsay::upstream::testing {

inline const std::string kTestTopic = "kv@test";

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
    // Rebinding the port of a publisher just closed: libzmq releases it asynchronously.
    const bool bound = testutil::Eventually([&] {
      try {
        pub_.bind(endpoint);
        return true;
      } catch (const zmq::error_t& e) {
        if (e.num() != EADDRINUSE) throw;
        return false;
      }
    });
    if (!bound) pub_.bind(endpoint);  // throws the EADDRINUSE error
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
    Send({kTestTopic, EncodeKvSeq(seq), payload});
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
      zmq::poll(&item, 1, std::chrono::milliseconds(20));
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
        if (replay_with_topic_) parts.push_back(zmq::buffer(kTestTopic));
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

}  // namespace hearsay::upstream::testing
