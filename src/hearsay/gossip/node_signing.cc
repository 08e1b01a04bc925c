// Signed origin state (state_signing.h): the own state published signed once per sign interval,
// and other origins' state applied only with their valid signature.
#include <algorithm>

#include "hearsay/gossip/node.h"
#include "hearsay/gossip/signing_key_source.h"

namespace hearsay::gossip {

std::string Node::signing_public_key() const {
  if (!signing() || !signing_key_) return {};
  const PublicKey& k = signing_key_->public_key();
  return std::string(reinterpret_cast<const char*>(k.data()), k.size());
}

void Node::OwnWritten(uint64_t old) {
  if (published_) return;  // the digest follows the signed store (SignTick)
  UpdateDigest(self_id_hash_, generation_, old, self_store_->max_version());
}

void Node::SignTick() {
  if (left_ || !published_) return;
  const uint64_t old = published_->max_version();
  if (self_store_->max_version() > old) {
    // Everything written since the last signature, as one whole delta (a snapshot if the writer
    // collected tombstones it needs).
    std::optional<OriginDelta> d = self_store_->BuildDelta(old, SIZE_MAX);
    if (d) {
      const std::optional<StateHash> commitment = published_->CommitmentAfter(*d);
      counters_.commitment_updates += d->entries.size();
      published_->Apply(*d, nullptr);
      Signature sig{};
      if (config_.signatures == SignatureMode::kEd25519 && commitment && signing_key_) {
        const std::string statement = StateStatement(id_, generation_, published_->max_version(),
                                                     published_->stride(), commitment->Digest());
        sig = signing_key_->Sign(
            {reinterpret_cast<const uint8_t*>(statement.data()), statement.size()});
      }
      ++counters_.signatures_made;
      published_->SetSigned(commitment, sig);
      UpdateDigest(self_id_hash_, generation_, old, published_->max_version());
    }
  }
  After(SignInterval(), &Node::SignTick);
}

Duration Node::SignInterval() const {
  const double share =
      double(ClusterSize()) / double(std::max<size_t>(config_.sign_budget_members, 1));
  const auto scaled = std::chrono::duration_cast<Duration>(config_.sign_interval * share);
  return std::clamp(scaled, std::min(config_.gossip_interval, config_.sign_interval),
                    config_.sign_interval);
}

bool Node::ConfirmKey(MemberRec& m, const std::string* announced) {
  if (m.key_generation == m.generation && !m.signing_key.empty()) {
    if (announced != nullptr && *announced != m.signing_key) ++counters_.signing_key_conflicts;
    return true;
  }
  const std::string key = config_.key_source->ConfirmedKey(m.id, m.generation, m.api_address);
  if (key.size() != kSigningPublicKeyBytes) return false;
  if (announced != nullptr && *announced != key) ++counters_.signing_key_conflicts;
  ++counters_.signing_keys_confirmed;
  BindKey(m, key);
  return true;
}

bool Node::VerifyDelta(MemberRec& m, const OriginDelta& d, std::optional<StateHash>* commitment) {
  if (config_.key_source != nullptr && d.signature) ConfirmKey(m, nullptr);
  if (!d.signature || m.key_generation != m.generation || m.signing_key.empty()) {
    ++counters_.deltas_unverified;
    return false;
  }
  ++counters_.signatures_verified;
  counters_.commitment_updates += d.entries.size();
  if (config_.signatures == SignatureMode::kModeled) return true;
  *commitment = m.store->CommitmentAfter(d);
  if (!*commitment) {
    ++counters_.deltas_forged;
    return false;
  }
  const std::string statement =
      StateStatement(d.id, d.generation, d.to_version, d.stride, (*commitment)->Digest());
  if (!VerifySignature(
          {reinterpret_cast<const uint8_t*>(m.signing_key.data()), m.signing_key.size()},
          {reinterpret_cast<const uint8_t*>(statement.data()), statement.size()}, *d.signature)) {
    ++counters_.deltas_forged;
    return false;
  }
  return true;
}

}  // namespace hearsay::gossip
