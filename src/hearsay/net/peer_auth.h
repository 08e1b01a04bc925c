// Peer authentication for the HTTP peer protocol (docs/daemon.md, "Peer protocol").
//
// A forwarded request carries X-Hearsay-Peer-Auth: the lowercase hex of a keyed BLAKE2b-256
// (libsodium crypto_generichash) of the context string "hearsay peer auth v1" under the cluster
// key. Every node of the cluster derives the same token; a receiver accepts the token of any
// installed key, so a key rotation does not break forwarding. The token is a bearer secret that
// proves cluster membership; it is never logged.
//
// Keys change at runtime (`hearsay keys`, key_admin.h): Update() replaces the accepted tokens and
// the token this node sends, atomically with respect to Check() and token().
//
// Thread-safety: every method may be called from any thread (a mutex guards the tokens; Check is
// one short critical section per hop request).
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/gossip/keyring.h"

namespace hearsay::net {

// A token derived from a cluster key for one purpose (`context`): the hex of BLAKE2b-256 keyed
// by the cluster key. Different contexts give unrelated tokens, so one cannot stand for another.
std::string DerivedToken(const gossip::ClusterKey& key, std::string_view context);

// The token for one cluster key.
std::string PeerAuthToken(const gossip::ClusterKey& key);

class PeerAuthenticator {
 public:
  // Accepts the tokens of every key in `keyring`; sends the primary key's token.
  explicit PeerAuthenticator(const gossip::Keyring& keyring);
  // Insecure mode: sends no token and accepts any request.
  static PeerAuthenticator Insecure() { return PeerAuthenticator(); }
  PeerAuthenticator(PeerAuthenticator&& other) noexcept;

  // From now on accepts exactly the tokens of `keyring`'s keys and sends its primary's token.
  // Ignored in insecure mode (an insecure node has no keyring to change).
  void Update(const gossip::Keyring& keyring);
  // True if `token` is valid (always true in insecure mode). Constant time per key.
  bool Check(std::string_view token) const;
  // What this node sends (empty in insecure mode).
  std::string token() const;
  bool insecure() const { return insecure_; }

 private:
  PeerAuthenticator() : insecure_(true) {}

  const bool insecure_ = false;
  mutable std::mutex mu_;
  std::string token_;                  // guarded by mu_
  std::vector<std::string> accepted_;  // guarded by mu_
};

}  // namespace hearsay::net
