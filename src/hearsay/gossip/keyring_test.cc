#include "hearsay/gossip/keyring.h"

#include <gtest/gtest.h>

#include <array>
#include <set>
#include <string>

#include "hearsay/env/rng.h"

namespace hearsay::gossip::keyring_test {
namespace {

ClusterKey KeyFromSeed(uint64_t seed) {
  Rng rng(seed);
  std::array<uint8_t, kClusterKeyBytes> bytes;
  for (auto& b : bytes) b = static_cast<uint8_t>(rng.NextU64());
  return ClusterKey::FromBytes(bytes).value();
}

TEST(ClusterKeyTest, FromBytesNeedsExactly32Bytes) {
  std::array<uint8_t, 33> bytes{};
  EXPECT_TRUE(ClusterKey::FromBytes(std::span(bytes).first(32)).ok());
  for (size_t n : {0, 1, 31, 33}) {
    const auto key = ClusterKey::FromBytes(std::span(bytes).first(n));
    ASSERT_FALSE(key.ok()) << n;
    EXPECT_EQ(key.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(key.status().message().find(std::string("got ").append(std::to_string(n))),
              std::string::npos);
  }
}

TEST(ClusterKeyTest, Base64RoundTripsAndIgnoresSurroundingWhitespace) {
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    const ClusterKey key = KeyFromSeed(seed);
    const std::string text = key.ToBase64();
    ASSERT_EQ(text.size(), kClusterKeyBase64Chars);
    EXPECT_EQ(text.back(), '=');
    const auto parsed = ClusterKey::Parse(text);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_TRUE(*parsed == key);
    const auto from_file = ClusterKey::Parse("  " + text + "\r\n");
    ASSERT_TRUE(from_file.ok());
    EXPECT_TRUE(*from_file == key);
    EXPECT_EQ(parsed->id(), key.id());
  }
}

TEST(ClusterKeyTest, KnownAnswer) {
  // Pins the text form and the derived key id: changing either is a wire-format change.
  std::array<uint8_t, kClusterKeyBytes> bytes;
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i);
  const ClusterKey key = ClusterKey::FromBytes(bytes).value();
  EXPECT_EQ(key.ToBase64(), "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=");
  EXPECT_EQ(key.IdHex(), "6d18275a");
}

Status ParseError(std::string_view text) {
  const auto key = ClusterKey::Parse(text);
  return key.ok() ? OkStatus() : key.status();
}

bool MessageHas(const Status& s, std::string_view what) {
  return s.message().find(what) != std::string::npos;
}

TEST(ClusterKeyTest, ParseErrorsSayWhatIsWrong) {
  const std::string good = KeyFromSeed(7).ToBase64();

  Status s = ParseError("");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(MessageHas(s, "empty")) << s.ToString();
  EXPECT_TRUE(MessageHas(ParseError(" \n\t"), "empty"));

  s = ParseError(std::string(64, 'a'));
  EXPECT_TRUE(MessageHas(s, "hex")) << s.ToString();

  std::string bad = good;
  bad[4] = '!';
  s = ParseError(bad);
  EXPECT_TRUE(MessageHas(s, "'!' at position 5")) << s.ToString();

  bad = good;
  bad[0] = '-';
  s = ParseError(bad);
  EXPECT_TRUE(MessageHas(s, "URL-safe")) << s.ToString();

  bad = good;
  bad[10] = ' ';
  s = ParseError(bad);
  EXPECT_TRUE(MessageHas(s, "whitespace inside")) << s.ToString();

  bad = good;
  bad[3] = '\x01';
  s = ParseError(bad);
  EXPECT_TRUE(MessageHas(s, "byte 0x01 at position 4")) << s.ToString();

  // 16 bytes of base64: a valid encoding of the wrong length.
  s = ParseError("AAECAwQFBgcICQoLDA0ODw==");
  EXPECT_TRUE(MessageHas(s, "44 base64 characters")) << s.ToString();
  EXPECT_TRUE(MessageHas(s, "got 24")) << s.ToString();

  // Right length, but no padding: 33 bytes.
  bad = good;
  bad.back() = 'A';
  s = ParseError(bad);
  EXPECT_TRUE(MessageHas(s, "decode to 32 bytes, got 33")) << s.ToString();
  bad = good;
  bad[kClusterKeyBase64Chars - 2] = '=';
  EXPECT_FALSE(ParseError(bad).ok());
}

TEST(ClusterKeyTest, IdsDifferBetweenKeysAndAreStable) {
  std::set<KeyId> ids;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    const ClusterKey key = KeyFromSeed(seed);
    EXPECT_EQ(key.id(), KeyFromSeed(seed).id());
    EXPECT_EQ(key.IdHex().size(), 8u);
    ids.insert(key.id());
  }
  EXPECT_EQ(ids.size(), 200u);
}

TEST(ClusterKeyTest, AeadKeyIsDerivedNotTheSecret) {
  const ClusterKey key = KeyFromSeed(3);
  EXPECT_FALSE(std::equal(key.bytes().begin(), key.bytes().end(), key.aead_key().begin()));
}

TEST(KeyringTest, EmptyKeyringHasNoPrimary) {
  Keyring ring;
  EXPECT_TRUE(ring.empty());
  EXPECT_EQ(ring.primary(), nullptr);
  EXPECT_TRUE(ring.List().empty());
  EXPECT_TRUE(ring.FindById(123).empty());
}

TEST(KeyringTest, FirstInstalledKeyBecomesPrimary) {
  const ClusterKey k1 = KeyFromSeed(1), k2 = KeyFromSeed(2);
  Keyring ring;
  ASSERT_TRUE(ring.Install(k1).ok());
  ASSERT_TRUE(ring.Install(k2).ok());
  ASSERT_NE(ring.primary(), nullptr);
  EXPECT_TRUE(*ring.primary() == k1);
  EXPECT_EQ(ring.size(), 2u);
  // Installing again changes nothing.
  ASSERT_TRUE(ring.Install(k2).ok());
  EXPECT_EQ(ring.size(), 2u);
  EXPECT_TRUE(ring.Contains(k2));
}

TEST(KeyringTest, UseRequiresAnInstalledKey) {
  const ClusterKey k1 = KeyFromSeed(1), k2 = KeyFromSeed(2);
  Keyring ring(k1);
  EXPECT_EQ(ring.Use(k2).code(), StatusCode::kNotFound);
  EXPECT_TRUE(*ring.primary() == k1);
  ASSERT_TRUE(ring.Install(k2).ok());
  ASSERT_TRUE(ring.Use(k2).ok());
  EXPECT_TRUE(*ring.primary() == k2);
  const auto list = ring.List();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_TRUE(list[0] == k2);
  EXPECT_TRUE(list[1] == k1);
}

TEST(KeyringTest, RemoveNeverRemovesThePrimary) {
  const ClusterKey k1 = KeyFromSeed(1), k2 = KeyFromSeed(2), k3 = KeyFromSeed(3);
  Keyring ring(k1);
  EXPECT_EQ(ring.Remove(k1).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ring.Remove(k2).code(), StatusCode::kNotFound);
  ASSERT_TRUE(ring.Install(k2).ok());
  ASSERT_TRUE(ring.Install(k3).ok());
  ASSERT_TRUE(ring.Use(k3).ok());
  ASSERT_TRUE(ring.Remove(k1).ok());
  EXPECT_TRUE(*ring.primary() == k3);
  EXPECT_FALSE(ring.Contains(k1));
  ASSERT_TRUE(ring.Remove(k2).ok());
  EXPECT_EQ(ring.size(), 1u);
  EXPECT_TRUE(*ring.primary() == k3);
  EXPECT_EQ(ring.Remove(k3).code(), StatusCode::kFailedPrecondition);
}

TEST(KeyringTest, FindByIdPutsThePrimaryFirst) {
  const ClusterKey k1 = KeyFromSeed(1), k2 = KeyFromSeed(2);
  Keyring ring(k1);
  ASSERT_TRUE(ring.Install(k2).ok());
  auto found = ring.FindById(k2.id());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(*found[0] == k2);
  EXPECT_TRUE(ring.FindById(k1.id() ^ k2.id() ^ 1).empty() || k1.id() == (k1.id() ^ k2.id() ^ 1));
}

TEST(KeyringTest, HoldsAtMostMaxKeys) {
  Keyring ring;
  for (size_t i = 0; i < Keyring::kMaxKeys; ++i) ASSERT_TRUE(ring.Install(KeyFromSeed(i + 1)).ok());
  EXPECT_EQ(ring.Install(KeyFromSeed(1000)).code(), StatusCode::kResourceExhausted);
  // A key already there is still fine.
  EXPECT_TRUE(ring.Install(KeyFromSeed(1)).ok());
}

TEST(KeyringFileTest, RoundTripsPrimaryFirst) {
  const ClusterKey k1 = KeyFromSeed(1), k2 = KeyFromSeed(2);
  Keyring ring(k1);
  ASSERT_TRUE(ring.Install(k2).ok());
  ASSERT_TRUE(ring.Use(k2).ok());
  const std::string file = ring.ToFile();
  EXPECT_EQ(file, k2.ToBase64() + "\n" + k1.ToBase64() + "\n");
  const auto parsed = Keyring::ParseFile(file);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->size(), 2u);
  EXPECT_TRUE(*parsed->primary() == k2);
  EXPECT_TRUE(parsed->Contains(k1));
}

TEST(KeyringFileTest, KeygenOutputIsAKeyFile) {
  const ClusterKey k = KeyFromSeed(9);
  const auto parsed = Keyring::ParseFile(k.ToBase64() + "\n");
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(*parsed->primary() == k);
  // Without the final newline, with comments, blank lines and CRLF.
  const auto commented =
      Keyring::ParseFile(std::string("# cluster key\r\n\n  ") + k.ToBase64() + "\r\n# old:\n");
  ASSERT_TRUE(commented.ok()) << commented.status().ToString();
  EXPECT_EQ(commented->size(), 1u);
}

TEST(KeyringFileTest, ErrorsNameTheLine) {
  const std::string k1 = KeyFromSeed(1).ToBase64();
  auto r = Keyring::ParseFile("");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no key"), std::string::npos);
  r = Keyring::ParseFile("# only a comment\n\n");
  EXPECT_FALSE(r.ok());
  r = Keyring::ParseFile(k1 + "\n\nnot-a-key\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 3"), std::string::npos) << r.status().ToString();
  r = Keyring::ParseFile(k1 + "\n" + k1 + "\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 2: key repeats"), std::string::npos);
  std::string many;
  for (uint64_t i = 0; i <= Keyring::kMaxKeys; ++i) many += KeyFromSeed(i + 1).ToBase64() + "\n";
  r = Keyring::ParseFile(many);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hearsay::gossip::keyring_test
