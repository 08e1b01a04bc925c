// CertifiedKeySource: members' gossip signing keys bound to their node certificates (mutual TLS).
//
// A key announced in gossip proves nothing: any holder of the cluster key can announce any key
// for any member, and a peer that believed the first one it saw would let that holder forge the
// member's signed state (docs/gossip-security.md, "Keys bound to certificates"). Under mutual TLS
// each member holds a certificate of the cluster CA that names its node id. This source asks the
// member itself for its key, over a TLS connection on which the member must show that
// certificate (the fetch checks it, http::ClientRequest::tls_peer_id): the member's GET /health
// answers {"node": id, "generation": "G", "signing_key": base64 of 32 bytes}. The key is
// confirmed for (id, G) only if the answer names the same node and generation; anything else
// (another node, another generation, no or a malformed key, a failed fetch) confirms nothing and
// is asked again after `retry_after`.
//
// Thread-safety: ConfirmedKey, and the fetch's done callback, run on the core thread only. The
// callback holds the source weakly, so it may run (or not) after the source is gone.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "hearsay/common/ids.h"
#include "hearsay/common/status.h"
#include "hearsay/env/time.h"
#include "hearsay/gossip/signing_key_source.h"

namespace hearsay::net {

class CertifiedKeySource final : public gossip::SigningKeySource {
 public:
  // `done` gets the /health body, or the error; it must run on the core thread.
  using Done = std::function<void(Result<std::string> body)>;
  // Starts GET /health at `api_address` over mutual TLS, the server's certificate naming `id`.
  using Fetch = std::function<void(const NodeId& id, const Address& api_address, Done done)>;

  struct Stats {
    uint64_t fetches = 0;    // /health requests started
    uint64_t confirmed = 0;  // keys confirmed
    uint64_t refused = 0;    // answers that confirmed nothing (mismatch, bad key, failed fetch)
  };

  CertifiedKeySource(Fetch fetch, std::function<TimePoint()> now, Duration retry_after);

  std::string ConfirmedKey(const NodeId& id, Generation generation,
                           const Address& api_address) override;
  Stats stats() const { return state_->stats; }

  // The key a /health body states for (id, generation): 32 bytes, or INVALID_ARGUMENT if it
  // does not parse, names another node or generation, or has no valid key.
  static Result<std::string> KeyFromHealth(std::string_view body, const NodeId& id,
                                           Generation generation);
  // The /health fields this node adds: its public signing key (32 bytes) as base64.
  static std::string EncodeKey(std::string_view key);

 private:
  struct Entry {
    std::string key;  // confirmed (32 bytes) or empty
    bool in_flight = false;
    TimePoint next_try{};
  };
  struct State {
    // Invariant: at most one generation per id (a newer one replaces the older).
    std::map<NodeId, std::pair<Generation, Entry>> entries;
    Stats stats;
  };

  Fetch fetch_;
  std::function<TimePoint()> now_;
  Duration retry_after_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace hearsay::net
