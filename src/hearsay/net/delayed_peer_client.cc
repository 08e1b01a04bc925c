#include "hearsay/net/delayed_peer_client.h"

#include <utility>

namespace hearsay::net {

DelayedPeerClient::~DelayedPeerClient() {
  for (auto& [id, held] : held_) scheduler_.Cancel(held.timer);
}

void DelayedPeerClient::Forward(const Address& to, PeerRequest request, ResponseSink* sink) {
  if (delay_ <= Duration::zero()) return inner_.Forward(to, std::move(request), sink);
  const uint64_t id = request.id;
  if (held_.count(id) != 0) {
    // The inner client refuses a duplicate id; a held one is not in it yet, so refuse here.
    std::weak_ptr<int> alive = alive_;
    scheduler_.Post([alive, sink, id] {
      if (!alive.expired()) {
        sink->OnError(id, InvalidArgumentError("forward id " + std::to_string(id) + " in flight"),
                      true);
      }
    });
    return;
  }
  const TimerId timer =
      scheduler_.RunAfter(delay_, [this, to, id, request = std::move(request), sink]() mutable {
        held_.erase(id);
        inner_.Forward(to, std::move(request), sink);
      });
  held_[id] = Held{timer, sink};
}

void DelayedPeerClient::Cancel(uint64_t id) {
  if (held_.count(id) == 0) return inner_.Cancel(id);
  DropHeld(id, AbortedError("forward cancelled"));
}

void DelayedPeerClient::Abort(uint64_t id, const Status& status) {
  if (held_.count(id) == 0) return inner_.Abort(id, status);
  DropHeld(id, status);
}

void DelayedPeerClient::DropHeld(uint64_t id, const Status& status) {
  auto it = held_.find(id);
  scheduler_.Cancel(it->second.timer);
  ResponseSink* sink = it->second.sink;
  held_.erase(it);
  std::weak_ptr<int> alive = alive_;
  scheduler_.Post([alive, sink, id, status] {
    if (!alive.expired()) sink->OnError(id, status, true);
  });
}

}  // namespace hearsay::net
