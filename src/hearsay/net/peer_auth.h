// Per-request authentication of peer and admin requests (docs/gossip-security.md, "Peer and admin
// requests").
//
// A forward (X-Hearsay-Peer-Auth) and an admin request (X-Hearsay-Admin-Token) carry one
// authenticator each, made for that request only:
//
//   <unix ms>.<nonce: 32 hex>.<mac: 64 hex>
//
// (http/peer_auth_header.h parses and formats that text; Verify refuses what it does not accept.)
// mac = BLAKE2b-256 keyed with a key derived from the cluster key for the purpose
// (BLAKE2b-256 keyed with the cluster key over "hearsay/peer-request/v2" or
// "hearsay/admin-request/v2"), over the length-prefixed fields: method, path, BLAKE2b-256 of the
// body, the timestamp, the nonce, the sender id and the intended receiver's node id (then, for a
// forward made for a tenant, the label "tenant" and its name). A receiver accepts it when the
// timestamp is within `max_skew` of its own clock, the MAC matches under any installed key (so a
// key rotation does not break requests in flight), and the nonce was not seen before (NonceWindow).
// So a captured request cannot be sent again, to this node or to another one (another receiver id),
// nor changed (method, path, body), nor kept for later.
//
// Keys change at runtime (`hearsay keys`, key_admin.h): Update() replaces the accepted keys and
// the signing key, atomically with respect to Sign() and Verify().
//
// Thread-safety: every method may be called from any thread (a mutex guards the keys and the
// nonce window; Verify is one short critical section per request).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "hearsay/gossip/keyring.h"

namespace hearsay::net {

// The purposes, each with its own derived key: an admin authenticator is never a peer one.
enum class AuthPurpose { kPeer, kAdmin };

// What an authenticator covers, besides its timestamp and nonce.
struct AuthFields {
  std::string_view method;
  std::string_view path;  // the request target as sent (path and query)
  std::string_view body;
  std::string_view sender;    // the sending node's id (X-Hearsay-Origin), or the admin tool's name
  std::string_view receiver;  // the node id the request is meant for
  // The tenant a forward is served for (X-Hearsay-Tenant); covered only when not empty, so an
  // authenticator without a tenant is the same as before tenants existed.
  std::string_view tenant = {};
};

// The nonces of accepted authenticators, with their timestamps: at most `capacity`, oldest first.
// A full window forgets its oldest nonce and from then on refuses every timestamp at or below it
// (the floor), so nothing it forgot can be accepted again. Entries older than the skew allowance
// are forgotten too (the clock check refuses them anyway).
// Invariants: seen_ holds exactly the nonces in order_; every timestamp accepted is > floor_.
class NonceWindow {
 public:
  using Nonce = std::array<uint8_t, 16>;
  explicit NonceWindow(size_t capacity) : capacity_(capacity) {}
  // True if (ts, nonce) may be accepted: above the floor and not seen.
  bool Fresh(int64_t ts_ms, const Nonce& nonce) const;
  // Records an accepted nonce; forgets what is older than `oldest_ms` or beyond the capacity.
  void Record(int64_t ts_ms, const Nonce& nonce, int64_t oldest_ms);
  size_t size() const { return order_.size(); }
  int64_t floor_ms() const { return floor_; }

 private:
  struct NonceHash {
    size_t operator()(const Nonce& n) const;
  };
  size_t capacity_;
  int64_t floor_ = INT64_MIN;
  std::deque<std::pair<int64_t, Nonce>> order_;
  std::unordered_set<Nonce, NonceHash> seen_;
};

struct PeerAuthOptions {
  // How far a timestamp may be from the receiver's clock, either way.
  int64_t max_skew_ms = 30'000;
  // Nonces remembered (about 60 bytes each): 65,536 cover 2,000 requests/s for the whole skew.
  size_t window = 65'536;
};

class PeerAuthenticator {
 public:
  enum class Verdict { kOk, kMissing, kMalformed, kStale, kReplayed, kBadMac };

  // Accepts authenticators made with any key of `keyring`; signs with its primary.
  PeerAuthenticator(const gossip::Keyring& keyring, AuthPurpose purpose,
                    PeerAuthOptions options = {});
  // Insecure mode: signs nothing and accepts any request.
  static PeerAuthenticator Insecure() { return PeerAuthenticator(); }
  PeerAuthenticator(PeerAuthenticator&& other) noexcept;

  // From now on accepts exactly `keyring`'s keys and signs with its primary. Ignored in insecure
  // mode (an insecure node has no keyring to change).
  void Update(const gossip::Keyring& keyring);
  // The authenticator for one request made at `now_ms` (unix ms), with a fresh random nonce;
  // empty in insecure mode.
  std::string Sign(const AuthFields& fields, int64_t now_ms) const;
  // Checks `value` for the request `fields` received at `now_ms`, and on success records its
  // nonce, so the same value is refused from then on. Always kOk in insecure mode.
  Verdict Verify(std::string_view value, const AuthFields& fields, int64_t now_ms);
  bool insecure() const { return insecure_; }

  // The authenticator for fixed inputs (tests and the CLI use Sign).
  static std::string SignWith(const gossip::ClusterKey& key, AuthPurpose purpose,
                              const AuthFields& fields, int64_t ts_ms,
                              const NonceWindow::Nonce& nonce);

 private:
  using MacKey = std::array<uint8_t, 32>;
  PeerAuthenticator() : insecure_(true), window_(0) {}

  const bool insecure_ = false;
  AuthPurpose purpose_ = AuthPurpose::kPeer;
  PeerAuthOptions options_;
  mutable std::mutex mu_;
  bool has_primary_ = false;      // guarded by mu_
  MacKey primary_{};              // guarded by mu_
  std::vector<MacKey> accepted_;  // guarded by mu_
  NonceWindow window_;            // guarded by mu_
};

// A peer authenticator made with `key` at `now_ms` with a fresh nonce (tests and tools; the
// daemon signs through its PeerAuthenticator).
std::string SignPeerRequest(const gossip::ClusterKey& key, const AuthFields& fields,
                            int64_t now_ms);

// The verdict's name, for logs and error messages.
std::string_view VerdictName(PeerAuthenticator::Verdict v);

// Unix time in ms from the wall clock (the authenticators' timestamps).
int64_t UnixMillisNow();

}  // namespace hearsay::net
