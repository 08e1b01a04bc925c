// Transport: how a node's core sends messages to its peers.
//
// Sending is fire-and-forget and may fail silently: a message can be lost, duplicated, delayed
// or reordered, on both channels. The core's protocols are built to be correct anyway (gossip
// merges are idempotent and monotone). Messages arrive at the host, which hands them to the
// node's MessageSink on the core's thread.
//
// Implementations: the simulator's network (sim/), with injected faults; UDP and TCP in net/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hearsay/common/ids.h"

namespace hearsay {

enum class Channel : uint8_t {
  // One datagram, at most Transport::MaxDatagramBytes(). Cheap, unordered, lossy (UDP).
  kDatagram = 0,
  // A larger message over a stream (TCP). Usually delivered, but the core must not rely on it.
  kStream = 1,
};

class Transport {
 public:
  virtual ~Transport() = default;

  // Queues `payload` for `to`. Never blocks and never reports failure: the network may drop it.
  virtual void Send(const Address& to, Channel channel, std::vector<uint8_t> payload) = 0;

  // The largest payload that kDatagram carries. Larger datagrams are dropped by the transport.
  virtual size_t MaxDatagramBytes() const = 0;
};

// Receives what peers sent. The host calls it on the core's thread.
class MessageSink {
 public:
  virtual ~MessageSink() = default;
  // `payload` is untrusted bytes from `from` (an address the sender claims, not a proof).
  virtual void OnMessage(const Address& from, Channel channel,
                         std::span<const uint8_t> payload) = 0;
};

}  // namespace hearsay
