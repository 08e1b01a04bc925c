// DelayedPeerClient: a PeerClient decorator that holds each forward for a set delay before it
// hands it to the inner client, and holds each of the forward's answer events (first token,
// output, the end) as long before it passes them to the sink: the peer client's half of the
// daemon's link faults (POST /debug/faults "delay_ms", for hosts whose kernel has no netem). A
// forward then takes the round trip it would take with netem delaying every node's egress by
// the same amount, and that the simulator's network gives it (one delay out, one back).
//
// A forward cancelled while it is held never reaches the inner client; its sink gets the
// terminal OnError(ABORTED, before_first_token = true), posted, as PeerClient's contract allows.
// The answer's events keep their order (timers of equal delay run in the order they were set);
// after Cancel() the events still held are dropped, and the sink gets none of the rest.
// Ownership: borrows the inner client and the scheduler, which must outlive it; sinks are
// borrowed as PeerClient says. Thread-safety: the scheduler's (core) thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "hearsay/env/peer_client.h"
#include "hearsay/env/scheduler.h"

namespace hearsay::net {

class DelayedPeerClient final : public PeerClient {
 public:
  DelayedPeerClient(PeerClient& inner, Scheduler& scheduler)
      : inner_(inner), scheduler_(scheduler) {}
  ~DelayedPeerClient() override;
  DelayedPeerClient(const DelayedPeerClient&) = delete;
  DelayedPeerClient& operator=(const DelayedPeerClient&) = delete;

  // Forwards from now on wait `delay` first; zero (the default) passes them straight through.
  void set_delay(Duration delay) { delay_ = delay; }
  Duration delay() const { return delay_; }

  void Forward(const Address& to, PeerRequest request, ResponseSink* sink) override;
  void Cancel(uint64_t id) override;
  // A held forward never reaches the inner client: its sink gets OnError(status, true), posted.
  void Abort(uint64_t id, const Status& status) override;
  // Forwards held now.
  size_t held() const { return held_.size(); }
  // Forwards whose answer events pass through this client (sent with a delay, not yet ended).
  size_t answering() const { return answers_.size(); }

 private:
  struct Held {
    TimerId timer = kNoTimer;
    ResponseSink* sink = nullptr;
  };
  // The sink the inner client answers a delayed forward to: holds each event for the delay,
  // then passes it to the node's sink (unless the forward was cancelled meanwhile).
  class DelayingSink;
  struct DelayingSinkDeleter {
    void operator()(DelayingSink* sink) const;
  };

  // Ends held forward `id` (which exists) with OnError(status, true), posted.
  void DropHeld(uint64_t id, const Status& status);

  PeerClient& inner_;
  Scheduler& scheduler_;
  Duration delay_{0};
  // Forwards waiting for their delay, by request id. Invariant: an entry's timer is pending.
  std::unordered_map<uint64_t, Held> held_;
  // The answer sinks of forwards handed to the inner client with a delay, by request id; each
  // lives until its terminal event has been passed on (or dropped).
  std::unordered_map<uint64_t, std::unique_ptr<DelayingSink, DelayingSinkDeleter>> answers_;
  // Lets posted callbacks detect that this client is gone.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace hearsay::net
