// EnvelopeFramer: gossip::Framer over the cluster envelope (envelope.h), so a gossip::Node's
// messages are authenticated, encrypted and replay-checked. The node additionally drops any
// message whose body names a sender or generation other than the one the envelope proves.
//
// Ownership: borrows a Sealer and an Opener (the node's own), which must outlive it.
// Thread-safety: core thread only, like the node.
#pragma once

#include "hearsay/gossip/envelope.h"
#include "hearsay/gossip/framer.h"

namespace hearsay::gossip {

class EnvelopeFramer final : public Framer {
 public:
  EnvelopeFramer(Sealer& sealer, Opener& opener) : sealer_(sealer), opener_(opener) {}

  Result<std::vector<uint8_t>> Seal(Channel channel, std::span<const uint8_t> body) override {
    return sealer_.Seal(channel, body);
  }
  Result<OpenedBody> Open(Channel channel, std::span<const uint8_t> frame) override {
    Result<Opened> o = opener_.Open(channel, frame);
    if (!o.ok()) return o.status();
    return OpenedBody{std::move(o->sender), o->generation, std::move(o->plaintext)};
  }
  size_t SealedBytes(size_t body_bytes) const override { return sealer_.SealedBytes(body_bytes); }

 private:
  Sealer& sealer_;
  Opener& opener_;
};

}  // namespace hearsay::gossip
