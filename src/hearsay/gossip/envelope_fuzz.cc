// Fuzzes the envelope decoder (Opener::Open) with arbitrary bytes, and Seal/Open with structured
// round trips. Properties checked (a violation aborts):
//   - Open never crashes, on either channel, in secure or insecure mode;
//   - a dropped envelope changes nothing but one drop counter (no sender tracked, none opened);
//   - an accepted envelope is recorded, and the same bytes are then rejected as replayed;
//   - Seal then Open gives back the plaintext, sender, generation and counter;
//   - flipping any one byte of a sealed envelope makes a secure Open fail.
// The seed corpus (fuzz/corpus/envelope_fuzz/) holds valid envelopes sealed with kFuzzKeyA/B and
// cluster id kFuzzCluster, so the fuzzer starts from messages that authenticate.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hearsay/common/check.h"
#include "hearsay/gossip/envelope.h"
#include "hearsay/gossip/keyring.h"

namespace hearsay::gossip {
namespace {

constexpr std::string_view kFuzzCluster = "fuzz-cluster";

ClusterKey FuzzKey(uint8_t offset) {
  std::array<uint8_t, kClusterKeyBytes> bytes;
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i + offset);
  return ClusterKey::FromBytes(bytes).value();
}

struct Fixture {
  Fixture() : key_a(FuzzKey(0)), key_b(FuzzKey(100)), ring(key_a) {
    HEARSAY_CHECK(ring.Install(key_b).ok());
  }
  ClusterKey key_a;
  ClusterKey key_b;
  Keyring ring;  // primary key_a, also key_b
};

const Fixture& GetFixture() {
  static const Fixture* fixture = new Fixture();
  return *fixture;
}

Opener MakeOpener(bool secure) {
  return secure ? Opener::Create(kFuzzCluster, &GetFixture().ring).value()
                : Opener::CreateInsecureUnauthenticated(kFuzzCluster).value();
}

void OpenArbitrary(std::span<const uint8_t> input) {
  for (const bool secure : {true, false}) {
    for (const Channel ch : {Channel::kDatagram, Channel::kStream}) {
      Opener opener = MakeOpener(secure);
      const auto opened = opener.Open(ch, input);
      if (!opened.ok()) {
        HEARSAY_CHECK(opener.drops().total() == 1);
        HEARSAY_CHECK(opener.opened() == 0);
        HEARSAY_CHECK(opener.replay().size() == 0);
        continue;
      }
      HEARSAY_CHECK(opener.drops().total() == 0);
      HEARSAY_CHECK(opener.opened() == 1);
      HEARSAY_CHECK(opener.replay().size() == 1);
      HEARSAY_CHECK(!opened->sender.empty() && opened->sender.size() <= kMaxSenderBytes);
      HEARSAY_CHECK(opened->counter < kMaxEnvelopeCounter);
      HEARSAY_CHECK(opened->plaintext.size() <= input.size());
      const auto again = opener.Open(ch, input);
      HEARSAY_CHECK(!again.ok());
      HEARSAY_CHECK(opener.drops()[DropReason::kReplayed] == 1);
      HEARSAY_CHECK(opener.replay().size() == 1);
    }
  }
}

// Reads the parameters of a round trip from the front of the input; the rest is the plaintext.
void RoundTrip(std::span<const uint8_t> input) {
  if (input.size() < 4) return;
  const bool secure = (input[0] & 1) == 0;
  const Channel ch = (input[0] & 2) ? Channel::kStream : Channel::kDatagram;
  const size_t extra_messages = (input[0] >> 2) & 7;
  const size_t sender_len = 1 + input[1] % 40;
  const Generation generation = input[2] * uint64_t{0x0101010101};
  const uint8_t flip = input[3];
  std::span<const uint8_t> rest = input.subspan(4);
  if (rest.size() < sender_len) return;
  const NodeId sender(reinterpret_cast<const char*>(rest.data()), sender_len);
  const std::span<const uint8_t> plaintext = rest.subspan(sender_len);

  const Fixture& fx = GetFixture();
  Sealer sealer =
      secure ? Sealer::Create(kFuzzCluster, sender, generation, &fx.ring).value()
             : Sealer::CreateInsecureUnauthenticated(kFuzzCluster, sender, generation).value();
  for (size_t i = 0; i < extra_messages; ++i) {
    HEARSAY_CHECK(sealer.Seal(ch, {}).ok());
  }
  const auto sealed = sealer.Seal(ch, plaintext);
  if (plaintext.size() > sealer.MaxPlaintextBytes(ch)) {
    HEARSAY_CHECK(!sealed.ok());
    return;
  }
  HEARSAY_CHECK(sealed.ok());
  HEARSAY_CHECK(sealed->size() == sealer.SealedBytes(plaintext.size()));

  Opener opener = MakeOpener(secure);
  const auto opened = opener.Open(ch, *sealed);
  HEARSAY_CHECK(opened.ok());
  HEARSAY_CHECK(opened->sender == sender);
  HEARSAY_CHECK(opened->generation == generation);
  HEARSAY_CHECK(opened->counter == extra_messages);
  HEARSAY_CHECK(std::equal(opened->plaintext.begin(), opened->plaintext.end(), plaintext.begin(),
                           plaintext.end()));

  if (secure) {
    std::vector<uint8_t> tampered = *sealed;
    const size_t at = (static_cast<size_t>(flip) * 131 + plaintext.size()) % tampered.size();
    tampered[at] ^= static_cast<uint8_t>(flip | 1);
    Opener fresh = MakeOpener(true);
    HEARSAY_CHECK(!fresh.Open(ch, tampered).ok());
    HEARSAY_CHECK(fresh.replay().size() == 0);
  }
}

}  // namespace
}  // namespace hearsay::gossip

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> input(data, size);
  hearsay::gossip::OpenArbitrary(input);
  hearsay::gossip::RoundTrip(input);
  return 0;
}
