// Signed membership (member_statement.h): with signatures on, a member that holds the cluster key
// cannot relay a forged "alive" (a higher incarnation, another address) or "left" for another
// member, cannot make an accusation in another member's name, and cannot make an accusation the
// victim's signed refutation does not beat. With signatures off, the same forgeries go through.
#include <gtest/gtest.h>

#include <limits>

#include "hearsay/gossip/member_statement.h"
#include "hearsay/gossip/node_test_util.h"
#include "hearsay/gossip/state_signing.h"

namespace hearsay::gossip::node_member_signing_test {
namespace {

Config WithSignatures(SignatureMode mode) {
  Config config;
  config.signatures = mode;
  config.sign_interval = 200ms;
  return config;
}

SigningKey KeyOf(int i) {
  std::array<uint8_t, kSigningSeedBytes> seed{};
  seed.fill(static_cast<uint8_t>(60 + i));
  return SigningKey::FromSeed(seed);
}

// A cluster of n whose nodes sign with KeyOf(i) (when signing), joined and settled.
std::unique_ptr<Cluster> Settled(int n, uint64_t seed, const Config& config) {
  auto c = std::make_unique<Cluster>(n, seed, config);
  for (int i = 0; i < n; ++i) c->node(i).UseSigningKey(KeyOf(i));
  c->StartAll();
  c->Run(4s);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i != j) {
        EXPECT_TRUE(c->Sees(i, j, MemberState::kAlive)) << i << " sees " << j;
      }
    }
  }
  return c;
}
std::unique_ptr<Cluster> Settled(int n, uint64_t seed, SignatureMode mode) {
  return Settled(n, seed, WithSignatures(mode));
}

// `u` signed by `key` over its statement.
MemberUpdate SignedBy(const SigningKey& key, MemberUpdate u) {
  const std::string statement = MemberStatement(u);
  u.signature = key.Sign({reinterpret_cast<const uint8_t*>(statement.data()), statement.size()});
  return u;
}

// Node i's refusal counters (unverified, forged, ahead, capped), to compare before and after.
std::array<uint64_t, 4> Refusals(Cluster& c, int i) {
  const Counters& k = c.node(i).counters();
  return {k.member_updates_unverified, k.member_updates_forged, k.accusations_ahead,
          k.member_updates_capped};
}
std::array<uint64_t, 4> Since(Cluster& c, int i, const std::array<uint64_t, 4>& before) {
  std::array<uint64_t, 4> now = Refusals(c, i);
  for (size_t k = 0; k < now.size(); ++k) now[k] -= before[k];
  return now;
}
using Counts = std::array<uint64_t, 4>;

// What a liar relays about n2: its three forms (no signature, a made-up one, the liar's own).
std::vector<MemberUpdate> Forgeries(const MemberUpdate& u) {
  MemberUpdate made_up = u;
  made_up.signature.emplace();
  made_up.signature->fill(7);
  return {u, made_up, SignedBy(KeyOf(1), u)};
}

// n1 relays to n0 an "alive" for n2 with a higher incarnation and its own address: with it, n0
// would send n2's probes and forwards to n1, and could never suspect n2 at that incarnation.
TEST(NodeMemberSigningTest, ForgedAliveWithAHigherIncarnationIsRefused) {
  auto c = Settled(3, 31, SignatureMode::kEd25519);
  const uint64_t incarnation = c->node(0).Member("n2")->incarnation;
  const Counts before = Refusals(*c, 0);
  const MemberUpdate forged{MemberState::kAlive, "n2", "n1", 1, incarnation + 5, "", ""};
  for (const MemberUpdate& u : Forgeries(forged)) Inject(*c, 0, 1, u);
  EXPECT_EQ(c->node(0).Member("n2")->incarnation, incarnation);
  EXPECT_EQ(c->node(0).Member("n2")->address, "n2");
  EXPECT_EQ(Since(*c, 0, before), (Counts{1, 2, 0, 0}));
  // n2's own signed statement, as relayed by n1, still applies.
  MemberUpdate genuine{MemberState::kAlive, "n2", "n2", 1, incarnation + 1, "", ""};
  Inject(*c, 0, 1, SignedBy(KeyOf(2), genuine));
  EXPECT_EQ(c->node(0).Member("n2")->incarnation, incarnation + 1);
  EXPECT_EQ(Since(*c, 0, before), (Counts{1, 2, 0, 0}));

  auto open = Settled(3, 31, SignatureMode::kOff);
  MemberUpdate open_forged = forged;
  open_forged.incarnation = open->node(0).Member("n2")->incarnation + 5;
  Inject(*open, 0, 1, open_forged);
  EXPECT_EQ(open->node(0).Member("n2")->incarnation, open_forged.incarnation);
  EXPECT_EQ(open->node(0).Member("n2")->address, "n1");
}

// A dead member kept "alive" by a liar's relayed update: refused with signatures, so the death
// stands; without them the dead member comes back.
TEST(NodeMemberSigningTest, ForgedAliveDoesNotHideADeadMember) {
  for (SignatureMode mode : {SignatureMode::kEd25519, SignatureMode::kOff}) {
    SCOPED_TRACE(SignatureModeName(mode));
    auto c = Settled(4, 32, mode);
    c->Crash(2);
    c->Run(20s);
    ASSERT_TRUE(c->Sees(0, 2, MemberState::kDead));
    const uint64_t incarnation = c->node(0).Member("n2")->incarnation;
    for (const MemberUpdate& u :
         Forgeries({MemberState::kAlive, "n2", "n2", 1, incarnation + 1, "", ""})) {
      Inject(*c, 0, 1, u);
    }
    EXPECT_EQ(c->Sees(0, 2, MemberState::kDead), mode != SignatureMode::kOff);
  }
}

// n1 relays a "left" for n2: with it n0 would drop n2 and its state at once.
TEST(NodeMemberSigningTest, ForgedLeaveIsRefused) {
  for (SignatureMode mode : {SignatureMode::kEd25519, SignatureMode::kOff}) {
    SCOPED_TRACE(SignatureModeName(mode));
    auto c = Settled(3, 33, mode);
    const uint64_t incarnation = c->node(0).Member("n2")->incarnation;
    const Counts before = Refusals(*c, 0);
    for (const MemberUpdate& u :
         Forgeries({MemberState::kLeft, "n2", "n2", 1, incarnation, "", ""})) {
      Inject(*c, 0, 1, u);
    }
    if (mode == SignatureMode::kOff) {
      EXPECT_TRUE(c->Sees(0, 2, MemberState::kLeft));
      continue;
    }
    EXPECT_TRUE(c->Sees(0, 2, MemberState::kAlive));
    EXPECT_NE(c->node(0).PeerStore("n2"), nullptr);
    EXPECT_EQ(Since(*c, 0, before), (Counts{1, 2, 0, 0}));
    // A real leave, relayed, still applies.
    c->node(2).Leave();
    c->Run(3s);
    EXPECT_TRUE(c->Sees(0, 2, MemberState::kLeft));
    EXPECT_TRUE(c->Sees(1, 2, MemberState::kLeft));
  }
}

// A new generation announced by a liar (with its own key, at first sight) for a member at
// another node's address is a new life only the member can state under certified keys; at first
// sight the liar's own key signs it (the documented first-sight weakness), but a relay cannot
// move the member's address under the key it announced.
TEST(NodeMemberSigningTest, AnAnnouncedLifeCannotBeRelayedWithAnotherAddress) {
  auto c = Settled(3, 34, SignatureMode::kEd25519);
  c->Crash(2);
  c->net().SetDown("n2", false);
  c->Add(2, 2);
  c->node(2).UseSigningKey(KeyOf(2));
  c->Start(2);
  // n1 intercepts n2's new announcement and relays it with its own address.
  MemberUpdate announced{MemberState::kAlive, "n2", "n2", 2, 0, "", ""};
  const PublicKey key = KeyOf(2).public_key();
  announced.signing_key = std::string(key.begin(), key.end());
  MemberUpdate moved = SignedBy(KeyOf(2), announced);
  moved.address = "n1";
  const Counts before = Refusals(*c, 0);
  Inject(*c, 0, 1, moved);
  EXPECT_EQ(c->node(0).Member("n2")->generation, 1u);
  EXPECT_EQ(Since(*c, 0, before), (Counts{0, 1, 0, 0}));
  c->Run(5s);
  EXPECT_EQ(c->node(0).Member("n2")->generation, 2u);
  EXPECT_EQ(c->node(0).Member("n2")->address, "n2");
}

// The liar's accusations. One naming the last possible incarnation would leave the victim no
// higher one to refute with (unsigned, it is declared dead); one in another member's name would
// count as an independent confirmation. With signatures the first is ahead of what any peer
// knows and refused, the second fails the named accuser's key, and the liar's own signed
// accusation of the current incarnation is refuted by the victim's signed "alive".
TEST(NodeMemberSigningTest, ForgedAccusationIsRefutedByTheVictimsSignedAlive) {
  constexpr uint64_t kLast = std::numeric_limits<uint64_t>::max();
  auto c = Settled(4, 35, SignatureMode::kEd25519);
  const uint64_t incarnation = c->node(0).Member("n2")->incarnation;
  ASSERT_EQ(c->node(2).incarnation(), incarnation);
  const Counts before = Refusals(*c, 0);

  // Irrefutable: refused as ahead, at n0 and at n2 itself (which need not refute it).
  MemberUpdate last{MemberState::kSuspect, "n2", "n2", 1, kLast, "n1", ""};
  Inject(*c, 0, 1, SignedBy(KeyOf(1), last));
  Inject(*c, 2, 1, SignedBy(KeyOf(1), last));
  EXPECT_TRUE(c->Sees(0, 2, MemberState::kAlive));
  EXPECT_EQ(Since(*c, 0, before), (Counts{0, 0, 1, 0}));
  EXPECT_EQ(c->node(2).incarnation(), incarnation);

  // In n3's name, and unsigned: refused.
  MemberUpdate as_n3{MemberState::kDead, "n2", "n2", 1, incarnation, "n3", ""};
  Inject(*c, 0, 1, SignedBy(KeyOf(1), as_n3));
  Inject(*c, 0, 1, {MemberState::kSuspect, "n2", "n2", 1, incarnation, "n1", ""});
  EXPECT_TRUE(c->Sees(0, 2, MemberState::kAlive));
  EXPECT_EQ(Since(*c, 0, before), (Counts{1, 1, 1, 0}));

  // n1's own accusation, signed: a suspicion, attributed to n1, which n2 refutes.
  MemberUpdate accusation{MemberState::kSuspect, "n2", "n2", 1, incarnation, "n1", ""};
  Inject(*c, 0, 1, SignedBy(KeyOf(1), accusation));
  EXPECT_TRUE(c->Sees(0, 2, MemberState::kSuspect));
  c->Run(5s);
  for (int i : {0, 1, 3}) {
    EXPECT_TRUE(c->Sees(i, 2, MemberState::kAlive)) << i;
    EXPECT_GT(c->node(i).Member("n2")->incarnation, incarnation) << i;
  }
  EXPECT_GE(c->node(2).counters().refutations, 1u);
  c->Run(30s);
  for (int i : {0, 1, 3}) {
    for (const auto& change : c->listener(i).changes) {
      EXPECT_FALSE(change.id == "n2" && change.s == MemberState::kDead) << i;
    }
  }

  // Without signatures, the irrefutable accusation kills n2.
  auto open = Settled(4, 35, SignatureMode::kOff);
  Inject(*open, 0, 1, last);
  open->Run(40s);
  EXPECT_TRUE(open->Sees(0, 2, MemberState::kDead));
}

// n1 accuses the other members in its own name, signed, ten times a second for 10 s, each
// accusation handed to n0 alone (the liar's cheapest spread). Without a limit each one that n0
// takes spreads to the whole cluster and costs its victim a refutation; with the default bucket
// (4, then one a probe interval) n0 starts at most 14 suspicions on n1's word and drops the rest
// unrelayed.
TEST(NodeMemberSigningTest, OneAccusersSuspicionsAreRateLimited) {
  auto refutations_caused = [](const Config& config, uint64_t* limited) {
    auto c = Settled(8, 39, config);
    uint64_t before = 0;
    for (int v = 2; v < 8; ++v) before += c->node(v).counters().refutations;
    for (int k = 0; k < 100; ++k) {
      const std::string victim = Cluster::Name(2 + k % 6);
      MemberUpdate accusation{MemberState::kSuspect,
                              victim,
                              victim,
                              1,
                              c->node(0).Member(victim)->incarnation,
                              "n1",
                              ""};
      Inject(*c, 0, 1, SignedBy(KeyOf(1), accusation));
      c->Run(100ms);
    }
    c->Run(10s);
    for (int i = 0; i < 8; ++i) {
      for (int j = 0; j < 8; ++j) {
        if (i != j) {
          EXPECT_TRUE(c->Sees(i, j, MemberState::kAlive)) << i << " sees " << j;
        }
      }
    }
    *limited = c->node(0).counters().accusations_limited;
    uint64_t after = 0;
    for (int v = 2; v < 8; ++v) after += c->node(v).counters().refutations;
    return after - before;
  };
  Config unlimited = WithSignatures(SignatureMode::kEd25519);
  unlimited.accuser_rate = 0;
  uint64_t limited = 0;
  EXPECT_GE(refutations_caused(unlimited, &limited), 80u);
  EXPECT_EQ(limited, 0u);
  EXPECT_LE(refutations_caused(WithSignatures(SignatureMode::kEd25519), &limited), 14u);
  EXPECT_GE(limited, 80u);
}

// Half of a signed cluster of 16 crashes at once: the survivors accuse and declare dead many
// members in a few seconds, each its own, and relay one another's words. No honest accusation
// is past its accuser's bucket, and every survivor sees all 8 dead within the longest suspicion
// timeout (21.7 s at N = 16) plus a probe round.
TEST(NodeMemberSigningTest, HonestAccusersAreNotLimitedWhenHalfTheClusterCrashes) {
  auto c = Settled(16, 40, SignatureMode::kEd25519);
  for (int i = 8; i < 16; ++i) c->Crash(i);
  c->Run(30s);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(c->node(i).counters().accusations_limited, 0u) << i;
    for (int j = 8; j < 16; ++j) EXPECT_TRUE(c->Sees(i, j, MemberState::kDead)) << i << " " << j;
  }
}

// Signature checks are spent only on updates that would change the view, and at most
// member_verifications_per_message per message: the rest are dropped unchecked.
TEST(NodeMemberSigningTest, SignatureChecksAreCappedPerMessage) {
  auto c = Settled(3, 36, SignatureMode::kEd25519);
  const uint64_t verified = c->node(0).counters().member_signatures_verified;
  const Counts before = Refusals(*c, 0);
  const uint64_t incarnation = c->node(0).Member("n2")->incarnation;
  Message m;
  m.type = MsgType::kPing;
  m.target = "n0";
  m.header.sender = "n1";
  m.header.generation = 1;
  m.header.incarnation = c->node(1).incarnation();
  // Ten updates that change nothing (n2's current incarnation), then 40 forged ones that would.
  for (int i = 0; i < 10; ++i) {
    m.header.updates.push_back(
        SignedBy(KeyOf(1), {MemberState::kAlive, "n2", "n2", 1, incarnation, "", ""}));
  }
  for (uint64_t i = 1; i <= 40; ++i) {
    m.header.updates.push_back(
        SignedBy(KeyOf(1), {MemberState::kAlive, "n2", "n1", 1, incarnation + i, "", ""}));
  }
  c->node(0).OnMessage("n1", Channel::kDatagram, Encode(m));
  const Config config;
  const uint64_t cap = config.member_verifications_per_message;
  EXPECT_EQ(c->node(0).counters().member_signatures_verified - verified, cap);
  EXPECT_EQ(Since(*c, 0, before), (Counts{0, cap, 0, 40 - cap}));
  EXPECT_EQ(c->node(0).Member("n2")->incarnation, incarnation);
}

// Records what reaches a node's address (decoded), then passes it on to the node.
class Tap final : public MessageSink {
 public:
  explicit Tap(Node& node) : node_(node) {}
  void OnMessage(const Address& from, Channel channel, std::span<const uint8_t> payload) override {
    if (Result<Message> m = Decode(payload); m.ok()) seen.push_back(std::move(*m));
    node_.OnMessage(from, channel, payload);
  }
  std::vector<Message> seen;

 private:
  Node& node_;
};

// n0's push-pull answer to n1, which listed `asked`.
std::vector<MemberUpdate> AnswerTo(Cluster& c, Tap& tap, std::vector<MemberUpdate> asked) {
  Message m;
  m.type = MsgType::kPushPull;
  m.reply_wanted = true;
  m.header.sender = "n1";
  m.header.generation = 1;
  m.header.incarnation = c.node(1).incarnation();
  m.members = std::move(asked);
  tap.seen.clear();
  c.node(0).OnMessage("n1", Channel::kDatagram, Encode(m));
  c.Run(100ms);
  for (const Message& got : tap.seen) {
    if (got.type == MsgType::kPushPull && got.header.sender == "n0") return got.members;
  }
  ADD_FAILURE() << "no answer";
  return {};
}

// A push-pull answer carries each member's signed statement, except those the asker listed word
// for word: those go bare (no signature, no key), and the asker's view and keys stay as they were.
TEST(NodeMemberSigningTest, APushPullAnswerLeavesOutTheSignaturesTheAskerListed) {
  auto c = Settled(3, 38, SignatureMode::kEd25519);
  Tap tap(c->node(1));
  c->net().SetSink("n1", &tap);
  const std::vector<MemberUpdate> signed_answer = AnswerTo(*c, tap, {});
  ASSERT_EQ(signed_answer.size(), 3u);  // n0 itself, n1, n2
  size_t with_key = 0;
  for (const MemberUpdate& u : signed_answer) {
    EXPECT_TRUE(u.signature.has_value()) << u.id;
    with_key += u.signing_key.empty() ? 0 : 1;
  }
  EXPECT_EQ(with_key, 3u);

  // Listed back word for word, except n2's statement without its signature (not what n0 holds):
  // only n2's goes signed.
  std::vector<MemberUpdate> asked = signed_answer;
  for (MemberUpdate& u : asked) {
    if (u.id == "n2") u.signature.reset();
  }
  const std::vector<MemberUpdate> answer = AnswerTo(*c, tap, asked);
  ASSERT_EQ(answer.size(), 3u);
  for (const MemberUpdate& u : answer) {
    EXPECT_EQ(u.signature.has_value(), u.id == "n2") << u.id;
    EXPECT_EQ(u.signing_key.empty(), u.id != "n2") << u.id;
  }
  const Counts before = Refusals(*c, 1);
  c->Run(2s);
  EXPECT_TRUE(c->Sees(1, 0, MemberState::kAlive));
  EXPECT_TRUE(c->Sees(1, 2, MemberState::kAlive));
  EXPECT_EQ(Since(*c, 1, before), (Counts{0, 0, 0, 0}));
  EXPECT_EQ(c->node(1).counters().signing_key_conflicts, 0u);
}

// Unsigned clusters work as before: updates carry no signature, and a message header is its
// sender's word (an unknown sender is learned from it). A signing node learns members only from
// their signed statements.
TEST(NodeMemberSigningTest, UnsignedModeTakesHeadersAsBeforeAndSignedModeDoesNot) {
  for (SignatureMode mode : {SignatureMode::kOff, SignatureMode::kEd25519}) {
    SCOPED_TRACE(SignatureModeName(mode));
    auto c = Settled(3, 37, mode);
    EXPECT_EQ(c->node(0).counters().member_signatures_made > 0, mode != SignatureMode::kOff);
    Message m;
    m.type = MsgType::kPing;
    m.target = "n0";
    m.header.sender = "n9";
    m.header.generation = 1;
    c->node(0).OnMessage("n9", Channel::kDatagram, Encode(m));
    EXPECT_EQ(c->node(0).Member("n9").has_value(), mode == SignatureMode::kOff);
    // A node restarted with a new generation is learned in both modes.
    c->Crash(2);
    c->Restart(2, 2);
    c->Run(5s);
    EXPECT_EQ(c->node(0).Member("n2")->generation, 2u);
    EXPECT_TRUE(c->Sees(0, 2, MemberState::kAlive));
    EXPECT_EQ(c->node(0).counters().member_updates_forged, 0u);
    EXPECT_EQ(c->node(0).counters().member_updates_capped, 0u);
  }
}

}  // namespace
}  // namespace hearsay::gossip::node_member_signing_test
