// The network of a node that runs alone in a unit test: gossip goes nowhere, and a forward is a
// test failure (a lone node has no one to forward to).
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "hearsay/node/node.h"

namespace hearsay::node::lone {

class NullTransport final : public Transport {
 public:
  void Send(const Address&, Channel, std::vector<uint8_t>) override {}
  size_t MaxDatagramBytes() const override { return 1400; }
};

class NoPeers final : public PeerClient {
 public:
  void Forward(const Address&, PeerRequest request, ResponseSink*) override {
    ADD_FAILURE() << "a lone node forwarded request " << request.id;
  }
};

}  // namespace hearsay::node::lone
