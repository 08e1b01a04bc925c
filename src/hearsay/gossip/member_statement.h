// Signed membership (docs/gossip-security.md, "Signed membership"): what a member update's
// signature covers.
//
// With signatures on, a member signs what it states about itself, "alive" (a join, a new
// generation, a refutation with a higher incarnation, its addresses) and "left", so a relay
// cannot change or invent those statements; and an accuser signs its accusation ("suspect" or
// "dead" of a member's incarnation), so every accusation is attributable to the member it names
// as accuser and a liar counts once among the independent accusers Lifeguard waits for.
//
// Statements (integers as little-endian u64, strings preceded by their length as one):
//   about itself: "hearsay/gossip/member/v1", state, id, generation, incarnation, address,
//                 api address (the key it announces is not part of it: a signature verifies
//                 under one key only, so a relay that swaps the key makes it fail)
//   accusation:   "hearsay/gossip/accusation/v1", state, id, generation, incarnation, accuser
// An accusation's address and api address are not covered: a node never takes a member's
// address from an accusation when signing is on.
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "hearsay/gossip/wire.h"

namespace hearsay::gossip {

// True for suspect and dead: what a member says about another.
inline bool IsAccusation(MemberState s) {
  return s == MemberState::kSuspect || s == MemberState::kDead;
}

// The bytes the signature of `u` covers (the statement for its state, as above).
std::string MemberStatement(const MemberUpdate& u);

}  // namespace hearsay::gossip
