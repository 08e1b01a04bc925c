#include "hearsay/gossip/envelope.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "hearsay/env/rng.h"

namespace hearsay::gossip {
namespace {

constexpr std::string_view kCluster = "cluster-one";

ClusterKey KeyFromSeed(uint64_t seed) {
  Rng rng(seed);
  std::array<uint8_t, kClusterKeyBytes> bytes;
  for (auto& b : bytes) b = static_cast<uint8_t>(rng.NextU64());
  return ClusterKey::FromBytes(bytes).value();
}

std::vector<uint8_t> RandomBytes(Rng& rng, size_t n) {
  std::vector<uint8_t> out(n);
  for (auto& b : out) b = static_cast<uint8_t>(rng.NextU64());
  return out;
}

std::vector<uint8_t> Text(std::string_view s) { return {s.begin(), s.end()}; }

class EnvelopeTest : public ::testing::Test {
 protected:
  EnvelopeTest()
      : key_(KeyFromSeed(1)),
        other_key_(KeyFromSeed(2)),
        ring_(key_),
        sealer_(Sealer::Create(kCluster, "node-a", 100, &ring_).value()),
        opener_(Opener::Create(kCluster, &ring_).value()) {}

  std::vector<uint8_t> Seal(std::string_view text, Channel ch = Channel::kDatagram) {
    auto sealed = sealer_.Seal(ch, Text(text));
    HEARSAY_CHECK(sealed.ok());
    return std::move(sealed).value();
  }

  // Opens `bytes` and expects exactly one drop, for `reason`.
  void ExpectDrop(std::span<const uint8_t> bytes, DropReason reason,
                  Channel ch = Channel::kDatagram) {
    const DropCounters before = opener_.drops();
    const uint64_t opened_before = opener_.opened();
    const size_t senders_before = opener_.replay().size();
    const auto r = opener_.Open(ch, bytes);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(opener_.drops()[reason], before[reason] + 1)
        << "wanted " << DropReasonName(reason) << ", got " << r.status().ToString();
    EXPECT_EQ(opener_.drops().total(), before.total() + 1);
    EXPECT_EQ(opener_.opened(), opened_before);
    EXPECT_EQ(opener_.replay().size(), senders_before);
  }

  ClusterKey key_;
  ClusterKey other_key_;
  Keyring ring_;
  Sealer sealer_;
  Opener opener_;
};

TEST_F(EnvelopeTest, RoundTripsOnBothChannels) {
  Rng rng(5);
  for (const Channel ch : {Channel::kDatagram, Channel::kStream}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{100}, sealer_.MaxPlaintextBytes(ch)}) {
      const std::vector<uint8_t> plain = RandomBytes(rng, n);
      const uint64_t counter = sealer_.next_counter(ch);
      auto sealed = sealer_.Seal(ch, plain);
      ASSERT_TRUE(sealed.ok()) << sealed.status().ToString();
      EXPECT_EQ(sealed->size(), sealer_.SealedBytes(n));
      EXPECT_LE(sealed->size(), EnvelopeOptions{}.MaxBytes(ch));
      auto opened = opener_.Open(ch, *sealed);
      ASSERT_TRUE(opened.ok()) << opened.status().ToString();
      EXPECT_EQ(opened->plaintext, plain);
      EXPECT_EQ(opened->sender, "node-a");
      EXPECT_EQ(opened->generation, 100u);
      EXPECT_EQ(opened->counter, counter);
      EXPECT_EQ(opened->key_id, key_.id());
    }
  }
  EXPECT_EQ(sealer_.MaxPlaintextBytes(Channel::kDatagram),
            1400 - kEnvelopeFixedPrefix - 6 - kEnvelopeFixedSuffix - kEnvelopeTagBytes);
  EXPECT_EQ(opener_.drops().total(), 0u);
  EXPECT_EQ(opener_.opened(), 8u);
}

TEST_F(EnvelopeTest, CiphertextHidesThePlaintext) {
  const std::string secret = "prefix-cache-secret-text";
  const auto sealed = Seal(secret);
  const std::string wire(sealed.begin(), sealed.end());
  EXPECT_EQ(wire.find(secret), std::string::npos);
  // The same plaintext sealed again (next counter, so next nonce) differs.
  const auto again = Seal(secret);
  EXPECT_NE(std::vector<uint8_t>(sealed.end() - 40, sealed.end()),
            std::vector<uint8_t>(again.end() - 40, again.end()));
}

TEST_F(EnvelopeTest, HeaderLayoutIsAsDocumented) {
  const auto sealed = Seal("hi", Channel::kStream);
  ASSERT_EQ(sealed.size(), 13u + 6 + 20 + 2 + 16);
  EXPECT_EQ(sealed[0], 'H');
  EXPECT_EQ(sealed[1], 'S');
  EXPECT_EQ(sealed[2], kEnvelopeVersion);
  EXPECT_EQ(sealed[3], kEnvelopeFlagStream);
  const uint32_t key_id =
      sealed[8] | sealed[9] << 8 | sealed[10] << 16 | static_cast<uint32_t>(sealed[11]) << 24;
  EXPECT_EQ(key_id, key_.id());
  EXPECT_EQ(sealed[12], 6);
  EXPECT_EQ(std::string(sealed.begin() + 13, sealed.begin() + 19), "node-a");
  EXPECT_EQ(sealed[19], 100);  // generation, little-endian
  for (int i = 20; i < 27; ++i) EXPECT_EQ(sealed[i], 0) << i;
  for (int i = 27; i < 35; ++i) EXPECT_EQ(sealed[i], 0) << i;  // counter 0
  EXPECT_EQ(sealed[35], 18);                                   // body length: 2 + 16
  EXPECT_EQ(sealed[36], 0);
  const auto second = Seal("hi", Channel::kStream);
  EXPECT_EQ(second[27], 1);  // counter 1
}

// Pins the whole construction (layout, derived keys, associated data, nonce, AEAD). The expected
// bytes were computed by an independent Python implementation of docs/gossip-security.md
// (hashlib BLAKE2b, a hand-written HChaCha20 checked against the XChaCha20 draft's test vector,
// and the `cryptography` package's ChaCha20-Poly1305).
TEST(EnvelopeKnownAnswerTest, MatchesAnIndependentImplementation) {
  std::array<uint8_t, kClusterKeyBytes> bytes;
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i);
  Keyring ring(ClusterKey::FromBytes(bytes).value());
  Sealer sealer = Sealer::Create("kat-cluster", "gpu-07", 0x0102030405060708, &ring).value();
  ASSERT_TRUE(sealer.Seal(Channel::kStream, {}).ok());
  ASSERT_TRUE(sealer.Seal(Channel::kStream, {}).ok());
  const auto sealed = sealer.Seal(Channel::kStream, Text("hello, hearsay")).value();
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (uint8_t b : sealed) {
    hex += kHex[b >> 4];
    hex += kHex[b & 15];
  }
  EXPECT_EQ(hex,
            "485301021102949c5a27186d066770752d3037080706050403020102000000000000001e000000deb996"
            "7357b7f64d1c085d9fad3c76370687d97076897d927e1457653061");
}

TEST_F(EnvelopeTest, SealRefusesMessagesThatDoNotFit) {
  const std::vector<uint8_t> big(sealer_.MaxPlaintextBytes(Channel::kDatagram) + 1);
  const auto sealed = sealer_.Seal(Channel::kDatagram, big);
  ASSERT_FALSE(sealed.ok());
  EXPECT_EQ(sealed.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(sealer_.next_counter(Channel::kDatagram), 0u);
  EXPECT_TRUE(sealer_.Seal(Channel::kStream, big).ok());
}

TEST_F(EnvelopeTest, CreateChecksItsArguments) {
  EXPECT_EQ(Sealer::Create(kCluster, "a", 1, nullptr).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Sealer::Create(kCluster, "", 1, &ring_).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Sealer::Create(kCluster, std::string(256, 'x'), 1, &ring_).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(Sealer::Create(kCluster, std::string(255, 'x'), 1, &ring_).ok());
  EXPECT_EQ(Sealer::Create("", "a", 1, &ring_).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Opener::Create(kCluster, nullptr).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Opener::CreateInsecureUnauthenticated("").status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(EnvelopeTest, LongestSenderRoundTrips) {
  const NodeId sender(kMaxSenderBytes, 's');
  Sealer s = Sealer::Create(kCluster, sender, 1, &ring_).value();
  const auto opened =
      opener_.Open(Channel::kDatagram, s.Seal(Channel::kDatagram, Text("x")).value());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(opened->sender, sender);
}

TEST_F(EnvelopeTest, SealWithAnEmptyKeyringFails) {
  Keyring empty;
  Sealer s = Sealer::Create(kCluster, "a", 1, &empty).value();
  EXPECT_EQ(s.Seal(Channel::kDatagram, Text("x")).status().code(), StatusCode::kFailedPrecondition);
  Opener o = Opener::Create(kCluster, &empty).value();
  ASSERT_FALSE(o.Open(Channel::kDatagram, Seal("x")).ok());
  EXPECT_EQ(o.drops()[DropReason::kUnauthenticated], 1u);
}

TEST_F(EnvelopeTest, WrongKeyIsUnauthenticated) {
  Keyring other(other_key_);
  Opener o = Opener::Create(kCluster, &other).value();
  ASSERT_FALSE(o.Open(Channel::kDatagram, Seal("x")).ok());
  EXPECT_EQ(o.drops()[DropReason::kUnauthenticated], 1u);
  EXPECT_EQ(o.replay().size(), 0u);
}

TEST_F(EnvelopeTest, EverySingleByteTamperIsRejectedAndCounted) {
  for (const Channel ch : {Channel::kDatagram, Channel::kStream}) {
    const auto sealed = Seal("the quick brown fox", ch);
    const size_t senders_before = opener_.replay().size();
    for (size_t i = 0; i < sealed.size(); ++i) {
      for (const uint8_t x : {0x01, 0x80, 0xff}) {
        auto bad = sealed;
        bad[i] ^= x;
        const uint64_t before = opener_.drops().total();
        ASSERT_FALSE(opener_.Open(ch, bad).ok()) << "byte " << i << " ^ " << int{x};
        ASSERT_EQ(opener_.drops().total(), before + 1);
      }
    }
    // None of that changed any state: the genuine message still opens, once.
    EXPECT_EQ(opener_.replay().size(), senders_before);
    ASSERT_TRUE(opener_.Open(ch, sealed).ok());
    ExpectDrop(sealed, DropReason::kReplayed, ch);
  }
  EXPECT_EQ(opener_.opened(), 2u);
  // Payload bit flips are caught by the tag.
  EXPECT_GT(opener_.drops()[DropReason::kUnauthenticated], 0u);
}

TEST_F(EnvelopeTest, TruncationAtEveryLengthIsCounted) {
  const auto sealed = Seal("some body bytes");
  for (size_t n = 0; n < sealed.size(); ++n) {
    ExpectDrop(std::span(sealed).first(n), DropReason::kTruncated);
  }
  EXPECT_EQ(opener_.drops()[DropReason::kTruncated], sealed.size());
  EXPECT_TRUE(opener_.Open(Channel::kDatagram, sealed).ok());
}

TEST_F(EnvelopeTest, OversizedIsDroppedBeforeParsing) {
  std::vector<uint8_t> huge(1401, 0xab);
  ExpectDrop(huge, DropReason::kOversized);
  // A small envelope that announces a body beyond the limit.
  auto sealed = Seal("x");
  const size_t len_at = kEnvelopeFixedPrefix + 6 + 16;
  sealed[len_at + 2] = 0xff;
  ExpectDrop(sealed, DropReason::kOversized);
  // The stream limit is configurable.
  EnvelopeOptions small;
  small.max_stream_bytes = 100;
  Opener o = Opener::Create(kCluster, &ring_, small).value();
  const auto stream = sealer_.Seal(Channel::kStream, std::vector<uint8_t>(200)).value();
  ASSERT_FALSE(o.Open(Channel::kStream, stream).ok());
  EXPECT_EQ(o.drops()[DropReason::kOversized], 1u);
}

TEST_F(EnvelopeTest, MalformedAndUnknownVersion) {
  auto sealed = Seal("x");
  auto bad = sealed;
  bad[0] = 'X';
  ExpectDrop(bad, DropReason::kMalformed);
  bad = sealed;
  bad[2] = 2;
  ExpectDrop(bad, DropReason::kUnknownVersion);
  bad = sealed;
  bad[3] |= 0x80;
  ExpectDrop(bad, DropReason::kMalformed);
  bad = sealed;
  bad.push_back(0);
  ExpectDrop(bad, DropReason::kMalformed);  // trailing bytes
  // Sealed for the datagram channel, arriving on the stream.
  ExpectDrop(sealed, DropReason::kMalformed, Channel::kStream);
  EXPECT_TRUE(opener_.Open(Channel::kDatagram, sealed).ok());
}

TEST_F(EnvelopeTest, DuplicateIsReplayed) {
  const auto sealed = Seal("x");
  ASSERT_TRUE(opener_.Open(Channel::kDatagram, sealed).ok());
  ExpectDrop(sealed, DropReason::kReplayed);
  ExpectDrop(sealed, DropReason::kReplayed);
  EXPECT_EQ(opener_.opened(), 1u);
}

TEST_F(EnvelopeTest, ReorderedWithinTheWindowIsAcceptedOnce) {
  std::vector<std::vector<uint8_t>> msgs;
  for (int i = 0; i < 300; ++i) msgs.push_back(Seal(std::to_string(i) + "m"));
  Rng rng(11);
  rng.Shuffle(msgs);
  for (const auto& m : msgs) ASSERT_TRUE(opener_.Open(Channel::kDatagram, m).ok());
  for (const auto& m : msgs) ExpectDrop(m, DropReason::kReplayed);
  EXPECT_EQ(opener_.opened(), 300u);
}

TEST_F(EnvelopeTest, OlderThanTheWindowIsReplayed) {
  std::vector<std::vector<uint8_t>> msgs;
  for (uint64_t i = 0; i <= kReplayWindowSize + 10; ++i) msgs.push_back(Seal("m"));
  ASSERT_TRUE(opener_.Open(Channel::kDatagram, msgs.back()).ok());
  ExpectDrop(msgs[0], DropReason::kReplayed);
  ExpectDrop(msgs[10], DropReason::kReplayed);
  EXPECT_TRUE(opener_.Open(Channel::kDatagram, msgs[11]).ok());
}

TEST_F(EnvelopeTest, GenerationsResetAndOldOnesAreRejected) {
  Sealer old_gen = Sealer::Create(kCluster, "node-b", 7, &ring_).value();
  Sealer new_gen = Sealer::Create(kCluster, "node-b", 8, &ring_).value();
  std::vector<std::vector<uint8_t>> old_msgs;
  for (int i = 0; i < 5; ++i)
    old_msgs.push_back(old_gen.Seal(Channel::kDatagram, Text("o")).value());
  ASSERT_TRUE(opener_.Open(Channel::kDatagram, old_msgs[0]).ok());
  ASSERT_TRUE(opener_.Open(Channel::kDatagram, old_msgs[3]).ok());
  // The restarted node's counter 0 is accepted although old counter 3 was seen.
  ASSERT_TRUE(
      opener_.Open(Channel::kDatagram, new_gen.Seal(Channel::kDatagram, Text("n")).value()).ok());
  ExpectDrop(old_msgs[1], DropReason::kReplayed);
  ExpectDrop(old_msgs[4], DropReason::kReplayed);
  ASSERT_TRUE(
      opener_.Open(Channel::kDatagram, new_gen.Seal(Channel::kDatagram, Text("n")).value()).ok());
}

TEST_F(EnvelopeTest, WrongClusterIsDropped) {
  Opener o = Opener::Create("cluster-two", &ring_).value();
  ASSERT_FALSE(o.Open(Channel::kDatagram, Seal("x")).ok());
  EXPECT_EQ(o.drops()[DropReason::kWrongCluster], 1u);
  Opener insecure = Opener::CreateInsecureUnauthenticated("cluster-two").value();
  Sealer s = Sealer::CreateInsecureUnauthenticated(kCluster, "a", 1).value();
  ASSERT_FALSE(
      insecure.Open(Channel::kDatagram, s.Seal(Channel::kDatagram, Text("x")).value()).ok());
  EXPECT_EQ(insecure.drops()[DropReason::kWrongCluster], 1u);
}

TEST_F(EnvelopeTest, SenderIsBoundByTheTag) {
  auto sealed = Seal("x");
  // "node-a" -> "node-b": same length, so only authentication can catch it.
  sealed[kEnvelopeFixedPrefix + 5] = 'b';
  ExpectDrop(sealed, DropReason::kUnauthenticated);
  // Nothing about node-b (or node-a) was recorded.
  EXPECT_EQ(opener_.replay().size(), 0u);
}

TEST_F(EnvelopeTest, ForgedFutureCounterChangesNothing) {
  const auto first = Seal("first");
  auto forged = Seal("second");
  // Push the counter far ahead; the tag no longer matches.
  forged[kEnvelopeFixedPrefix + 6 + 8 + 4] = 0x7f;
  ExpectDrop(forged, DropReason::kUnauthenticated);
  EXPECT_TRUE(opener_.Open(Channel::kDatagram, first).ok());
}

TEST_F(EnvelopeTest, InsecureAndSecureNeverMix) {
  Sealer insecure_sealer = Sealer::CreateInsecureUnauthenticated(kCluster, "node-i", 1).value();
  Opener insecure_opener = Opener::CreateInsecureUnauthenticated(kCluster).value();
  EXPECT_TRUE(insecure_sealer.insecure());
  EXPECT_TRUE(insecure_opener.insecure());
  const auto plain = insecure_sealer.Seal(Channel::kDatagram, Text("visible")).value();
  EXPECT_EQ(plain[3], kEnvelopeFlagInsecure);
  EXPECT_NE(std::string(plain.begin(), plain.end()).find("visible"), std::string::npos);

  ExpectDrop(plain, DropReason::kSecurityMismatch);
  ASSERT_FALSE(insecure_opener.Open(Channel::kDatagram, Seal("x")).ok());
  EXPECT_EQ(insecure_opener.drops()[DropReason::kSecurityMismatch], 1u);

  const auto opened = insecure_opener.Open(Channel::kDatagram, plain);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(opened->plaintext, Text("visible"));
  EXPECT_EQ(opened->key_id, 0u);
  EXPECT_FALSE(insecure_opener.Open(Channel::kDatagram, plain).ok());
  EXPECT_EQ(insecure_opener.drops()[DropReason::kReplayed], 1u);
}

// Property: over a lossy, duplicating, reordering network with injected garbage, every message
// that arrives at all opens exactly once, every duplicate is dropped as replayed, and every
// corrupted copy is dropped without effect. Reordering stays within the replay window.
TEST(EnvelopePropertyTest, ExactlyOnceOverAHostileNetwork) {
  const ClusterKey key = KeyFromSeed(77);
  Keyring ring(key);
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Rng rng(seed);
    Opener opener = Opener::Create(kCluster, &ring).value();
    std::vector<Sealer> senders;
    for (int i = 0; i < 3; ++i) {
      senders.push_back(Sealer::Create(kCluster, std::to_string(i) + "s", 1, &ring).value());
    }
    struct Packet {
      std::vector<uint8_t> bytes;
      Channel channel;
      int id;          // index of the original message, or -1 for garbage
      bool corrupted;  // a flipped byte: must never open
    };
    std::vector<Packet> in_flight;
    std::vector<int> opened_count;
    std::vector<std::vector<uint8_t>> plaintexts;
    std::vector<bool> delivered;
    uint64_t expected_drops = 0;
    for (int step = 0; step < 400; ++step) {
      const size_t who = rng.Below(senders.size());
      const Channel ch = rng.Bernoulli(0.2) ? Channel::kStream : Channel::kDatagram;
      plaintexts.push_back(RandomBytes(rng, rng.Below(64)));
      auto sealed = senders[who].Seal(ch, plaintexts.back()).value();
      const int id = static_cast<int>(opened_count.size());
      opened_count.push_back(0);
      bool sent = false;
      if (!rng.Bernoulli(0.1)) {  // else lost
        in_flight.push_back({sealed, ch, id, false});
        sent = true;
      }
      if (rng.Bernoulli(0.2)) {  // duplicated
        in_flight.push_back({sealed, ch, id, false});
        sent = true;
      }
      delivered.push_back(sent);
      if (rng.Bernoulli(0.1)) {
        auto bad = sealed;
        bad[rng.Below(bad.size())] ^= static_cast<uint8_t>(1 + rng.Below(255));
        in_flight.push_back({bad, ch, id, true});
      }
      if (rng.Bernoulli(0.05)) {
        in_flight.push_back({RandomBytes(rng, rng.Below(80)), ch, -1, true});
      }
      // Deliver a random subset, so packets wait a few steps: reordering well inside the window.
      // After the last step, deliver everything.
      while (!in_flight.empty() && (step == 399 || rng.Bernoulli(0.6))) {
        const size_t pick = rng.Below(in_flight.size());
        Packet p = std::move(in_flight[pick]);
        in_flight.erase(in_flight.begin() + static_cast<std::ptrdiff_t>(pick));
        const auto r = opener.Open(p.channel, p.bytes);
        if (p.corrupted) {
          ASSERT_FALSE(r.ok()) << "seed " << seed << " step " << step;
          ++expected_drops;
          continue;
        }
        if (r.ok()) {
          ASSERT_EQ(r->plaintext, plaintexts[p.id]);
          ++opened_count[p.id];
        } else {
          ASSERT_EQ(r.status().code(), StatusCode::kAlreadyExists) << r.status().ToString();
          ++expected_drops;
        }
      }
    }
    for (size_t id = 0; id < opened_count.size(); ++id) {
      ASSERT_EQ(opened_count[id], delivered[id] ? 1 : 0) << "seed " << seed << " id " << id;
    }
    EXPECT_EQ(opener.drops().total(), expected_drops);
  }
}

// A small cluster in which every node seals to every other node after each step.
class RotationTest : public ::testing::Test {
 protected:
  static constexpr int kNodes = 4;

  RotationTest() : old_key_(KeyFromSeed(21)), new_key_(KeyFromSeed(22)) {
    for (int i = 0; i < kNodes; ++i) {
      auto& n = nodes_.emplace_back(std::make_unique<Node>(old_key_));
      n->sealer = std::make_unique<Sealer>(
          Sealer::Create(kCluster, std::to_string(i) + "n", 1, &n->ring).value());
      n->opener = std::make_unique<Opener>(Opener::Create(kCluster, &n->ring).value());
    }
  }

  struct Node {
    explicit Node(const ClusterKey& k) : ring(k) {}
    Keyring ring;
    std::unique_ptr<Sealer> sealer;
    std::unique_ptr<Opener> opener;
  };

  // Every node sends one datagram and one stream message to every other; returns the drops.
  uint64_t ExchangeAll() {
    uint64_t drops = 0;
    for (int from = 0; from < kNodes; ++from) {
      for (int to = 0; to < kNodes; ++to) {
        if (from == to) continue;
        for (const Channel ch : {Channel::kDatagram, Channel::kStream}) {
          const auto sealed = nodes_[from]->sealer->Seal(ch, Text("state")).value();
          if (!nodes_[to]->opener->Open(ch, sealed).ok()) ++drops;
        }
      }
    }
    return drops;
  }

  ClusterKey old_key_;
  ClusterKey new_key_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

TEST_F(RotationTest, DocumentedOrderLosesNothing) {
  uint64_t drops = ExchangeAll();
  // 1. Install the new key everywhere, one node at a time, exchanging after each step.
  for (auto& n : nodes_) {
    ASSERT_TRUE(n->ring.Install(new_key_).ok());
    drops += ExchangeAll();
  }
  // 2. Use it everywhere; meanwhile nodes still on the old primary are understood by all.
  for (auto& n : nodes_) {
    ASSERT_TRUE(n->ring.Use(new_key_).ok());
    drops += ExchangeAll();
  }
  // 3. Remove the old key everywhere.
  for (auto& n : nodes_) {
    ASSERT_TRUE(n->ring.Remove(old_key_).ok());
    drops += ExchangeAll();
  }
  EXPECT_EQ(drops, 0u);
  for (auto& n : nodes_) {
    EXPECT_EQ(n->opener->drops().total(), 0u);
    EXPECT_EQ(n->ring.size(), 1u);
    EXPECT_TRUE(*n->ring.primary() == new_key_);
  }
  // After rotation, the old key opens nothing.
  Keyring stale(old_key_);
  Opener o = Opener::Create(kCluster, &stale).value();
  EXPECT_FALSE(
      o.Open(Channel::kDatagram, nodes_[0]->sealer->Seal(Channel::kDatagram, Text("x")).value())
          .ok());
}

TEST_F(RotationTest, ReceiverWithoutTheNewKeyStillOpensOldPrimaryMessages) {
  // Node 0 installed the new key but still seals with the old primary; node 1 has not installed
  // it yet.
  ASSERT_TRUE(nodes_[0]->ring.Install(new_key_).ok());
  const auto sealed = nodes_[0]->sealer->Seal(Channel::kDatagram, Text("x")).value();
  const auto opened = nodes_[1]->opener->Open(Channel::kDatagram, sealed);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(opened->key_id, old_key_.id());
}

TEST_F(RotationTest, UsingTheNewKeyTooEarlyIsUnauthenticated) {
  // Skipping step 1 on node 1: node 0 seals with a key node 1 does not have.
  ASSERT_TRUE(nodes_[0]->ring.Install(new_key_).ok());
  ASSERT_TRUE(nodes_[0]->ring.Use(new_key_).ok());
  const auto sealed = nodes_[0]->sealer->Seal(Channel::kDatagram, Text("x")).value();
  ASSERT_FALSE(nodes_[1]->opener->Open(Channel::kDatagram, sealed).ok());
  EXPECT_EQ(nodes_[1]->opener->drops()[DropReason::kUnauthenticated], 1u);
  // Node 2 installed it (step 1 done there) and opens it although its primary is the old key.
  ASSERT_TRUE(nodes_[2]->ring.Install(new_key_).ok());
  const auto opened = nodes_[2]->opener->Open(Channel::kDatagram, sealed);
  ASSERT_TRUE(opened.ok());
  EXPECT_EQ(opened->key_id, new_key_.id());
}

// The fuzz seed corpus must stay valid: every secure-* and insecure-* seed opens with the fuzz
// target's keys and cluster id. If the wire format changes, regenerate the corpus.
TEST(EnvelopeCorpusTest, SeedCorpusStillOpens) {
  const char* root = std::getenv("HEARSAY_SOURCE_DIR");
  if (root == nullptr) GTEST_SKIP() << "HEARSAY_SOURCE_DIR is not set";
  const std::filesystem::path dir = std::filesystem::path(root) / "fuzz/corpus/envelope_fuzz";
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  std::array<uint8_t, kClusterKeyBytes> a, b;
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<uint8_t>(i);
    b[i] = static_cast<uint8_t>(i + 100);
  }
  Keyring ring(ClusterKey::FromBytes(a).value());
  ASSERT_TRUE(ring.Install(ClusterKey::FromBytes(b).value()).ok());
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const bool secure = name.rfind("secure-", 0) == 0;
    if (!secure && name.rfind("insecure-", 0) != 0) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
    Opener opener = secure ? Opener::Create("fuzz-cluster", &ring).value()
                           : Opener::CreateInsecureUnauthenticated("fuzz-cluster").value();
    const Channel ch =
        name.find("stream") != std::string::npos ? Channel::kStream : Channel::kDatagram;
    const auto opened = opener.Open(ch, bytes);
    EXPECT_TRUE(opened.ok()) << name << ": " << opened.status().ToString();
    ++checked;
  }
  EXPECT_GE(checked, 8);
}

}  // namespace
}  // namespace hearsay::gossip
