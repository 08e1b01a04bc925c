#include "hearsay/route/sent_ledger.h"

#include <gtest/gtest.h>

#include <vector>

#include "hearsay/env/rng.h"
#include "hearsay/route/route_test_util.h"

namespace hearsay::route {
namespace {

using testing::At;

constexpr Duration kLongHorizon = std::chrono::seconds(100);

TEST(SentLedger, CountsOnlySendsTheReportCannotShow) {
  SentLedger ledger;
  ledger.Record(3, At(0), 100);
  ledger.Record(3, At(10), 200);
  ledger.Record(3, At(20), 400);
  // Report 5 ms old from a member 2 ms away at now = 22: it shows sends up to t = 15.
  auto p = ledger.Unreported(3, At(22), FromMillis(5), FromMillis(2), kLongHorizon);
  EXPECT_EQ(p.requests, 1u);
  EXPECT_EQ(p.tokens, 400u);
  // A fresher report absorbs them all; a staler one shows none of them.
  EXPECT_EQ(ledger.Unreported(3, At(30), Duration::zero(), FromMillis(2), kLongHorizon).requests,
            0u);
  EXPECT_EQ(ledger.Unreported(3, At(30), FromMillis(100), FromMillis(2), kLongHorizon).requests,
            3u);
  // Other slots, and slots never seen, have nothing pending.
  EXPECT_EQ(ledger.Unreported(4, At(30), FromMillis(100), {}, kLongHorizon).requests, 0u);
  EXPECT_EQ(ledger.Unreported(999, At(30), FromMillis(100), {}, kLongHorizon).requests, 0u);
}

TEST(SentLedger, AgeZeroCountsRequestsInFlight) {
  SentLedger ledger;
  ledger.Record(1, At(0), 10);
  ledger.Record(1, At(9), 10);
  // With an exact view (age 0), only what is still on the wire (sent < 5 ms ago) is missing.
  EXPECT_EQ(ledger.Unreported(1, At(10), {}, FromMillis(5), kLongHorizon).requests, 1u);
}

TEST(SentLedger, HorizonForgetsOldSendsAndResetClears) {
  SentLedger ledger;
  ledger.Record(1, At(0), 10);
  ledger.Record(1, At(900), 10);
  EXPECT_EQ(ledger.Unreported(1, At(1000), std::chrono::seconds(60), {}, FromMillis(500)).requests,
            1u);
  ledger.Reset(1);
  EXPECT_EQ(ledger.Unreported(1, At(1000), std::chrono::seconds(60), {}, kLongHorizon).requests,
            0u);
}

TEST(SentLedger, AForgottenSendCountsForNothing) {
  SentLedger ledger;
  ledger.Record(2, At(0), 1000, 70, /*request_id=*/11);
  ledger.Record(2, At(10), 500, 30, /*request_id=*/12);
  auto p = ledger.Unreported(2, At(20), FromMillis(500), {}, kLongHorizon);
  EXPECT_EQ(p.requests, 2u);
  EXPECT_NEAR(p.backlog_ms, 80.0, 1e-6);  // 70 + 30 - 20 ms drained
  // The member refused request 11: only 12 is left, whose 30 ms drain from its own arrival.
  ledger.Forget(2, 11);
  p = ledger.Unreported(2, At(20), FromMillis(500), {}, kLongHorizon);
  EXPECT_EQ(p.requests, 1u);
  EXPECT_EQ(p.tokens, 500u);
  EXPECT_NEAR(p.backlog_ms, 20.0, 1e-6);
  // Unknown ids, id 0 and other slots are no-ops.
  ledger.Forget(2, 99);
  ledger.Forget(2, 0);
  ledger.Forget(7, 12);
  EXPECT_EQ(ledger.Unreported(2, At(20), FromMillis(500), {}, kLongHorizon).requests, 1u);
}

TEST(SentLedger, BacklogDrainsAsTimePasses) {
  SentLedger ledger;
  ledger.Record(2, At(0), 1000, 70);
  // At arrival of a request sent at t=20 with 1 ms one-way delay, 70 - 20 ms are left.
  auto p = ledger.Unreported(2, At(20), FromMillis(500), FromMillis(1), kLongHorizon);
  EXPECT_NEAR(p.backlog_ms, 50.0, 1e-6);
  ledger.Record(2, At(20), 100, 10);
  p = ledger.Unreported(2, At(40), FromMillis(500), FromMillis(1), kLongHorizon);
  EXPECT_NEAR(p.backlog_ms, 70 + 10 - 40, 1e-6);
  // An idle gap is not banked: work sent after the member went idle starts from zero.
  ledger.Record(2, At(200), 100, 5);
  p = ledger.Unreported(2, At(201), FromMillis(500), FromMillis(1), kLongHorizon);
  EXPECT_NEAR(p.backlog_ms, 4.0, 1e-6);
}

// Property: matches a naive list of every send, over many seeds (within the ring's memory).
TEST(SentLedger, MatchesNaiveModel) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    Rng rng(seed);
    SentLedger ledger;
    struct Send {
      Slot slot;
      double at_ms;
      uint32_t tokens;
    };
    std::vector<Send> sends;
    double t = 0;
    for (int i = 0; i < 40; ++i) {
      t += rng.Uniform(0, 20);
      const Send s{static_cast<Slot>(rng.Below(3)), t, static_cast<uint32_t>(rng.Below(5000))};
      sends.push_back(s);
      ledger.Record(s.slot, At(s.at_ms), s.tokens);
      const Slot q = static_cast<Slot>(rng.Below(3));
      const double age = rng.Uniform(0, 200), delay = rng.Uniform(0, 30);
      const double horizon = rng.Uniform(50, 1000);
      uint32_t want_n = 0;
      uint64_t want_tokens = 0;
      for (const Send& x : sends) {
        if (x.slot == q && At(x.at_ms) > At(t) - FromMillis(age) - FromMillis(delay) &&
            At(x.at_ms) > At(t) - FromMillis(horizon)) {
          ++want_n;
          want_tokens += x.tokens;
        }
      }
      const auto got =
          ledger.Unreported(q, At(t), FromMillis(age), FromMillis(delay), FromMillis(horizon));
      ASSERT_EQ(got.requests, want_n) << "seed " << seed << " step " << i;
      ASSERT_EQ(got.tokens, want_tokens) << "seed " << seed << " step " << i;
    }
  }
}

}  // namespace
}  // namespace hearsay::route
