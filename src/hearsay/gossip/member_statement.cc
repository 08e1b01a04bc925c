#include "hearsay/gossip/member_statement.h"

namespace hearsay::gossip {
namespace {

void PutU64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
}

void PutString(std::string& s, const std::string& v) {
  PutU64(s, v.size());
  s += v;
}

}  // namespace

std::string MemberStatement(const MemberUpdate& u) {
  std::string s = IsAccusation(u.state) ? "hearsay/gossip/accusation/v1" : "hearsay/gossip/member/v1";
  s.push_back(static_cast<char>(u.state));
  PutString(s, u.id);
  PutU64(s, u.generation);
  PutU64(s, u.incarnation);
  if (IsAccusation(u.state)) {
    PutString(s, u.accuser);
  } else {
    PutString(s, u.address);
    PutString(s, u.api_address);
  }
  return s;
}

}  // namespace hearsay::gossip
