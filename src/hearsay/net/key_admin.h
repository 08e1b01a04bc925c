// KeyAdmin: changing a running node's cluster keys, as `serf keys -install/-use/-remove/-list`.
//
// The daemon serves four admin requests on its HTTP port (docs/operations.md, "Key rotation"):
//   GET  /admin/keys          the installed keys' ids, which one is primary, and whether the
//                             keyring is persisted; never a secret
//   POST /admin/keys/install  {"key": "<base64>"}                 makes it available for opening
//   POST /admin/keys/use      {"key": "<base64>"} or {"id": "<8 hex>"}   makes it primary
//   POST /admin/keys/remove   {"key": "<base64>"} or {"id": "<8 hex>"}   uninstalls it
//
// A request must pass two checks before anything else is looked at:
//   1. it comes from a loopback address (unless allow_remote), so new keys never cross the network
//      in cleartext HTTP and only someone on the node's machine can ask;
//   2. it carries X-Hearsay-Admin-Token, an authenticator made for this one request under a key
//      installed now (SignAdminRequest; net/peer_auth.h with the admin purpose, whose derived key
//      differs from the peers'): it covers the method, path, body, a timestamp, a nonce and this
//      node's id, so another local user, or a browser page posting to localhost, cannot change
//      keys without already holding a cluster key, and a captured request cannot be replayed,
//      here or at another node.
// A refused request changes nothing and is logged. Removing the primary key is refused (409), as
// is using or removing a key that is not installed (404) and installing beyond
// Keyring::kMaxKeys (409).
//
// A change is made on a copy of the keyring; the copy is written to the keyring file (when one is
// configured) before it replaces the live keyring, so a failed write (500) changes nothing and a
// restart comes back with exactly the keys the last successful answer listed. Then `on_change`
// runs with the new keyring (the daemon updates its peer authenticator and the token it sends).
//
// Ownership: borrows the live keyring, which the daemon's Sealer and Opener read.
// Thread-safety: Handle() runs on the core thread, the only thread that touches the keyring.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "hearsay/gossip/keyring.h"
#include "hearsay/http/server.h"
#include "hearsay/net/peer_auth.h"

namespace hearsay::net {

// The admin requests' header for their authenticator (SignAdminRequest).
inline constexpr std::string_view kAdminTokenHeader = "x-hearsay-admin-token";

// True for "/admin/keys" and the paths below it.
bool IsKeyAdminPath(std::string_view path);
// The sender an admin authenticator names (the `hearsay keys` tool).
inline constexpr std::string_view kAdminSender = "hearsay-keys";
// The X-Hearsay-Admin-Token value for one admin request to the node `receiver` (its node id, as
// GET /health names it), made with `key` at `now_ms` (unix ms) and a fresh nonce.
std::string SignAdminRequest(const gossip::ClusterKey& key, std::string_view method,
                             std::string_view target, std::string_view body,
                             std::string_view receiver, int64_t now_ms);
// True if `remote` ("ip:port", "[ip6]:port") is a loopback address (127.0.0.0/8, ::1, or
// IPv4-mapped 127.x).
bool IsLoopbackRemote(std::string_view remote);

struct KeyAdminOptions {
  // Where changes are persisted (--keyring-file); empty: they last until the node stops.
  std::string keyring_file;
  // Serve admin requests from non-loopback addresses too (--admin-allow-remote).
  bool allow_remote = false;
  // This node's id: for logs, and the receiver every admin authenticator must name.
  std::string node_id;
  // Unix ms now (the authenticators' clock); null: the wall clock.
  std::function<int64_t()> now_ms;
};

// An answer: HTTP status and JSON body (an OpenAI-style error object when status >= 400).
struct KeyAdminResponse {
  int status = 500;
  std::string body;
};

class KeyAdmin {
 public:
  using OnChange = std::function<void(const gossip::Keyring&)>;

  KeyAdmin(gossip::Keyring& keyring, KeyAdminOptions options, OnChange on_change);

  // Authenticates, parses and applies one admin request (see the file comment).
  KeyAdminResponse Handle(const http::Request& request);
  // The refusal for a request that is not an authenticated admin request from an allowed
  // client (loopback unless allow_remote), or nullopt. Other admin endpoints (/debug/faults)
  // use it too; a request's authenticator is then spent.
  std::optional<KeyAdminResponse> Authenticate(const http::Request& request);

  // The answer an insecure node gives to every admin request (409: it has no keyring).
  static KeyAdminResponse InsecureNode();

 private:
  KeyAdminResponse Refuse(const http::Request& request, std::string why);
  KeyAdminResponse List(std::string_view op, const std::string& key_id, bool changed) const;
  // Writes `next` to the keyring file (if any), then makes it live and runs on_change.
  KeyAdminResponse Commit(gossip::Keyring next, std::string_view op, const std::string& key_id,
                          const http::Request& request);

  gossip::Keyring& keyring_;
  KeyAdminOptions options_;
  OnChange on_change_;
  PeerAuthenticator auth_;  // the admin purpose, over keyring_'s keys
};

}  // namespace hearsay::net
