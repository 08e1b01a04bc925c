// node::Node in virtual time, on a SimCluster (real gossip over SimNetwork, SimEngines).
#include "hearsay/node/node.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "hearsay/sim/sim_cluster.h"
#include "hearsay/sim/test_requests.h"

namespace hearsay::node {
namespace {

using sim::SimCluster;
using sim::SimClusterOptions;
using sim::test_requests::Prompt;
using sim::test_requests::Req;

// Records every event a client sees.
struct Recorder final : ResponseSink {
  struct Events {
    bool first = false;
    uint32_t cached = 0;
    bool complete = false;
    bool error = false;
    int restarts = 0;
    std::string error_message;
  };
  std::map<uint64_t, Events> by_id;
  void OnFirstToken(uint64_t id, const PeerFirstToken& f) override {
    by_id[id].first = true;
    by_id[id].cached = f.cached_tokens;
  }
  void OnComplete(uint64_t id, const PeerUsage&) override { by_id[id].complete = true; }
  void OnError(uint64_t id, const Status& s, bool) override {
    by_id[id].error = true;
    by_id[id].error_message = s.message();
  }
  void OnRestart(uint64_t id) override {
    by_id[id].first = false;
    ++by_id[id].restarts;
  }
};

std::unique_ptr<SimCluster> MakeCluster(const std::string& policy, int nodes = 3, int liars = 0,
                                        int slanderers = 0, size_t trimmed_listers = 1) {
  SimClusterOptions o;
  o.nodes = nodes;
  o.liars = liars;
  o.slanderers = slanderers;
  o.trimmed_listers = trimmed_listers;
  o.seed = 7;
  o.delay_ms = 1;
  o.policy = policy;
  o.gossip.gossip_interval = FromMillis(50);
  o.gossip.probe_interval = FromMillis(250);
  o.gossip.probe_timeout = FromMillis(125);
  o.gossip.landmark_stride = 2;
  o.publish_interval = FromMillis(25);
  auto c = SimCluster::Create(o);
  EXPECT_TRUE(c.ok());
  (*c)->StartAll();
  (*c)->scheduler().RunFor(FromSeconds(3));
  return std::move(*c);
}

TEST(NodeTest, ClusterConverges) {
  auto c = MakeCluster("hearsay");
  for (int i = 0; i < c->size(); ++i) EXPECT_EQ(c->node(i).gossip().live_member_count(), 2u);
}

TEST(NodeTest, ForwardsToThePeerHoldingThePrefix) {
  auto c = MakeCluster("hearsay");
  Recorder rec;
  // Node B (1) serves a long prompt itself (hop marker set: served here).
  c->node(1).Submit(Req(1, Prompt(1, 2048, 1, 40), true), &rec);
  c->scheduler().RunFor(FromSeconds(2));
  ASSERT_TRUE(rec.by_id[1].complete);
  EXPECT_GT(c->node(0).EstimatePeerCachedTokens("n1", Prompt(1, 2048, 2, 40)), 1500u);
  // A sibling enters at A (0): it should go to B and hit B's cache.
  c->node(0).Submit(Req(2, Prompt(1, 2048, 2, 40)), &rec);
  c->scheduler().RunFor(FromSeconds(2));
  ASSERT_TRUE(rec.by_id[2].complete);
  EXPECT_GT(rec.by_id[2].cached, 1500u);
  EXPECT_EQ(c->node(0).stats().forwarded_out, 1u);
  EXPECT_EQ(c->node(1).stats().served, 2u);
  EXPECT_EQ(c->node(1).stats().bounced, 0u);  // idle: it serves what it could have bounced
}

TEST(NodeTest, AForwardIsBouncedOnlyWhenTheTargetWouldBeSlowerThanAsked) {
  auto c = MakeCluster("hearsay");
  Recorder rec;
  // An idle node needs ~6 ms for a cold 40-token prompt: more than 0.001 ms + the 1 ms margin,
  // less than 1000 ms.
  PeerRequest fast = Req(1, Prompt(11, 0, 1, 40), true);
  fast.bounce_above_ms = 1000;
  c->node(1).Submit(std::move(fast), &rec);
  PeerRequest impatient = Req(2, Prompt(11, 0, 2, 40), true);
  impatient.bounce_above_ms = 0.001;
  c->node(1).Submit(std::move(impatient), &rec);
  c->scheduler().RunFor(FromSeconds(1));
  EXPECT_TRUE(rec.by_id[1].complete);
  EXPECT_TRUE(rec.by_id[2].error);
  EXPECT_FALSE(rec.by_id[2].first);
  EXPECT_EQ(c->node(1).stats().bounced, 1u);
  EXPECT_EQ(c->node(1).stats().served, 1u);
}

TEST(NodeTest, ABusyHolderBouncesTheForwardAndTheRequestIsServedElsewhere) {
  auto c = MakeCluster("hearsay");
  Recorder rec;
  c->node(1).Submit(Req(1, Prompt(13, 2048, 1, 40), true), &rec);
  c->scheduler().RunFor(FromSeconds(2));
  ASSERT_GT(c->node(0).EstimatePeerCachedTokens("n1", Prompt(13, 2048, 2, 40)), 1500u);
  // B gets a burst of cold prompts (seconds of prefill) at the very moment A routes a sibling:
  // A's view of B's load is still idle, so A forwards for the cache; B knows better.
  for (uint64_t i = 0; i < 20; ++i) {
    c->node(1).Submit(Req(100 + i, Prompt(1000 + uint32_t(i), 4000, 1, 10), true), &rec);
  }
  c->node(0).Submit(Req(2, Prompt(13, 2048, 2, 40)), &rec);
  c->scheduler().RunFor(FromSeconds(10));
  EXPECT_TRUE(rec.by_id[2].complete);
  EXPECT_FALSE(rec.by_id[2].error);
  EXPECT_EQ(c->node(1).stats().bounced, 1u);
  EXPECT_EQ(c->node(0).stats().forwards_bounced, 1u);
  EXPECT_EQ(c->node(0).stats().forward_failures, 0u);  // a bounce is not a failure
  EXPECT_EQ(c->node(0).stats().forwarded_out + c->node(0).stats().served_local, 1u);
  for (uint64_t i = 0; i < 20; ++i) EXPECT_TRUE(rec.by_id[100 + i].complete);
}

// Both holders of a prefix turn busy at once, while A's view of them is still idle: A forwards to
// one, which bounces it, then to the other, which bounces it too (NodeOptions::max_bounces; with
// one bounce the second forward had to be served however long its queue), then to a free member.
TEST(NodeTest, EveryBusyHolderBouncesInTurnAndAFreeMemberServes) {
  auto c = MakeCluster("hearsay", 4);
  Recorder rec;
  c->node(1).Submit(Req(1, Prompt(17, 2048, 1, 40), true), &rec);
  c->node(2).Submit(Req(2, Prompt(17, 2048, 2, 40), true), &rec);
  c->scheduler().RunFor(FromSeconds(2));
  ASSERT_GT(c->node(0).EstimatePeerCachedTokens("n1", Prompt(17, 2048, 3, 40)), 1500u);
  ASSERT_GT(c->node(0).EstimatePeerCachedTokens("n2", Prompt(17, 2048, 3, 40)), 1500u);
  for (uint64_t i = 0; i < 20; ++i) {
    c->node(1).Submit(Req(100 + i, Prompt(1000 + uint32_t(i), 4000, 1, 10), true), &rec);
    c->node(2).Submit(Req(200 + i, Prompt(2000 + uint32_t(i), 4000, 1, 10), true), &rec);
  }
  c->node(0).Submit(Req(3, Prompt(17, 2048, 3, 40)), &rec);
  c->scheduler().RunFor(FromSeconds(20));
  EXPECT_TRUE(rec.by_id[3].complete);
  EXPECT_FALSE(rec.by_id[3].error);
  EXPECT_EQ(c->node(0).stats().forwards_bounced, 2u);
  EXPECT_EQ(c->node(1).stats().bounced + c->node(2).stats().bounced, 2u);
  EXPECT_EQ(c->node(0).stats().forward_failures, 0u);
}

TEST(NodeTest, HopMarkerPreventsASecondForward) {
  auto c = MakeCluster("hearsay");
  Recorder rec;
  c->node(1).Submit(Req(1, Prompt(3, 2048, 1, 40), true), &rec);
  c->scheduler().RunFor(FromSeconds(2));
  // A forwarded request entering at C (2) is served at C although B holds its prefix.
  c->node(2).Submit(Req(2, Prompt(3, 2048, 2, 40), true), &rec);
  c->scheduler().RunFor(FromSeconds(2));
  ASSERT_TRUE(rec.by_id[2].complete);
  EXPECT_EQ(c->node(2).stats().forward_attempts, 0u);
  EXPECT_EQ(c->node(2).stats().served, 1u);
  EXPECT_EQ(rec.by_id[2].cached, 0u);
}

TEST(NodeTest, PeerFailingBeforeFirstTokenCostsARetryNotTheRequest) {
  auto c = MakeCluster("hearsay");
  Recorder rec;
  c->node(1).Submit(Req(1, Prompt(5, 2048, 1, 40), true), &rec);
  c->scheduler().RunFor(FromSeconds(2));
  // B crashes; A does not know yet and forwards to it; the forward fails and A retries.
  c->Crash(1);
  c->node(0).Submit(Req(2, Prompt(5, 2048, 2, 40)), &rec);
  c->scheduler().RunFor(FromSeconds(2));
  EXPECT_TRUE(rec.by_id[2].complete);
  EXPECT_FALSE(rec.by_id[2].error);
  EXPECT_EQ(c->node(0).stats().forward_failures, 1u);
}

// A member that stays idle publishes its unchanged load again every load_refresh, so its peers'
// view of it stays as fresh as a busy member's instead of aging into the policy's "unknown".
TEST(NodeTest, AnIdleMembersLoadIsRepublishedSoPeersSeeItFresh) {
  auto c = MakeCluster("hearsay");
  c->scheduler().RunFor(FromSeconds(5));  // idle since the start
  const std::optional<gossip::MemberView> n0 = c->node(1).gossip().Member("n0");
  ASSERT_TRUE(n0.has_value());
  ASSERT_TRUE(n0->has_load);
  EXPECT_LT(c->scheduler().Now() - n0->load_updated, FromMillis(600));
}

// A forward whose first token is late by more than its deadline (NodeOptions::
// forward_deadline_factor × the time the member's claims promised, at least the floor) is given
// up and served elsewhere, and the member's trust record takes it as an answer that late.
TEST(NodeTest, AForwardPastItsFirstTokenDeadlineIsServedElsewhereAndCountsAgainstTheMember) {
  // n0 claims an idle engine and never bounces.
  auto c = MakeCluster("hearsay", 3, /*liars=*/1);
  Recorder rec;
  c->node(0).Submit(Req(1, Prompt(19, 2048, 1, 40), true), &rec);
  c->scheduler().RunFor(FromSeconds(2));
  ASSERT_GT(c->node(1).EstimatePeerCachedTokens("n0", Prompt(19, 2048, 2, 40)), 1500u);
  // Seconds of cold prefill queue at n0, which its gossip does not show.
  for (uint64_t i = 0; i < 40; ++i) {
    c->node(0).Submit(Req(100 + i, Prompt(2000 + uint32_t(i), 4000, 1, 10), true), &rec);
  }
  c->node(1).Submit(Req(2, Prompt(19, 2048, 2, 40)), &rec);
  c->scheduler().RunFor(FromMillis(1500));
  EXPECT_TRUE(rec.by_id[2].first);  // given up at the 1 s floor, not served after the queue
  EXPECT_EQ(c->node(1).stats().forward_failures, 1u);
  EXPECT_EQ(c->node(1).stats().forwarded_out + c->node(1).stats().served_local, 1u);
  const PeerTrustView n0 = c->node(1).trust().Of("n0");
  EXPECT_GE(n0.samples, 1u);
  EXPECT_GT(n0.ttft_ratio, 4.0);
  c->scheduler().RunFor(FromSeconds(10));
  for (uint64_t i = 0; i < 40; ++i) EXPECT_TRUE(rec.by_id[100 + i].complete);
  EXPECT_FALSE(rec.by_id[2].error);
}

// The backlog list n1 publishes, as n2 sees it (empty if n2 has no load from n1 yet).
std::vector<gossip::BacklogEntry> ListedBy(SimCluster& c, const NodeId& reporter) {
  const std::optional<gossip::MemberView> v = c.node(2).gossip().Member(reporter);
  return v && v->has_load ? v->load.backlog : std::vector<gossip::BacklogEntry>{};
}

// A member that claims an idle engine hides the queue its entry nodes built there. An entry node
// whose forward still waits there after the member's next reports lists its work in its own
// (signed) load record, and every peer sees it.
TEST(NodeTest, AnEntryNodeListsItsWorkAtAMemberWhoseReportsLeaveItOut) {
  // n0 claims an idle engine and never bounces.
  auto c = MakeCluster("hearsay", 3, /*liars=*/1);
  Recorder rec;
  c->node(0).Submit(Req(1, Prompt(19, 2048, 1, 40), true), &rec);
  c->scheduler().RunFor(FromSeconds(2));
  for (uint64_t i = 0; i < 40; ++i) {
    c->node(0).Submit(Req(100 + i, Prompt(2000 + uint32_t(i), 4000, 1, 10), true), &rec);
  }
  // n1's clients send prompts n0 claims to hold: their prefills are the work n1 put there.
  for (uint64_t i = 0; i < 10; ++i) {
    c->node(1).Submit(Req(2 + i, Prompt(19, 2048, 2 + uint32_t(i), 8000)), &rec);
  }
  for (int ms = 0; ms < 1000 && ListedBy(*c, "n1").empty(); ++ms) {
    c->scheduler().RunFor(FromMillis(1));
  }
  const std::vector<gossip::BacklogEntry> listed = ListedBy(*c, "n1");
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].member, "n0");
  EXPECT_GE(listed[0].requests, 2u);
  EXPECT_GE(listed[0].work_ms, 64u);
  // Listed while they still wait: n1's own count of its requests there agrees.
  EXPECT_EQ(c->node(1).trust().Unanswered("n0", c->scheduler().Now()).requests, listed[0].requests);
}

// An honest member's reports count every sender's requests: however long its queue, nothing is
// listed at it.
TEST(NodeTest, NothingIsListedAtAnHonestMemberWithAQueue) {
  auto c = MakeCluster("hearsay");
  Recorder rec;
  c->node(0).Submit(Req(1, Prompt(19, 2048, 1, 40), true), &rec);
  c->scheduler().RunFor(FromSeconds(2));
  // The same burst as above, to the honest holder n0: a queue there that its reports show.
  for (uint64_t i = 0; i < 10; ++i) {
    c->node(1).Submit(Req(2 + i, Prompt(19, 2048, 2 + uint32_t(i), 8000)), &rec);
  }
  bool listed = false;
  for (int step = 0; step < 400 && !listed; ++step) {
    c->scheduler().RunFor(FromMillis(5));
    listed = !ListedBy(*c, "n1").empty();
  }
  EXPECT_FALSE(listed);
  EXPECT_GE(c->node(1).stats().forward_attempts, 2u);
  for (uint64_t i = 0; i < 10; ++i) EXPECT_TRUE(rec.by_id[2 + i].complete);
}

// n0 is honest about itself but lists every peer under an hour of work it never sent. Alone, its
// word moves nothing: n1 still forwards to the holder n2. Believed in full, it would keep n1's
// request off the holder.
TEST(NodeTest, ASlandererAloneMovesNoTrafficFromTheMembersItNames) {
  for (size_t trimmed : {size_t{1}, size_t{0}}) {
    SCOPED_TRACE(trimmed);
    auto c = MakeCluster("hearsay", 3, /*liars=*/0, /*slanderers=*/1, trimmed);
    Recorder rec;
    c->node(2).Submit(Req(1, Prompt(21, 2048, 1, 40), true), &rec);
    const auto slandered = [&] {
      const std::optional<gossip::MemberView> v = c->node(1).gossip().Member("n0");
      if (!v || !v->has_load) return false;
      for (const gossip::BacklogEntry& e : v->load.backlog) {
        if (e.member == "n2" && e.work_ms == gossip::kMaxBacklogWorkMs) return true;
      }
      return false;
    };
    const auto held = [&] {
      return c->node(1).EstimatePeerCachedTokens("n2", Prompt(21, 2048, 2, 40)) > 1500u;
    };
    for (int ms = 0; ms < 3000 && !(held() && slandered()); ++ms) {
      c->scheduler().RunFor(FromMillis(1));
    }
    ASSERT_TRUE(slandered());
    ASSERT_TRUE(held());
    const double floor = c->node(1).ReportedBacklog(c->scheduler().Now()).WorkMs("n2");
    c->node(1).Submit(Req(2, Prompt(21, 2048, 2, 40)), &rec);
    for (int ms = 0; ms < 2000 && !rec.by_id[2].complete; ++ms)
      c->scheduler().RunFor(FromMillis(1));
    ASSERT_TRUE(rec.by_id[2].complete);
    if (trimmed == 1) {
      EXPECT_EQ(floor, 0);
      EXPECT_GT(rec.by_id[2].cached, 1500u);  // served by the holder
    } else {
      EXPECT_GT(floor, 1e6);
      EXPECT_LT(rec.by_id[2].cached, 1500u);  // kept off it
    }
  }
}

// A forward to the prefix holder B whose first token has arrived at A, then B crashes.
void CrashHolderMidAnswer(SimCluster& c, Recorder& rec, bool stream) {
  c.node(1).Submit(Req(1, Prompt(15, 2048, 1, 40), true), &rec);
  c.scheduler().RunFor(FromSeconds(2));
  ASSERT_TRUE(rec.by_id[1].complete);
  PeerRequest r = Req(2, Prompt(15, 2048, 2, 40));
  r.max_output_tokens = 400;  // seconds of decoding
  r.stream = stream;
  c.node(0).Submit(std::move(r), &rec);
  for (int i = 0; i < 2000 && !rec.by_id[2].first; ++i) c.scheduler().RunFor(FromMillis(1));
  ASSERT_TRUE(rec.by_id[2].first);
  ASSERT_EQ(c.node(0).stats().forwarded_out, 1u);
  ASSERT_FALSE(rec.by_id[2].complete);
  c.Crash(1);
  c.scheduler().RunFor(FromSeconds(20));
}

TEST(NodeTest, AOneBodyRequestWhosePeerDiesMidAnswerIsServedAgain) {
  auto c = MakeCluster("hearsay");
  Recorder rec;
  CrashHolderMidAnswer(*c, rec, /*stream=*/false);
  EXPECT_TRUE(rec.by_id[2].complete);
  EXPECT_FALSE(rec.by_id[2].error);
  EXPECT_EQ(rec.by_id[2].restarts, 1);
  EXPECT_TRUE(rec.by_id[2].first);
  EXPECT_EQ(c->node(0).stats().forward_failures, 1u);
  EXPECT_EQ(c->node(0).stats().failed, 0u);
  EXPECT_EQ(c->node(0).stats().forwarded_out + c->node(0).stats().served_local, 2u);
}

TEST(NodeTest, AStreamWhosePeerDiesMidAnswerEndsWithAnErrorNamingNoPeer) {
  auto c = MakeCluster("hearsay");
  Recorder rec;
  CrashHolderMidAnswer(*c, rec, /*stream=*/true);
  EXPECT_FALSE(rec.by_id[2].complete);
  EXPECT_TRUE(rec.by_id[2].error);
  EXPECT_EQ(rec.by_id[2].restarts, 0);
  EXPECT_EQ(rec.by_id[2].error_message.find("n1"), std::string::npos) << rec.by_id[2].error_message;
  EXPECT_EQ(c->node(0).stats().failed, 1u);
}

TEST(NodeTest, RestartedPeersOldCacheIsDropped) {
  auto c = MakeCluster("hearsay");
  Recorder rec;
  c->node(1).Submit(Req(1, Prompt(9, 2048, 1, 40), true), &rec);
  c->scheduler().RunFor(FromSeconds(2));
  ASSERT_GT(c->node(0).EstimatePeerCachedTokens("n1", Prompt(9, 2048, 2, 40)), 0u);
  c->Crash(1);
  ASSERT_TRUE(c->Restart(1).ok());
  c->scheduler().RunFor(FromSeconds(5));
  EXPECT_EQ(c->node(0).EstimatePeerCachedTokens("n1", Prompt(9, 2048, 2, 40)), 0u);
  EXPECT_EQ(c->node(0).peer_index().GenerationOf("n1").value_or(0), 2u);
}

TEST(NodeTest, CancelStopsALocalRequestAndAForwardWithoutCallbacks) {
  auto c = MakeCluster("hearsay");
  Recorder rec;
  // Local: a hop request is served here; cancel it before its first token.
  PeerRequest local = Req(1, Prompt(5, 4096, 1, 40), true);
  local.max_output_tokens = 50;
  c->node(2).Submit(std::move(local), &rec);
  EXPECT_TRUE(c->node(2).Cancel(1, &rec));
  EXPECT_FALSE(c->node(2).Cancel(1, &rec));  // no longer live
  c->scheduler().RunFor(FromSeconds(2));
  EXPECT_EQ(rec.by_id.count(1), 0u);
  EXPECT_EQ(c->node(2).stats().cancelled, 1u);
  EXPECT_EQ(c->node(2).stats().served, 0u);

  // Forwarded: B holds the prefix, A forwards; cancelled in flight, A's client hears nothing
  // and A does not retry.
  c->node(1).Submit(Req(2, Prompt(6, 2048, 1, 40), true), &rec);
  c->scheduler().RunFor(FromSeconds(2));
  ASSERT_TRUE(rec.by_id[2].complete);
  c->node(0).Submit(Req(3, Prompt(6, 2048, 2, 40)), &rec);
  EXPECT_EQ(c->node(0).stats().forward_attempts, 1u);
  EXPECT_TRUE(c->node(0).Cancel(3, &rec));
  c->scheduler().RunFor(FromSeconds(2));
  EXPECT_EQ(rec.by_id.count(3), 0u);
  EXPECT_EQ(c->node(0).stats().forward_attempts, 1u);
  EXPECT_EQ(c->node(0).stats().forwarded_out, 0u);
  // A different sink cannot cancel someone else's request.
  Recorder other;
  c->node(0).Submit(Req(4, Prompt(7, 64, 1, 8)), &rec);
  EXPECT_FALSE(c->node(0).Cancel(4, &other));
  c->scheduler().RunFor(FromSeconds(2));
  EXPECT_TRUE(rec.by_id[4].complete);
}

TEST(NodeTest, OutcomeStatsSumEstimatedAndActualCachedTokens) {
  auto c = MakeCluster("hearsay");
  Recorder rec;
  c->node(0).Submit(Req(1, Prompt(8, 512, 1, 8)), &rec);
  c->scheduler().RunFor(FromSeconds(2));
  ASSERT_TRUE(rec.by_id[1].complete);
  const NodeStats& s = c->node(0).stats();
  EXPECT_EQ(s.served_local + s.forwarded_out, 1u);
  EXPECT_EQ(s.actual_cached_tokens, rec.by_id[1].cached);
}

TEST(NodeTest, BadRequestIsRejectedWithoutSideEffects) {
  auto c = MakeCluster("hearsay");
  Recorder rec;
  c->node(0).Submit(Req(1, {}), &rec);
  c->scheduler().RunFor(FromMillis(10));
  EXPECT_TRUE(rec.by_id[1].error);
  EXPECT_EQ(c->node(0).stats().rejected, 1u);
  EXPECT_EQ(c->node(0).stats().forward_attempts, 0u);
}

// Keeps every decision record.
struct RecordLog final : DecisionRecorder {
  std::vector<RouteRecord> routes;
  std::vector<ServeRecord> serves;
  void OnRoute(const RouteRecord& r) override { routes.push_back(r); }
  void OnServe(const ServeRecord& r) override { serves.push_back(r); }
};

TEST(NodeTest, DecisionRecordsTellTheBounceThePricesAndWhatTheEngineDid) {
  auto c = MakeCluster("hearsay");
  RecordLog log;
  for (int i = 0; i < c->size(); ++i) c->node(i).SetRecorder(&log);
  Recorder rec;
  c->node(1).Submit(Req(1, Prompt(13, 2048, 1, 40), true), &rec);
  c->scheduler().RunFor(FromSeconds(2));
  for (uint64_t i = 0; i < 20; ++i) {
    c->node(1).Submit(Req(100 + i, Prompt(1000 + uint32_t(i), 4000, 1, 10), true), &rec);
  }
  c->node(0).Submit(Req(2, Prompt(13, 2048, 2, 40)), &rec);
  c->scheduler().RunFor(FromSeconds(10));
  ASSERT_TRUE(rec.by_id[2].complete);

  // One route record: the client request at n0, forwarded to the holder n1, bounced, then
  // served elsewhere (at n0 itself or the other peer).
  ASSERT_EQ(log.routes.size(), 1u);
  const RouteRecord& r = log.routes[0];
  EXPECT_EQ(r.entry, "n0");
  EXPECT_EQ(r.request, 2u);
  EXPECT_EQ(r.policy, "hearsay");
  EXPECT_EQ(r.prompt_tokens, 2088u);
  ASSERT_EQ(r.attempts.size(), 2u);
  EXPECT_EQ(r.attempts[0].chosen, "n1");
  EXPECT_EQ(r.attempts[0].result, "bounced");
  EXPECT_EQ(r.attempts[1].result, "served");
  EXPECT_NE(r.attempts[1].chosen, "n1");
  EXPECT_EQ(r.served_by, r.attempts[1].chosen);
  ASSERT_EQ(r.attempts[0].candidates.size(), 3u);
  for (const CandidateRecord& cand : r.attempts[0].candidates) {
    ASSERT_TRUE(cand.priced) << cand.node;
    EXPECT_NEAR(
        cand.price.cost_ms,
        cand.price.delay_ms + cand.price.wait_ms + cand.price.prefill_ms + cand.price.work_ms,
        1e-6);
    if (cand.node == "n1") {
      EXPECT_GT(cand.cached_tokens, 1500u);
      EXPECT_NEAR(cand.price.cost_ms, r.attempts[0].expected_ttft_ms, 1e-6);
    }
  }
  EXPECT_GT(r.ttft_ms, 0);
  EXPECT_GE(r.e2e_ms, r.ttft_ms);
  EXPECT_TRUE(r.error.empty());

  // Serve records: n1 bounced request 2 of n0, and the node that served it says how long its
  // engine queued and prefilled it; n1's own 21 requests are there too.
  int bounced = 0;
  int served_for_n0 = 0;
  for (const ServeRecord& s : log.serves) {
    if (s.entry != "n0") continue;
    EXPECT_EQ(s.request, 2u);
    EXPECT_EQ(s.forwarded, s.node != "n0");
    if (s.bounced) {
      ++bounced;
      EXPECT_EQ(s.node, "n1");
      EXPECT_GT(s.own_estimate_ms, s.bounce_above_ms);
    } else {
      ++served_for_n0;
      EXPECT_EQ(s.node, r.served_by);
      EXPECT_EQ(s.cached_tokens, r.cached_tokens);
      EXPECT_GE(s.queued_ms, 0);
      EXPECT_GT(s.prefill_ms, 0);
      EXPECT_LE(s.queued_ms + s.prefill_ms, r.ttft_ms);
    }
  }
  EXPECT_EQ(bounced, 1);
  EXPECT_EQ(served_for_n0, 1);
  EXPECT_EQ(log.serves.size(), 23u);

  // A client request the holder serves itself: its route record has the engine's cached tokens.
  c->node(1).Submit(Req(3, Prompt(13, 2048, 3, 40)), &rec);
  c->scheduler().RunFor(FromSeconds(2));
  ASSERT_EQ(log.routes.size(), 2u);
  EXPECT_EQ(log.routes[1].served_by, "n1");
  EXPECT_EQ(log.routes[1].cached_tokens, rec.by_id[3].cached);
  EXPECT_GT(log.routes[1].cached_tokens, 1500u);

  // A prefix only n1 holds, then a sibling from n0: forwarded to n1 with a bounce allowed, and
  // served there; its serve record says what n1 expected on arrival, within what n0 asked.
  c->node(1).Submit(Req(4, Prompt(14, 2048, 1, 40), true), &rec);
  c->scheduler().RunFor(FromSeconds(2));
  c->node(0).Submit(Req(5, Prompt(14, 2048, 2, 40)), &rec);
  c->scheduler().RunFor(FromSeconds(2));
  ASSERT_EQ(log.routes.size(), 3u);
  ASSERT_EQ(log.routes[2].served_by, "n1");
  const ServeRecord& served = log.serves.back();
  EXPECT_EQ(served.entry, "n0");
  EXPECT_TRUE(served.forwarded);
  EXPECT_FALSE(served.bounced);
  EXPECT_GT(served.bounce_above_ms, 0);
  EXPECT_GT(served.own_estimate_ms, 0);
  EXPECT_LE(served.own_estimate_ms, served.bounce_above_ms + 1);
}

// Both holders of the prefix crash unseen: the entry's two forwards fail, and it serves the
// request itself. Its route record has three attempts, the last one its own (found on the test
// bed: the record named the last failed peer as the one that served).
TEST(NodeTest, DecisionRecordsTellAServeHereAfterTheLastForwardFailed) {
  auto c = MakeCluster("hearsay");
  RecordLog log;
  c->node(0).SetRecorder(&log);
  Recorder rec;
  c->node(1).Submit(Req(1, Prompt(17, 2048, 1, 40), true), &rec);
  c->node(2).Submit(Req(2, Prompt(17, 2048, 2, 40), true), &rec);
  c->scheduler().RunFor(FromSeconds(2));
  ASSERT_TRUE(rec.by_id[1].complete && rec.by_id[2].complete);
  c->Crash(1);
  c->Crash(2);
  c->node(0).Submit(Req(3, Prompt(17, 2048, 3, 40)), &rec);
  c->scheduler().RunFor(FromSeconds(2));
  ASSERT_TRUE(rec.by_id[3].complete);
  ASSERT_EQ(c->node(0).stats().forward_failures, 2u);
  ASSERT_EQ(log.routes.size(), 1u);
  const RouteRecord& r = log.routes[0];
  ASSERT_EQ(r.attempts.size(), 3u);
  EXPECT_EQ(r.attempts[0].result, "failed");
  EXPECT_EQ(r.attempts[1].result, "failed");
  EXPECT_NE(r.attempts[0].chosen, "n0");
  EXPECT_NE(r.attempts[1].chosen, "n0");
  EXPECT_EQ(r.attempts[2].chosen, "n0");
  EXPECT_EQ(r.attempts[2].result, "served");
  EXPECT_EQ(r.served_by, "n0");
}

}  // namespace
}  // namespace hearsay::node
