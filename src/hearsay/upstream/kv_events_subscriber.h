// KvEventsSubscriber: reads vLLM's KV-cache event stream (ZMQ PUB, kv_events_decoder.h) on its own
// thread and hands decoded batches, in sequence order, to the core thread.
//
// Sequence. Batches carry consecutive sequence numbers. The subscriber remembers the next one it
// expects:
//  - a batch past it is a gap (the SUB socket dropped messages, or the subscriber joined late
//    after a reconnect): it asks the replay socket (ROUTER; request [empty, start seq], answers
//    [empty, (topic,) seq, payload]... ending with seq -1 and an empty payload) for the missing
//    range and delivers it first. When there is no replay endpoint, it does not answer within
//    replay_timeout, or it no longer has the whole range, the subscriber resets instead: the
//    core drops the engine-event view and relies on prediction and evidence until new events
//    rebuild it;
//  - a batch before it means the publisher restarted (its sequence starts at 0 again): reset, and
//    expect 0 (so a restarted publisher's first batches, missed while reconnecting, are replayed).
// ZMQ reconnects a SUB socket to a restarted publisher by itself. The first batch received sets
// the sequence. When it is not batch 0, the engine ran before this node subscribed and may hold
// cached blocks: the subscriber asks the replay socket for everything before it once (at most
// max_replay_batches) and delivers the contiguous run that ends just before it — the publisher
// keeps only its latest batches, and the view skips blocks whose parents it never saw. Without a
// replay endpoint, or when that catch-up fails, the view starts empty.
//
// Malformed messages (wrong frame count, a sequence frame that is not 8 bytes, an undecodable
// payload) are counted, logged (rate-limited) and skipped; the subscriber keeps running.
//
// Threads. Everything here runs on the subscriber's thread except the handlers, which run on the
// core thread through `post` (the daemon's post-to-core hook); the subscriber never touches core
// state. Stats are atomics, readable from any thread.
//
// Ownership: Start() connects the sockets (bad endpoints fail there) and starts the thread; the
// destructor stops and joins it. Tasks already posted may still run afterwards: the handlers must
// guard their target (the hosted engine captures a weak_ptr).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "hearsay/common/status.h"
#include "hearsay/upstream/kv_events_decoder.h"

namespace hearsay::upstream {

struct KvEventsSubscriberOptions {
  std::string endpoint;         // the publisher's PUB socket, "tcp://host:5557"
  std::string replay_endpoint;  // its ROUTER replay socket; empty: none (gaps reset)
  std::string topic;            // the publisher's topic; empty subscribes to every topic
  std::chrono::milliseconds replay_timeout{2000};
  std::chrono::milliseconds poll_interval{100};  // how often the thread checks for stop
  // Most batches one replay may return before it counts as failed.
  uint64_t max_replay_batches = 100000;
};

// INVALID_ARGUMENT unless the endpoints are tcp://HOST:PORT, ipc://PATH or inproc://NAME.
Status ValidateKvEventsSubscriberOptions(const KvEventsSubscriberOptions& options);

struct KvEventsSubscriberStats {
  uint64_t messages = 0;   // messages received on the SUB socket
  uint64_t batches = 0;    // batches delivered (live and replayed)
  uint64_t malformed = 0;  // messages or replayed batches skipped as malformed
  uint64_t gaps = 0;       // sequence gaps seen
  uint64_t replays = 0;    // gaps filled by replay
  uint64_t replayed_batches = 0;
  uint64_t replay_failures = 0;  // replay asked and failed (timeout, missing range, bad answer)
  uint64_t resets = 0;           // views dropped (gap not replayed, publisher restart)
  uint64_t restarts = 0;         // publisher restarts seen (sequence went back)
  uint64_t catch_ups = 0;        // catch-ups at start that delivered the publisher's buffer
};

class KvEventsSubscriber {
 public:
  using Post = std::function<void(std::function<void()>)>;
  struct Handlers {
    // A batch, in sequence order, with no gap since the last batch or reset.
    std::function<void(KvEventBatch)> on_batch;
    // The view must be dropped: events were lost for good.
    std::function<void(std::string reason)> on_reset;
  };

  // Connects and starts the thread. INVALID_ARGUMENT for bad options, UNAVAILABLE when ZMQ
  // refuses an endpoint.
  static Result<std::unique_ptr<KvEventsSubscriber>> Start(KvEventsSubscriberOptions options,
                                                           Post post, Handlers handlers);
  ~KvEventsSubscriber();
  KvEventsSubscriber(const KvEventsSubscriber&) = delete;
  KvEventsSubscriber& operator=(const KvEventsSubscriber&) = delete;

  KvEventsSubscriberStats stats() const;
  const KvEventsSubscriberOptions& options() const { return options_; }

 private:
  struct Impl;
  KvEventsSubscriber(KvEventsSubscriberOptions options, Post post, Handlers handlers);
  void Run();

  KvEventsSubscriberOptions options_;
  Post post_;
  Handlers handlers_;
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace hearsay::upstream
