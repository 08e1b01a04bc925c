#include "hearsay/net/peer_auth.h"

#include <gtest/gtest.h>
#include <sodium.h>

#include <array>

namespace hearsay::net::peer_auth_test {
namespace {

using gossip::ClusterKey;
using gossip::Keyring;
using Verdict = PeerAuthenticator::Verdict;

constexpr int64_t kNow = 1'700'000'000'000;

ClusterKey Key(uint8_t fill) {
  std::array<uint8_t, gossip::kClusterKeyBytes> b;
  b.fill(fill);
  return ClusterKey::FromBytes(b).value();
}

const AuthFields kFields{"POST", "/v1/completions", R"({"prompt":"hi"})", "n2", "n1"};

class PeerAuthTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_GE(sodium_init(), 0); }
  const ClusterKey key_ = Key(1);
};

TEST_F(PeerAuthTest, AcceptsOnceAndRefusesTheReplay) {
  PeerAuthenticator sender(Keyring(key_), AuthPurpose::kPeer);
  PeerAuthenticator receiver(Keyring(key_), AuthPurpose::kPeer);
  const std::string a = sender.Sign(kFields, kNow);
  EXPECT_NE(a, sender.Sign(kFields, kNow)) << "a fresh nonce per request";
  EXPECT_EQ(receiver.Verify(a, kFields, kNow + 5), Verdict::kOk);
  EXPECT_EQ(receiver.Verify(a, kFields, kNow + 10), Verdict::kReplayed);
  EXPECT_EQ(receiver.Verify(a, kFields, kNow + 20'000), Verdict::kReplayed);
  // Once out of the skew allowance, the clock refuses it.
  EXPECT_EQ(receiver.Verify(a, kFields, kNow + 31'000), Verdict::kStale);
}

TEST_F(PeerAuthTest, RefusesAnotherReceiverAndEveryChangedField) {
  PeerAuthenticator sender(Keyring(key_), AuthPurpose::kPeer);
  const std::string a = sender.Sign(kFields, kNow);
  const AuthFields changed[] = {
      {"GET", kFields.path, kFields.body, kFields.sender, kFields.receiver},
      {kFields.method, "/v1/chat/completions", kFields.body, kFields.sender, kFields.receiver},
      {kFields.method, kFields.path, R"({"prompt":"ho"})", kFields.sender, kFields.receiver},
      {kFields.method, kFields.path, kFields.body, "n3", kFields.receiver},
      {kFields.method, kFields.path, kFields.body, kFields.sender, "n3"},  // replayed elsewhere
  };
  for (const AuthFields& f : changed) {
    PeerAuthenticator receiver(Keyring(key_), AuthPurpose::kPeer);
    EXPECT_EQ(receiver.Verify(a, f, kNow), Verdict::kBadMac) << f.method << f.path << f.receiver;
  }
  // A changed timestamp, nonce or MAC byte.
  PeerAuthenticator receiver(Keyring(key_), AuthPurpose::kPeer);
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == '.') continue;
    std::string t = a;
    t[i] = t[i] == '1' ? '2' : '1';
    const Verdict v = receiver.Verify(t, kFields, kNow);
    EXPECT_NE(v, Verdict::kOk) << i;
  }
  EXPECT_EQ(receiver.Verify(a, kFields, kNow), Verdict::kOk);
}

TEST_F(PeerAuthTest, RefusesMissingMalformedSkewedAndForeignKeys) {
  PeerAuthenticator receiver(Keyring(key_), AuthPurpose::kPeer);
  EXPECT_EQ(receiver.Verify("", kFields, kNow), Verdict::kMissing);
  EXPECT_EQ(receiver.Verify(std::string(64, 'a'), kFields, kNow), Verdict::kMalformed);
  EXPECT_EQ(receiver.Verify("1.2.3", kFields, kNow), Verdict::kMalformed);
  EXPECT_EQ(receiver.Verify(SignPeerRequest(key_, kFields, kNow - 31'000), kFields, kNow),
            Verdict::kStale);
  EXPECT_EQ(receiver.Verify(SignPeerRequest(key_, kFields, kNow + 31'000), kFields, kNow),
            Verdict::kStale);
  EXPECT_EQ(receiver.Verify(SignPeerRequest(Key(2), kFields, kNow), kFields, kNow),
            Verdict::kBadMac);
  // The admin purpose derives another key.
  PeerAuthenticator admin(Keyring(key_), AuthPurpose::kAdmin);
  EXPECT_EQ(admin.Verify(SignPeerRequest(key_, kFields, kNow), kFields, kNow), Verdict::kBadMac);
}

TEST_F(PeerAuthTest, AcceptsAnyInstalledKeyAndSignsWithThePrimary) {
  Keyring ring(key_);
  ASSERT_TRUE(ring.Install(Key(2)).ok());
  PeerAuthenticator node(ring, AuthPurpose::kPeer);
  EXPECT_EQ(node.Verify(SignPeerRequest(key_, kFields, kNow), kFields, kNow), Verdict::kOk);
  EXPECT_EQ(node.Verify(SignPeerRequest(Key(2), kFields, kNow), kFields, kNow), Verdict::kOk);
  PeerAuthenticator new_only(Keyring(Key(2)), AuthPurpose::kPeer);
  EXPECT_EQ(new_only.Verify(node.Sign(kFields, kNow), kFields, kNow), Verdict::kBadMac);
  ASSERT_TRUE(ring.Use(Key(2)).ok());
  node.Update(ring);
  EXPECT_EQ(new_only.Verify(node.Sign(kFields, kNow), kFields, kNow), Verdict::kOk);
  ASSERT_TRUE(ring.Remove(key_).ok());
  node.Update(ring);
  EXPECT_EQ(node.Verify(SignPeerRequest(key_, kFields, kNow), kFields, kNow), Verdict::kBadMac);
}

TEST_F(PeerAuthTest, AFullWindowForgetsItsOldestAndRefusesEverythingAsOld) {
  PeerAuthenticator receiver(Keyring(key_), AuthPurpose::kPeer,
                             {.max_skew_ms = 30'000, .window = 4});
  std::vector<std::string> sent;
  for (int i = 0; i < 6; ++i) sent.push_back(SignPeerRequest(key_, kFields, kNow + i));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(receiver.Verify(sent[i], kFields, kNow), Verdict::kOk);
  // The first was forgotten (the window holds 4) but its timestamp is now the floor.
  EXPECT_EQ(receiver.Verify(sent[0], kFields, kNow), Verdict::kReplayed);
  EXPECT_EQ(receiver.Verify(sent[5], kFields, kNow), Verdict::kOk);
}

TEST(NonceWindowTest, StaysWithinItsCapacityAndForgetsWhatTheClockRefuses) {
  NonceWindow w(3);
  NonceWindow::Nonce n{};
  for (uint8_t i = 0; i < 10; ++i) {
    n[0] = i;
    ASSERT_TRUE(w.Fresh(100 + i, n));
    w.Record(100 + i, n, 0);
    EXPECT_LE(w.size(), 3u);
    EXPECT_FALSE(w.Fresh(100 + i, n));
  }
  EXPECT_EQ(w.floor_ms(), 106);
  n[0] = 99;
  w.Record(200, n, 150);  // everything before 150 is out of the skew allowance
  EXPECT_EQ(w.size(), 1u);
}

}  // namespace
}  // namespace hearsay::net::peer_auth_test
