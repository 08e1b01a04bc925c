#include "hearsay/net/peer_auth.h"

#include <sodium.h>

#include <chrono>
#include <cstring>
#include <optional>

#include "hearsay/http/peer_auth_header.h"

namespace hearsay::net {

namespace {

using Nonce = NonceWindow::Nonce;
using MacKey = std::array<uint8_t, 32>;
using Mac = std::array<uint8_t, 32>;

std::string_view Label(AuthPurpose purpose) {
  return purpose == AuthPurpose::kPeer ? "hearsay/peer-request/v2" : "hearsay/admin-request/v2";
}

MacKey DeriveKey(const gossip::ClusterKey& key, AuthPurpose purpose) {
  MacKey k{};
  const std::string_view label = Label(purpose);
  crypto_generichash(k.data(), k.size(), reinterpret_cast<const uint8_t*>(label.data()),
                     label.size(), key.bytes().data(), key.bytes().size());
  return k;
}

void Field(crypto_generichash_state* st, const void* data, size_t n) {
  uint8_t len[4] = {uint8_t(n >> 24), uint8_t(n >> 16), uint8_t(n >> 8), uint8_t(n)};
  crypto_generichash_update(st, len, 4);
  crypto_generichash_update(st, static_cast<const uint8_t*>(data), n);
}

void Field(crypto_generichash_state* st, std::string_view s) { Field(st, s.data(), s.size()); }

Mac ComputeMac(const MacKey& key, const AuthFields& f, int64_t ts_ms, const Nonce& nonce) {
  std::array<uint8_t, 32> body_digest{};
  crypto_generichash(body_digest.data(), body_digest.size(),
                     reinterpret_cast<const uint8_t*>(f.body.data()), f.body.size(), nullptr, 0);
  uint8_t ts[8];
  for (int i = 0; i < 8; ++i)
    ts[i] = static_cast<uint8_t>(static_cast<uint64_t>(ts_ms) >> (56 - 8 * i));
  crypto_generichash_state st;
  crypto_generichash_init(&st, key.data(), key.size(), 32);
  Field(&st, f.method);
  Field(&st, f.path);
  Field(&st, body_digest.data(), body_digest.size());
  Field(&st, ts, sizeof(ts));
  Field(&st, nonce.data(), nonce.size());
  Field(&st, f.sender);
  Field(&st, f.receiver);
  if (!f.tenant.empty()) {
    Field(&st, std::string_view("tenant"));
    Field(&st, f.tenant);
  }
  Mac mac{};
  crypto_generichash_final(&st, mac.data(), mac.size());
  return mac;
}

std::string Format(int64_t ts_ms, const Nonce& nonce, const Mac& mac) {
  return http::FormatPeerAuth(http::PeerAuthValue{ts_ms, nonce, mac});
}

}  // namespace

size_t NonceWindow::NonceHash::operator()(const Nonce& n) const {
  size_t h;
  std::memcpy(&h, n.data(), sizeof(h));  // random bytes: any 8 of them hash well
  return h;
}

bool NonceWindow::Fresh(int64_t ts_ms, const Nonce& nonce) const {
  return ts_ms > floor_ && seen_.count(nonce) == 0;
}

void NonceWindow::Record(int64_t ts_ms, const Nonce& nonce, int64_t oldest_ms) {
  while (!order_.empty() && (order_.size() >= capacity_ || order_.front().first < oldest_ms)) {
    if (order_.size() >= capacity_) floor_ = std::max(floor_, order_.front().first);
    seen_.erase(order_.front().second);
    order_.pop_front();
  }
  if (capacity_ == 0) return;
  order_.emplace_back(ts_ms, nonce);
  seen_.insert(nonce);
}

PeerAuthenticator::PeerAuthenticator(const gossip::Keyring& keyring, AuthPurpose purpose,
                                     PeerAuthOptions options)
    : purpose_(purpose), options_(options), window_(options.window) {
  Update(keyring);
}

PeerAuthenticator::PeerAuthenticator(PeerAuthenticator&& other) noexcept
    : insecure_(other.insecure_), purpose_(other.purpose_), options_(other.options_), window_(0) {
  std::lock_guard<std::mutex> lock(other.mu_);
  has_primary_ = other.has_primary_;
  primary_ = other.primary_;
  accepted_ = std::move(other.accepted_);
  window_ = std::move(other.window_);
}

void PeerAuthenticator::Update(const gossip::Keyring& keyring) {
  if (insecure_) return;
  const gossip::ClusterKey* primary = keyring.primary();
  std::vector<MacKey> accepted;
  for (const gossip::ClusterKey& k : keyring.installed())
    accepted.push_back(DeriveKey(k, purpose_));
  std::lock_guard<std::mutex> lock(mu_);
  has_primary_ = primary != nullptr;
  if (primary != nullptr) primary_ = DeriveKey(*primary, purpose_);
  accepted_ = std::move(accepted);
}

std::string PeerAuthenticator::SignWith(const gossip::ClusterKey& key, AuthPurpose purpose,
                                        const AuthFields& fields, int64_t ts_ms,
                                        const Nonce& nonce) {
  return Format(ts_ms, nonce, ComputeMac(DeriveKey(key, purpose), fields, ts_ms, nonce));
}

std::string PeerAuthenticator::Sign(const AuthFields& fields, int64_t now_ms) const {
  if (insecure_) return {};
  Nonce nonce{};
  randombytes_buf(nonce.data(), nonce.size());
  MacKey key;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!has_primary_) return {};
    key = primary_;
  }
  return Format(now_ms, nonce, ComputeMac(key, fields, now_ms, nonce));
}

PeerAuthenticator::Verdict PeerAuthenticator::Verify(std::string_view value,
                                                     const AuthFields& fields, int64_t now_ms) {
  if (insecure_) return Verdict::kOk;
  if (value.empty()) return Verdict::kMissing;
  const std::optional<http::PeerAuthValue> parsed = http::ParsePeerAuth(value);
  if (!parsed) return Verdict::kMalformed;
  const int64_t ts = parsed->ts_ms;
  const Nonce& nonce = parsed->nonce;
  const Mac& mac = parsed->mac;
  if (ts < now_ms - options_.max_skew_ms || ts > now_ms + options_.max_skew_ms) {
    return Verdict::kStale;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!window_.Fresh(ts, nonce)) return Verdict::kReplayed;
  bool ok = false;
  for (const MacKey& k : accepted_) {
    const Mac expected = ComputeMac(k, fields, ts, nonce);
    if (sodium_memcmp(expected.data(), mac.data(), mac.size()) == 0) ok = true;
  }
  if (!ok) return Verdict::kBadMac;
  window_.Record(ts, nonce, now_ms - options_.max_skew_ms);
  return Verdict::kOk;
}

std::string SignPeerRequest(const gossip::ClusterKey& key, const AuthFields& fields,
                            int64_t now_ms) {
  return PeerAuthenticator(gossip::Keyring(key), AuthPurpose::kPeer).Sign(fields, now_ms);
}

std::string_view VerdictName(PeerAuthenticator::Verdict v) {
  switch (v) {
    case PeerAuthenticator::Verdict::kOk:
      return "ok";
    case PeerAuthenticator::Verdict::kMissing:
      return "missing";
    case PeerAuthenticator::Verdict::kMalformed:
      return "malformed";
    case PeerAuthenticator::Verdict::kStale:
      return "stale";
    case PeerAuthenticator::Verdict::kReplayed:
      return "replayed";
    case PeerAuthenticator::Verdict::kBadMac:
      return "bad_mac";
  }
  return "unknown";
}

int64_t UnixMillisNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace hearsay::net
