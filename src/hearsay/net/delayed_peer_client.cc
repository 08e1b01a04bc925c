#include "hearsay/net/delayed_peer_client.h"

#include <deque>
#include <string>
#include <utility>
#include <vector>

namespace hearsay::net {

class DelayedPeerClient::DelayingSink final : public ResponseSink {
 public:
  DelayingSink(DelayedPeerClient& client, ResponseSink* sink, Duration delay)
      : client_(client), sink_(sink), delay_(delay) {}
  ~DelayingSink() override {
    for (TimerId t : timers_) client_.scheduler_.Cancel(t);
  }
  void Cancelled() { cancelled_ = true; }

  void OnFirstToken(uint64_t id, const PeerFirstToken& first) override {
    Later(id, false, [first](ResponseSink* s, uint64_t i) { s->OnFirstToken(i, first); });
  }
  void OnOutput(uint64_t id, const PeerOutput& output) override {
    // PeerOutput views the inner client's buffer, which is gone by the time this fires: copy.
    Later(id, false,
          [tokens = std::vector<uint32_t>(output.tokens.begin(), output.tokens.end()),
           text = std::string(output.text)](ResponseSink* s, uint64_t i) {
            s->OnOutput(i, PeerOutput{tokens, text});
          });
  }
  void OnComplete(uint64_t id, const PeerUsage& usage) override {
    Later(id, true, [usage](ResponseSink* s, uint64_t i) { s->OnComplete(i, usage); });
  }
  void OnError(uint64_t id, const Status& status, bool before_first_token) override {
    Later(id, true, [status, before_first_token](ResponseSink* s, uint64_t i) {
      s->OnError(i, status, before_first_token);
    });
  }
  void OnRestart(uint64_t id) override {
    Later(id, false, [](ResponseSink* s, uint64_t i) { s->OnRestart(i); });
  }

 private:
  template <typename Fn>
  void Later(uint64_t id, bool terminal, Fn fn) {
    timers_.push_back(client_.scheduler_.RunAfter(delay_, [this, id, terminal, fn] {
      // Timers of one delay fire in the order they were set: this one is the oldest pending.
      timers_.pop_front();
      if (!cancelled_) fn(sink_, id);
      if (terminal) client_.answers_.erase(id);  // destroys this sink: nothing may follow
    }));
  }

  DelayedPeerClient& client_;
  ResponseSink* sink_;
  Duration delay_;
  bool cancelled_ = false;
  std::deque<TimerId> timers_;  // pending, oldest first
};

void DelayedPeerClient::DelayingSinkDeleter::operator()(DelayingSink* sink) const { delete sink; }

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
        if (answers_.count(id) != 0) {
          // The previous forward of this id has not ended here: the inner client refuses it.
          return sink->OnError(
              id, InvalidArgumentError("forward id " + std::to_string(id) + " in flight"), true);
        }
        ResponseSink* to_inner = new DelayingSink(*this, sink, delay_);
        answers_[id].reset(static_cast<DelayingSink*>(to_inner));
        inner_.Forward(to, std::move(request), to_inner);
      });
  held_[id] = Held{timer, sink};
}

void DelayedPeerClient::Cancel(uint64_t id) {
  if (held_.count(id) == 0) {
    if (auto it = answers_.find(id); it != answers_.end()) it->second->Cancelled();
    return inner_.Cancel(id);
  }
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
