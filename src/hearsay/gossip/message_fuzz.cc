// Fuzzes the gossip message decoder: any input must decode or fail cleanly, and whatever decodes
// must re-encode to something that decodes to the same message. Every decoded member update (its
// key and signature flags included) also yields the statement its signature would cover.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "hearsay/gossip/member_statement.h"
#include "hearsay/gossip/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hearsay::Result<hearsay::gossip::Message> m =
      hearsay::gossip::Decode(std::span<const uint8_t>(data, size));
  if (!m.ok()) return 0;
  for (const auto* list : {&m->header.updates, &m->members}) {
    for (const hearsay::gossip::MemberUpdate& u : *list) {
      if (hearsay::gossip::MemberStatement(u).size() < u.id.size()) std::abort();
      if (!u.signing_key.empty() && u.signing_key.size() != 32) std::abort();
    }
  }
  const std::vector<uint8_t> again = hearsay::gossip::Encode(*m);
  hearsay::Result<hearsay::gossip::Message> m2 = hearsay::gossip::Decode(again);
  if (!m2.ok() || !(*m2 == *m)) std::abort();
  return 0;
}
