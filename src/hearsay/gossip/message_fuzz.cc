// Fuzzes the gossip message decoder: any input must decode or fail cleanly, and whatever decodes
// must re-encode to something that decodes to the same message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "hearsay/gossip/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hearsay::Result<hearsay::gossip::Message> m =
      hearsay::gossip::Decode(std::span<const uint8_t>(data, size));
  if (!m.ok()) return 0;
  const std::vector<uint8_t> again = hearsay::gossip::Encode(*m);
  hearsay::Result<hearsay::gossip::Message> m2 = hearsay::gossip::Decode(again);
  if (!m2.ok() || !(*m2 == *m)) std::abort();
  return 0;
}
