// DelayedPeerClient: a PeerClient decorator that holds each forward for a set delay before it
// hands it to the inner client: the peer client's half of the daemon's link faults
// (POST /debug/faults "delay_ms", for hosts whose kernel has no netem), the same fixed one-way
// delay the simulator's network applies to a forward.
//
// A forward cancelled while it is held never reaches the inner client; its sink gets the
// terminal OnError(ABORTED, before_first_token = true), posted, as PeerClient's contract allows.
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

 private:
  struct Held {
    TimerId timer = kNoTimer;
    ResponseSink* sink = nullptr;
  };

  // Ends held forward `id` (which exists) with OnError(status, true), posted.
  void DropHeld(uint64_t id, const Status& status);

  PeerClient& inner_;
  Scheduler& scheduler_;
  Duration delay_{0};
  // Forwards waiting for their delay, by request id. Invariant: an entry's timer is pending.
  std::unordered_map<uint64_t, Held> held_;
  // Lets posted callbacks detect that this client is gone.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace hearsay::net
