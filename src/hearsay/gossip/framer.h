// Framer: the seam between gossip message bodies (wire.h) and the bytes on the network.
//
// The production framer is EnvelopeFramer (envelope_framer.h) over the authenticated, encrypted
// envelope (envelope.h): Seal() encrypts and authenticates a body for the cluster, Open()
// verifies, decrypts and rejects replays, and names the authenticated sender. PlaintextFramer
// (below) is the identity, for tests and simulations that do not exercise the crypto.
// gossip::Node calls Seal once per outgoing message and Open once per incoming one; a failed Open
// is counted as a dropped message and never changes node state.
//
// Ownership: the caller owns the framer and keeps it alive as long as the node.
// Thread-safety: called only on the node's core thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hearsay/common/ids.h"
#include "hearsay/common/status.h"
#include "hearsay/env/transport.h"

namespace hearsay::gossip {

// A body out of a frame, with the sender the frame proves (empty if the framer proves none).
struct OpenedBody {
  NodeId sender;
  Generation generation = 0;
  std::vector<uint8_t> body;
};

class Framer {
 public:
  virtual ~Framer() = default;
  // The bytes to send for one message body on `channel`, or an error (too large, no key).
  virtual Result<std::vector<uint8_t>> Seal(Channel channel, std::span<const uint8_t> body) = 0;
  // The body inside `frame`, or an error if it is not authentic, fresh and well formed.
  virtual Result<OpenedBody> Open(Channel channel, std::span<const uint8_t> frame) = 0;
  // The frame size for a body of `body_bytes`.
  virtual size_t SealedBytes(size_t body_bytes) const = 0;
};

// The identity framer: no authentication, no encryption, no sender proof.
class PlaintextFramer final : public Framer {
 public:
  Result<std::vector<uint8_t>> Seal(Channel /*channel*/, std::span<const uint8_t> body) override {
    return std::vector<uint8_t>(body.begin(), body.end());
  }
  Result<OpenedBody> Open(Channel /*channel*/, std::span<const uint8_t> frame) override {
    return OpenedBody{{}, 0, std::vector<uint8_t>(frame.begin(), frame.end())};
  }
  size_t SealedBytes(size_t body_bytes) const override { return body_bytes; }
};

}  // namespace hearsay::gossip
