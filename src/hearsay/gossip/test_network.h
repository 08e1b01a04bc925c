// TestNetwork: a minimal in-memory network for gossip unit tests, on simenv's VirtualScheduler.
// Each endpoint is a Transport; messages arrive after a fixed latency, and may be lost or
// duplicated (seeded). Multi-node fault scenarios use simenv::SimNetwork instead; this
// exists so gossip unit tests stay small and independent of it.
// Test-only header: nothing in the gossip library includes it.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "hearsay/env/rng.h"
#include "hearsay/env/transport.h"
#include "hearsay/simenv/virtual_scheduler.h"

namespace hearsay::gossip::testing {

class TestNetwork {
 public:
  TestNetwork(simenv::VirtualScheduler& sched, uint64_t seed) : sched_(sched), rng_(seed) {}

  class Endpoint final : public Transport {
   public:
    Endpoint(TestNetwork& net, Address self) : net_(net), self_(std::move(self)) {}
    void Send(const Address& to, Channel channel, std::vector<uint8_t> payload) override {
      net_.Deliver(self_, to, channel, std::move(payload));
    }
    size_t MaxDatagramBytes() const override { return 1400; }

   private:
    TestNetwork& net_;
    Address self_;
  };

  // A transport for `address`; the sink (may be set later) receives what is sent to it.
  Endpoint& Attach(const Address& address) {
    auto& ep = endpoints_[address];
    ep = std::make_unique<Endpoint>(*this, address);
    return *ep;
  }
  void SetSink(const Address& address, MessageSink* sink) { sinks_[address] = sink; }
  // Messages to or from a down address are dropped (a crashed node).
  void SetDown(const Address& address, bool down) {
    if (down) {
      down_.insert(address);
    } else {
      down_.erase(address);
    }
  }
  // Extra delay for messages *from* `address` (a slow node answers late).
  void SetExtraDelay(const Address& address, Duration d) { extra_delay_[address] = d; }
  // Drops messages from a to b (one-way partition) while set.
  void Block(const Address& a, const Address& b, bool blocked) {
    if (blocked) {
      blocked_.insert({a, b});
    } else {
      blocked_.erase({a, b});
    }
  }
  void set_loss(double p) { loss_ = p; }
  void set_dup(double p) { dup_ = p; }
  void set_latency(Duration d) { latency_ = d; }
  uint64_t delivered() const { return delivered_; }

 private:
  void Deliver(const Address& from, const Address& to, Channel channel,
               std::vector<uint8_t> payload) {
    if (channel == Channel::kDatagram && payload.size() > 1400) return;
    if (down_.contains(from) || down_.contains(to) || blocked_.contains({from, to})) return;
    if (rng_.Bernoulli(loss_)) return;
    const int copies = rng_.Bernoulli(dup_) ? 2 : 1;
    Duration delay = latency_;
    if (auto it = extra_delay_.find(from); it != extra_delay_.end()) delay += it->second;
    auto shared = std::make_shared<std::vector<uint8_t>>(std::move(payload));
    for (int i = 0; i < copies; ++i) {
      const Duration jitter(static_cast<int64_t>(rng_.Below(1'000'000)));
      sched_.RunAfter(delay + jitter, [this, from, to, channel, shared] {
        if (down_.contains(to)) return;
        auto it = sinks_.find(to);
        if (it == sinks_.end() || it->second == nullptr) return;
        ++delivered_;
        it->second->OnMessage(from, channel, *shared);
      });
    }
  }

  simenv::VirtualScheduler& sched_;
  Rng rng_;
  std::map<Address, std::unique_ptr<Endpoint>> endpoints_;
  std::map<Address, MessageSink*> sinks_;
  std::set<Address> down_;
  std::map<Address, Duration> extra_delay_;
  std::set<std::pair<Address, Address>> blocked_;
  double loss_ = 0;
  double dup_ = 0;
  Duration latency_ = std::chrono::milliseconds(1);
  uint64_t delivered_ = 0;
};

}  // namespace hearsay::gossip::testing
