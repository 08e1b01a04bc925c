// Signed membership (member_statement.h; docs/gossip-security.md, "Signed membership"): a
// member's statements about itself verify under its own key, accusations under their accuser's,
// and a node checks a signature only for an update that would change its view, within a budget
// per message.
#include <algorithm>

#include "hearsay/gossip/member_statement.h"
#include "hearsay/gossip/node.h"
#include "hearsay/gossip/node_internal.h"
#include "hearsay/gossip/signing_key_source.h"

namespace hearsay::gossip {

using node_internal::IsLive;

Node::Admission Node::AdmitMemberUpdate(const MemberUpdate& u) {
  // About this node: nobody else's word changes it (ApplyAboutSelf only refutes).
  if (u.id == id_) return Admission::kNoChange;
  auto it = members_.find(u.id);
  if (it == members_.end()) {
    // A member is learned from its own "alive" only (ApplyMembership ignores anything else).
    if (u.state != MemberState::kAlive) return Admission::kNoChange;
    return VerifySelfStatement(nullptr, u) ? Admission::kVerified : Admission::kRefused;
  }
  MemberRec& m = it->second;
  if (u.generation < m.generation) return Admission::kNoChange;
  if (IsAccusation(u.state)) return AdmitAccusation(m, u);
  if (u.generation == m.generation) {
    const bool key_news = !u.signing_key.empty() &&
                          (m.key_generation != m.generation || m.signing_key.empty());
    const bool api_news = m.api_address.empty() && !u.api_address.empty();
    if (u.state == MemberState::kAlive && u.incarnation <= m.incarnation && !key_news &&
        !api_news) {
      return Admission::kNoChange;
    }
    if (u.state == MemberState::kLeft &&
        (u.incarnation < m.incarnation || m.state == MemberState::kLeft)) {
      return Admission::kNoChange;
    }
  }
  return VerifySelfStatement(&m, u) ? Admission::kVerified : Admission::kRefused;
}

Node::Admission Node::AdmitAccusation(MemberRec& m, const MemberUpdate& u) {
  // Only the member states its generations and incarnations: an accusation of one this node has
  // not seen it state could be a liar's (one naming the last incarnation would be irrefutable).
  // An honest one ahead of us is repeated by others once its member's statement arrives here.
  if (u.generation > m.generation || u.incarnation > m.incarnation) {
    ++counters_.accusations_ahead;
    return Admission::kRefused;
  }
  if (!IsLive(m.state)) return Admission::kNoChange;  // repeats what we hold (ApplyMembership)
  if (m.state == MemberState::kAlive && u.incarnation < m.incarnation) return Admission::kNoChange;
  if (m.state == MemberState::kSuspect) {
    // Only a new confirmation changes anything (AddConfirmation's rules).
    const SuspicionBounds b = ComputeSuspicionBounds(
        config_.suspicion_mult, config_.suspicion_max_mult, ClusterSize(), config_.probe_interval);
    if (u.accuser.empty() ||
        std::find(m.accusers.begin(), m.accusers.end(), u.accuser) != m.accusers.end() ||
        static_cast<int>(m.accusers.size()) > b.expected_confirmations) {
      return Admission::kNoChange;
    }
  }
  std::string key;
  if (u.accuser == id_) {
    key = signing_public_key();
  } else if (auto a = members_.find(u.accuser); a != members_.end()) {
    MemberRec& accuser = a->second;
    if (config_.key_source != nullptr) ConfirmKey(accuser, nullptr);
    if (accuser.key_generation == accuser.generation) key = accuser.signing_key;
  }
  return CheckMemberSignature(key, u) ? Admission::kVerified : Admission::kRefused;
}

bool Node::VerifySelfStatement(MemberRec* m, const MemberUpdate& u) {
  std::string key;
  const bool same_life = m != nullptr && m->generation == u.generation;
  if (same_life && config_.key_source != nullptr) ConfirmKey(*m, nullptr);
  if (same_life && m->key_generation == m->generation && !m->signing_key.empty()) {
    key = m->signing_key;
  } else if (config_.key_source != nullptr) {
    // A member's new life: only the key it states over a link its certificate authenticates.
    if (!same_life) key = config_.key_source->ConfirmedKey(u.id, u.generation, u.api_address);
    if (key.size() == kSigningPublicKeyBytes && !u.signing_key.empty() && u.signing_key != key) {
      ++counters_.signing_key_conflicts;
    }
  } else {
    key = u.signing_key;  // first sight of this life: the key it announces is bound
  }
  return CheckMemberSignature(key, u);
}

bool Node::CheckMemberSignature(const std::string& key, const MemberUpdate& u) {
  if (key.size() != kSigningPublicKeyBytes || !u.signature) {
    ++counters_.member_updates_unverified;
    return false;
  }
  if (verify_budget_ == 0) {
    ++counters_.member_updates_capped;
    return false;
  }
  --verify_budget_;
  ++counters_.signatures_verified;
  ++counters_.member_signatures_verified;
  if (config_.signatures == SignatureMode::kModeled) return true;
  const std::string statement = MemberStatement(u);
  if (!VerifySignature({reinterpret_cast<const uint8_t*>(key.data()), key.size()},
                       {reinterpret_cast<const uint8_t*>(statement.data()), statement.size()},
                       *u.signature)) {
    ++counters_.member_updates_forged;
    return false;
  }
  return true;
}

void Node::SignMemberUpdate(MemberUpdate& u) {
  u.signature.emplace();  // modeled: the bytes without the cryptography
  ++counters_.signatures_made;
  ++counters_.member_signatures_made;
  if (config_.signatures != SignatureMode::kEd25519 || !signing_key_) return;
  const std::string statement = MemberStatement(u);
  u.signature =
      signing_key_->Sign({reinterpret_cast<const uint8_t*>(statement.data()), statement.size()});
}

MemberUpdate Node::Accusation(const MemberRec& m, MemberState state) {
  MemberUpdate u{state, m.id, m.address, m.generation, m.incarnation, id_, m.api_address};
  if (signing()) SignMemberUpdate(u);
  return u;
}

void Node::KeepStatement(const MemberUpdate& u) {
  if (u.id == id_ || IsAccusation(u.state)) return;  // accusations: StartSuspicion, AddConfirmation
  auto it = members_.find(u.id);
  if (it == members_.end()) return;
  MemberRec& m = it->second;
  if (m.generation != u.generation || m.incarnation != u.incarnation || m.state != u.state) return;
  m.statement = u;
  m.statement->signing_key.clear();  // the bound one goes out with it (UpdateOf)
  m.statement->accuser.clear();
}

}  // namespace hearsay::gossip
