// SigningKeySource: where a node learns a member's signing key when keys are bound to something
// stronger than first sight. With mutual TLS the daemon implements it by asking the member itself
// over a link whose certificate (issued by the cluster CA) names the member
// (net/certified_key_source.h; docs/gossip-security.md, "Keys bound to certificates"); a key
// merely announced in gossip is then never bound.
//
// Thread-safety: called on the gossip node's thread only.
#pragma once

#include <string>

#include "hearsay/common/ids.h"

namespace hearsay::gossip {

class SigningKeySource {
 public:
  virtual ~SigningKeySource() = default;
  // The public key (32 bytes) that member (id, generation) has proven to hold, or empty while
  // none is known. An empty answer may start finding it out (reaching the member at
  // `api_address`, where it accepts forwards; empty if not known yet); the node asks again on
  // the member's next announcement or delta.
  virtual std::string ConfirmedKey(const NodeId& id, Generation generation,
                                   const Address& api_address) = 0;
};

}  // namespace hearsay::gossip
