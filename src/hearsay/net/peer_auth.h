// Peer authentication for the HTTP peer protocol (docs/daemon.md, "Peer protocol").
//
// A forwarded request carries X-Hearsay-Peer-Auth: the lowercase hex of a keyed BLAKE2b-256
// (libsodium crypto_generichash) of the context string "hearsay peer auth v1" under the cluster
// key. Every node of the cluster derives the same token; a receiver accepts the token of any
// installed key, so a key rotation does not break forwarding. The token is a bearer secret that
// proves cluster membership; it is never logged.
//
// Thread-safety: immutable after construction; Check() may be called from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hearsay/gossip/keyring.h"

namespace hearsay::net {

// The token for one cluster key.
std::string PeerAuthToken(const gossip::ClusterKey& key);

class PeerAuthenticator {
 public:
  // Accepts the tokens of every key in `keyring`; sends the primary key's token.
  explicit PeerAuthenticator(const gossip::Keyring& keyring);
  // Insecure mode: sends no token and accepts any request.
  static PeerAuthenticator Insecure() { return PeerAuthenticator(); }

  // True if `token` is valid (always true in insecure mode). Constant time per key.
  bool Check(std::string_view token) const;
  // What this node sends (empty in insecure mode).
  const std::string& token() const { return token_; }
  bool insecure() const { return insecure_; }

 private:
  PeerAuthenticator() : insecure_(true) {}

  bool insecure_ = false;
  std::string token_;
  std::vector<std::string> accepted_;
};

}  // namespace hearsay::net
