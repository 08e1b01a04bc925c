// Signed origin state (state_signing.h): a node's own state verifies at every peer, also when
// relayed; a member holding the cluster key cannot forge another member's state; keys are bound
// per (id, generation).
#include <gtest/gtest.h>

#include <map>

#include "hearsay/gossip/member_statement.h"
#include "hearsay/gossip/node_test_util.h"
#include "hearsay/gossip/signing_key_source.h"
#include "hearsay/gossip/state_signing.h"

namespace hearsay::gossip {
namespace {

Config Signed(SignatureMode mode = SignatureMode::kEd25519) {
  Config config;
  config.landmark_stride = 4;
  config.signatures = mode;
  config.sign_interval = 200ms;
  return config;
}

// A Deltas message "from" node `from` carrying `d`, delivered to node `to`.
void Deliver(Cluster& c, int to, int from, const OriginDelta& d) {
  Message m;
  m.type = MsgType::kDeltas;
  m.header.sender = Cluster::Name(from);
  m.header.generation = c.node(from).generation();
  m.header.incarnation = c.node(from).incarnation();
  m.deltas.push_back(d);
  c.node(to).OnMessage(Cluster::Name(from), Channel::kDatagram, Encode(m));
}

// A run that adds `key` to `origin`'s state as node `at` holds it: what a liar relays.
OriginDelta ForgedRun(Cluster& c, int at, const NodeId& origin, prefix::BlockKey key) {
  const OriginStore* s = c.node(at).PeerStore(origin);
  EXPECT_NE(s, nullptr);
  OriginDelta d;
  d.id = origin;
  d.generation = s->generation();
  d.stride = s->stride();
  d.from_version = s->max_version();
  d.to_version = s->max_version() + 1;
  d.entries = {{key, 0, true, d.to_version}};
  return d;
}

TEST(NodeSigningTest, OwnSignedStateVerifiesAtEveryPeerAlsoWhenRelayed) {
  Cluster c(5, 21, Signed());
  // n2 and n0 never talk directly: n0 gets n2's state only as relayed by the others.
  c.net().Block(Cluster::Name(0), Cluster::Name(2), true);
  c.net().Block(Cluster::Name(2), Cluster::Name(0), true);
  c.StartAll();
  c.Run(3s);
  LoadReport load;
  load.queue_depth = 7;
  c.node(2).SetLoad(load);
  c.node(2).PublishCacheEvents(Chain(1000, 10));  // landmarks at 0, 4, 8
  c.Run(3s);
  for (int i = 0; i < c.size(); ++i) {
    if (i == 2) continue;
    EXPECT_EQ(c.listener(i).caches["n2"], (std::set<prefix::BlockKey>{1000, 1004, 1008})) << i;
    EXPECT_EQ(c.listener(i).loads["n2"].queue_depth, 7u) << i;
    EXPECT_GT(c.node(i).counters().signatures_verified, 0u) << i;
    EXPECT_EQ(c.node(i).counters().deltas_forged, 0u) << i;
    EXPECT_EQ(c.node(i).counters().signing_key_conflicts, 0u) << i;
  }
  EXPECT_GT(c.node(2).counters().signatures_made, 0u);
  // Removals and later writes verify too.
  c.node(2).PublishCacheEvents(std::vector<BlockEvent>{{BlockEvent::Kind::kRemoved, 1008, 8}});
  c.Run(3s);
  EXPECT_EQ(c.listener(0).caches["n2"], (std::set<prefix::BlockKey>{1000, 1004}));
  EXPECT_EQ(c.node(0).counters().deltas_forged, 0u);
}

// A write is published signed at the next sign tick: every sign_interval in a cluster of
// sign_budget_members or more, at the gossip's pace in a small one, where routing reads its peers'
// loads and caches. Returns the longest a load write took to reach every peer, over writes made
// at different points between two ticks.
Duration SlowestLoadWrite(size_t budget_members) {
  Config config;
  config.signatures = SignatureMode::kModeled;
  config.sign_interval = 1s;
  config.sign_budget_members = budget_members;
  Cluster c(4, 23, config);
  c.StartAll();
  c.Run(3s);
  Duration slowest{0};
  for (uint32_t k = 1; k <= 6; ++k) {
    LoadReport load;
    load.queue_depth = k;
    c.node(2).SetLoad(load);
    Duration took{0};
    const auto everywhere = [&] {
      for (int i = 0; i < c.size(); ++i) {
        if (i != 2 && c.listener(i).loads["n2"].queue_depth != k) return false;
      }
      return true;
    };
    while (!everywhere() && took < 5s) {
      c.Run(10ms);
      took += 10ms;
    }
    slowest = std::max(slowest, took);
    c.Run(170ms);  // the next write at another point of the interval
  }
  return slowest;
}

TEST(NodeSigningTest, ASmallClusterPublishesSignedWritesAtTheGossipsPace) {
  EXPECT_LT(SlowestLoadWrite(/*budget_members=*/64), 500ms);
  // Four members at a budget of four: up to the whole 1 s interval.
  EXPECT_GT(SlowestLoadWrite(/*budget_members=*/4), 600ms);
}

// The attack: n1 holds the cluster key and relays a run that adds a key to n2's state, unsigned,
// with a made-up signature, and signed with its own key over the right commitment. Every one is
// refused with signatures on; with signatures off, the same forgery is accepted.
TEST(NodeSigningTest, ForgedDeltaForAnotherOriginIsRefused) {
  Cluster c(3, 22, Signed());
  c.StartAll();
  c.Run(3s);
  c.node(2).PublishCacheEvents(Chain(1000, 4));
  c.Run(2s);
  ASSERT_EQ(c.listener(0).caches["n2"], (std::set<prefix::BlockKey>{1000}));
  const uint64_t known = c.node(0).PeerStore("n2")->max_version();

  OriginDelta unsigned_run = ForgedRun(c, 0, "n2", 0xbad);
  Deliver(c, 0, 1, unsigned_run);
  EXPECT_EQ(c.node(0).counters().deltas_unverified, 1u);

  OriginDelta made_up = ForgedRun(c, 0, "n2", 0xbad);
  made_up.signature.emplace();
  made_up.signature->fill(7);
  Deliver(c, 0, 1, made_up);
  EXPECT_EQ(c.node(0).counters().deltas_forged, 1u);

  // n1 signs the exact state n0 would reach, but with its own key.
  OriginDelta own_key = ForgedRun(c, 0, "n2", 0xbad);
  const StateHash* held = c.node(0).PeerStore("n2")->commitment();
  ASSERT_NE(held, nullptr);
  StateHash after = *held;
  after.Add(CacheElement(0xbad, 0));
  const std::string statement =
      StateStatement("n2", own_key.generation, own_key.to_version, own_key.stride, after.Digest());
  std::array<uint8_t, kSigningSeedBytes> seed{};
  seed.fill(1);
  own_key.signature = SigningKey::FromSeed(seed).Sign(
      {reinterpret_cast<const uint8_t*>(statement.data()), statement.size()});
  Deliver(c, 0, 1, own_key);
  EXPECT_EQ(c.node(0).counters().deltas_forged, 2u);

  EXPECT_EQ(c.node(0).PeerStore("n2")->max_version(), known);
  EXPECT_EQ(c.listener(0).caches["n2"], (std::set<prefix::BlockKey>{1000}));
  // The real state keeps flowing.
  c.node(2).PublishCacheEvents(Chain(2000, 1));
  c.Run(2s);
  EXPECT_EQ(c.listener(0).caches["n2"], (std::set<prefix::BlockKey>{1000, 2000}));

  // Without signatures the same forgery goes through: what the feature prevents.
  Cluster open(3, 22, Signed(SignatureMode::kOff));
  open.StartAll();
  open.Run(3s);
  open.node(2).PublishCacheEvents(Chain(1000, 4));
  open.Run(2s);
  Deliver(open, 0, 1, ForgedRun(open, 0, "n2", 0xbad));
  EXPECT_TRUE(open.listener(0).caches["n2"].contains(0xbad));
}

// The usage record (cluster-wide rate limits) is part of the signed state: a liar that relays
// another origin's genuine signed run with its usage record altered (to shrink or inflate that
// origin's share of a tenant's limit) or withheld is refused, and the genuine run still applies.
TEST(NodeSigningTest, ForgedUsageForAnotherOriginIsRefused) {
  Cluster c(3, 24, Signed());
  c.StartAll();
  c.Run(3s);
  ASSERT_TRUE(c.node(2).SetUsage({{42, 5000, 900}}).ok());
  c.Run(2s);
  ASSERT_EQ(c.listener(0).usages["n2"], (std::vector<TenantUsage>{{42, 5000, 900}}));
  const uint64_t known = c.node(0).PeerStore("n2")->max_version();
  // n0 hears nothing for a while; n2's next usage record reaches n1 only.
  for (int i : {1, 2}) {
    c.net().Block(Cluster::Name(i), Cluster::Name(0), true);
    c.net().Block(Cluster::Name(0), Cluster::Name(i), true);
  }
  ASSERT_TRUE(c.node(2).SetUsage({{42, 8000, 1500}}).ok());
  c.Run(2s);
  ASSERT_EQ(c.listener(1).usages["n2"], (std::vector<TenantUsage>{{42, 8000, 1500}}));
  std::optional<OriginDelta> genuine = c.node(1).PeerStore("n2")->BuildDelta(known, SIZE_MAX);
  ASSERT_TRUE(genuine && genuine->signature && genuine->usage);

  OriginDelta inflated = *genuine;  // n2's offered traffic made to look large: a smaller share
  inflated.usage->tenants[0].milli_requests_ps = 900000;
  Deliver(c, 0, 1, inflated);
  EXPECT_EQ(c.node(0).counters().deltas_forged, 1u);
  OriginDelta stripped = *genuine;  // the new record withheld, so the old one would stand
  stripped.usage.reset();
  Deliver(c, 0, 1, stripped);
  EXPECT_EQ(c.node(0).counters().deltas_forged, 2u);
  EXPECT_EQ(c.node(0).PeerStore("n2")->max_version(), known);
  EXPECT_EQ(c.listener(0).usages["n2"], (std::vector<TenantUsage>{{42, 5000, 900}}));

  Deliver(c, 0, 1, *genuine);
  EXPECT_EQ(c.node(0).counters().deltas_forged, 2u);
  EXPECT_EQ(c.listener(0).usages["n2"], (std::vector<TenantUsage>{{42, 8000, 1500}}));
}

// A load record's backlog list (the work its origin has outstanding at members whose reports
// leave it out) is part of the signed state: a liar relaying another origin's genuine run cannot
// slander a member in that origin's name, nor withhold the work it lists.
TEST(NodeSigningTest, ABacklogListAlteredOnItsWayIsRefused) {
  Cluster c(3, 25, Signed());
  c.StartAll();
  c.Run(3s);
  const uint64_t known = c.node(0).PeerStore("n2")->max_version();
  for (int i : {1, 2}) {
    c.net().Block(Cluster::Name(i), Cluster::Name(0), true);
    c.net().Block(Cluster::Name(0), Cluster::Name(i), true);
  }
  LoadReport listed;
  listed.backlog = {{"n9", 2, 3072}};
  c.node(2).SetLoad(listed);
  c.Run(2s);
  ASSERT_EQ(c.listener(1).loads["n2"].backlog, listed.backlog);
  std::optional<OriginDelta> genuine = c.node(1).PeerStore("n2")->BuildDelta(known, SIZE_MAX);
  ASSERT_TRUE(genuine && genuine->signature && genuine->load);

  OriginDelta slander = *genuine;  // n2 made to list work at n0 that it never sent
  slander.load->load.backlog = {{"n0", 40, 600000}, {"n9", 2, 3072}};
  Deliver(c, 0, 1, slander);
  EXPECT_EQ(c.node(0).counters().deltas_forged, 1u);
  OriginDelta hidden = *genuine;  // the liar's queue at n9 withheld
  hidden.load->load.backlog.clear();
  Deliver(c, 0, 1, hidden);
  EXPECT_EQ(c.node(0).counters().deltas_forged, 2u);
  EXPECT_TRUE(c.listener(0).loads["n2"].backlog.empty());

  Deliver(c, 0, 1, *genuine);
  EXPECT_EQ(c.node(0).counters().deltas_forged, 2u);
  EXPECT_EQ(c.listener(0).loads["n2"].backlog, listed.backlog);
}

TEST(NodeSigningTest, KeysAreBoundPerGenerationFirstSeenWins) {
  Cluster c(3, 23, Signed());
  c.StartAll();
  c.Run(3s);
  const std::string key1 = c.node(2).signing_public_key();
  ASSERT_EQ(key1.size(), kSigningPublicKeyBytes);
  // Another key for the same (id, generation) is ignored and counted.
  MemberUpdate liar{MemberState::kAlive, "n2", "n2", 1, c.node(2).incarnation(), "", ""};
  liar.signing_key = std::string(32, 'x');
  Inject(c, 0, 1, liar);
  EXPECT_EQ(c.node(0).counters().signing_key_conflicts, 1u);
  c.node(2).PublishCacheEvents(Chain(1000, 1));
  c.Run(2s);
  EXPECT_EQ(c.listener(0).caches["n2"], (std::set<prefix::BlockKey>{1000}));
  EXPECT_EQ(c.node(0).counters().deltas_forged, 0u);

  // A new generation brings a new key, bound afresh.
  c.Crash(2);
  c.Run(1s);
  c.Restart(2, 2);
  ASSERT_NE(c.node(2).signing_public_key(), key1);
  c.Run(3s);
  c.node(2).PublishCacheEvents(Chain(3000, 1));
  c.Run(3s);
  ASSERT_TRUE(c.Sees(0, 2, MemberState::kAlive));
  EXPECT_EQ(c.node(0).Member("n2")->generation, 2u);
  EXPECT_EQ(c.listener(0).caches["n2"], (std::set<prefix::BlockKey>{3000}));
  EXPECT_EQ(c.node(0).counters().deltas_forged, 0u);
}

// Stands for mutual TLS: every member's real key, as the member itself states it over a link its
// certificate authenticates (net/certified_key_source.h).
class CertifiedKeys : public SigningKeySource {
 public:
  std::string ConfirmedKey(const NodeId& id, Generation generation, const Address&) override {
    ++asked;
    auto it = keys.find({id, generation});
    return it == keys.end() ? std::string() : it->second;
  }
  std::map<std::pair<NodeId, Generation>, std::string> keys;
  int asked = 0;
};

SigningKey KeyOf(int i) {
  std::array<uint8_t, kSigningSeedBytes> seed{};
  seed.fill(static_cast<uint8_t>(40 + i));
  return SigningKey::FromSeed(seed);
}

// The attack first sight allows: n1 announces its own key for n2 before n2's announcement
// reaches n0, then forges n2's state with it. With keys bound to certificates n0 binds n2's real
// key (the announced one differs: a conflict), refuses the forgery and applies n2's real state;
// with first sight, n0 binds the liar's key and refuses n2's real state instead.
TEST(NodeSigningTest, KeysBoundToCertificatesRefuseAnAnnouncedKeyThatDiffers) {
  for (const bool certified : {true, false}) {
    SCOPED_TRACE(certified ? "certified" : "first sight");
    CertifiedKeys source;
    Config config = Signed();
    if (certified) config.key_source = &source;
    Cluster c(3, 25, config);
    for (int i = 0; i < 3; ++i) {
      c.node(i).UseSigningKey(KeyOf(i));
      const PublicKey k = KeyOf(i).public_key();  // a copy: KeyOf returns a temporary
      source.keys[{Cluster::Name(i), 1}] = std::string(k.begin(), k.end());
    }
    c.StartAll();
    const SigningKey liar_key = KeyOf(1);  // n1 claims its own key is n2's
    const std::string liar_public(liar_key.public_key().begin(), liar_key.public_key().end());
    MemberUpdate liar{MemberState::kAlive, "n2", "n2", 1, 0, "", ""};
    liar.signing_key = liar_public;
    const std::string announced = MemberStatement(liar);  // signed with the key it announces
    liar.signature =
        liar_key.Sign({reinterpret_cast<const uint8_t*>(announced.data()), announced.size()});
    Inject(c, 0, 1, liar);
    c.Run(3s);
    ASSERT_TRUE(c.Sees(0, 2, MemberState::kAlive));

    // n1 forges a run of n2's state that adds 0xbad, signed with the key it announced.
    OriginDelta forged = ForgedRun(c, 0, "n2", 0xbad);
    forged.stride = 4;  // n0 may hold nothing of n2 yet (first sight: it refused n2's state)
    StateHash after = *c.node(0).PeerStore("n2")->commitment();
    after.Add(CacheElement(0xbad, 0));
    const std::string statement =
        StateStatement("n2", 1, forged.to_version, forged.stride, after.Digest());
    forged.signature =
        liar_key.Sign({reinterpret_cast<const uint8_t*>(statement.data()), statement.size()});
    Deliver(c, 0, 1, forged);
    c.node(2).PublishCacheEvents(Chain(1000, 1));
    c.Run(3s);
    if (certified) {
      EXPECT_GE(c.node(0).counters().signing_key_conflicts, 1u);
      EXPECT_GE(c.node(0).counters().signing_keys_confirmed, 2u);
      EXPECT_FALSE(c.listener(0).caches["n2"].contains(0xbad));
      EXPECT_EQ(c.listener(0).caches["n2"], (std::set<prefix::BlockKey>{1000}));
      EXPECT_GT(source.asked, 0);
    } else {
      EXPECT_TRUE(c.listener(0).caches["n2"].contains(0xbad));
      EXPECT_FALSE(c.listener(0).caches["n2"].contains(1000));
      EXPECT_GT(c.node(0).counters().deltas_forged, 0u);
    }
  }
}

// Until the source confirms a member's key, none is bound (an announced one is not taken): the
// member is not learned and its deltas wait, then apply once the key is confirmed.
TEST(NodeSigningTest, AnUnconfirmedKeyIsNotBound) {
  CertifiedKeys source;
  Config config = Signed();
  config.key_source = &source;
  Cluster c(3, 26, config);
  c.StartAll();
  c.node(2).PublishCacheEvents(Chain(1000, 1));
  c.Run(3s);
  EXPECT_TRUE(c.listener(0).caches["n2"].empty());
  // Its signed "alive" cannot be checked either: the member is not learned yet.
  EXPECT_FALSE(c.node(0).Member("n2").has_value());
  EXPECT_GT(c.node(0).counters().member_updates_unverified, 0u);
  EXPECT_EQ(c.node(0).counters().signing_keys_confirmed, 0u);
  for (int i = 0; i < 3; ++i) source.keys[{Cluster::Name(i), 1}] = c.node(i).signing_public_key();
  c.Run(3s);
  EXPECT_EQ(c.listener(0).caches["n2"], (std::set<prefix::BlockKey>{1000}));
  EXPECT_EQ(c.node(0).counters().signing_key_conflicts, 0u);
}

// A replica's commitment, kept run by run, equals the one a fresh replica computes from a
// snapshot of the same state: the relay-independence every signature relies on.
TEST(NodeSigningTest, CommitmentsAgreeAcrossRunsAndSnapshots) {
  OriginStore writer("o", 1, 4, nullptr, /*writer=*/true, 1);
  OriginStore by_runs("o", 1, 4);
  by_runs.EnableCommitment();
  Rng rng(5);
  for (int step = 0; step < 200; ++step) {
    for (int k = 0; k < 5; ++k) {
      writer.PutCache(rng.Below(40), static_cast<uint32_t>(rng.Below(3)), rng.Bernoulli(0.6));
    }
    if (step % 7 == 0) writer.PutLoad(LoadReport{.queue_depth = static_cast<uint32_t>(step)}, step);
    if (step % 11 == 0) writer.PutUsage({{7, static_cast<uint64_t>(step), 3}});
    auto d = writer.BuildDelta(by_runs.max_version(), SIZE_MAX);
    if (!d) continue;
    auto c = by_runs.CommitmentAfter(*d);
    ASSERT_TRUE(c);
    ASSERT_EQ(by_runs.Apply(*d, nullptr), OriginStore::ApplyResult::kApplied);
    by_runs.SetSigned(c, Signature{});
  }
  OriginStore fresh("o", 1, 4);
  fresh.EnableCommitment();
  auto snap = writer.BuildDelta(0, SIZE_MAX);
  ASSERT_TRUE(snap && snap->snapshot);
  auto c = fresh.CommitmentAfter(*snap);
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, *by_runs.commitment());
  // What the replica serves carries the signature of its version, a snapshot for a peer behind
  // its collection floor included.
  ASSERT_GT(by_runs.gc_floor(), 0u);
  auto served = by_runs.BuildDelta(0, SIZE_MAX);
  ASSERT_TRUE(served && served->snapshot);
  EXPECT_TRUE(served->signature.has_value());
  // A run naming one key twice has no consistent commitment.
  OriginDelta twice;
  twice.id = "o";
  twice.generation = 1;
  twice.from_version = by_runs.max_version();
  twice.to_version = twice.from_version + 2;
  twice.stride = by_runs.stride();
  twice.entries = {{9, 0, true, twice.from_version + 1}, {9, 0, false, twice.to_version}};
  EXPECT_FALSE(by_runs.CommitmentAfter(twice));
}

}  // namespace
}  // namespace hearsay::gossip
