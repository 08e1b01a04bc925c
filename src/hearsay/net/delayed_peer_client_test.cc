// DelayedPeerClient in virtual time: forwards reach the inner client only after the delay, a
// cancel while held ends the forward without the inner client, and zero delay passes through.
#include "hearsay/net/delayed_peer_client.h"

#include <gtest/gtest.h>

#include <vector>

#include "hearsay/simenv/virtual_scheduler.h"

namespace hearsay::net {
namespace {

// Records the forwards it is given, and their times.
struct RecordingClient final : PeerClient {
  explicit RecordingClient(const Clock& clock) : clock(clock) {}
  void Forward(const Address& to, PeerRequest request, ResponseSink*) override {
    forwarded.push_back({to, request.id, clock.Now()});
  }
  void Cancel(uint64_t id) override { cancelled.push_back(id); }
  void Abort(uint64_t id, const Status&) override { aborted.push_back(id); }
  struct Sent {
    Address to;
    uint64_t id;
    TimePoint at;
  };
  const Clock& clock;
  std::vector<Sent> forwarded;
  std::vector<uint64_t> cancelled;
  std::vector<uint64_t> aborted;
};

struct ErrorSink final : ResponseSink {
  void OnFirstToken(uint64_t, const PeerFirstToken&) override {}
  void OnComplete(uint64_t, const PeerUsage&) override {}
  void OnError(uint64_t id, const Status& s, bool before) override {
    errors.push_back({id, s.code(), before});
  }
  struct Error {
    uint64_t id;
    StatusCode code;
    bool before;
  };
  std::vector<Error> errors;
};

PeerRequest Request(uint64_t id) {
  PeerRequest r;
  r.id = id;
  return r;
}

TEST(DelayedPeerClientTest, HoldsEachForwardForTheDelay) {
  simenv::VirtualScheduler scheduler;
  RecordingClient inner(scheduler.clock());
  DelayedPeerClient client(inner, scheduler);
  ErrorSink sink;
  client.set_delay(FromMillis(5));
  client.Forward("peer:1", Request(1), &sink);
  scheduler.RunFor(FromMillis(4));
  EXPECT_TRUE(inner.forwarded.empty());
  EXPECT_EQ(client.held(), 1u);
  scheduler.RunFor(FromMillis(2));
  ASSERT_EQ(inner.forwarded.size(), 1u);
  EXPECT_EQ(inner.forwarded[0].to, "peer:1");
  EXPECT_EQ(inner.forwarded[0].at, TimePoint{} + FromMillis(5));
  EXPECT_EQ(client.held(), 0u);
  EXPECT_TRUE(sink.errors.empty());
}

TEST(DelayedPeerClientTest, ACancelWhileHeldEndsTheForwardWithoutTheInnerClient) {
  simenv::VirtualScheduler scheduler;
  RecordingClient inner(scheduler.clock());
  DelayedPeerClient client(inner, scheduler);
  ErrorSink sink;
  client.set_delay(FromMillis(5));
  client.Forward("peer:1", Request(7), &sink);
  client.Cancel(7);
  EXPECT_TRUE(sink.errors.empty());  // posted, never inside Cancel
  scheduler.RunFor(FromMillis(10));
  EXPECT_TRUE(inner.forwarded.empty());
  EXPECT_TRUE(inner.cancelled.empty());
  ASSERT_EQ(sink.errors.size(), 1u);
  EXPECT_EQ(sink.errors[0].code, StatusCode::kAborted);
  EXPECT_TRUE(sink.errors[0].before);
  // Once handed on, a cancel goes to the inner client.
  client.Forward("peer:1", Request(8), &sink);
  scheduler.RunFor(FromMillis(10));
  client.Cancel(8);
  EXPECT_EQ(inner.cancelled, std::vector<uint64_t>{8});
}

TEST(DelayedPeerClientTest, AnAbortEndsAHeldForwardWithItsStatusOrGoesToTheInnerClient) {
  simenv::VirtualScheduler scheduler;
  RecordingClient inner(scheduler.clock());
  DelayedPeerClient client(inner, scheduler);
  ErrorSink sink;
  client.set_delay(FromMillis(5));
  client.Forward("peer:1", Request(7), &sink);
  client.Abort(7, UnavailableError("member dead"));
  EXPECT_TRUE(sink.errors.empty());  // posted, never inside Abort
  scheduler.RunFor(FromMillis(10));
  EXPECT_TRUE(inner.forwarded.empty());
  ASSERT_EQ(sink.errors.size(), 1u);
  EXPECT_EQ(sink.errors[0].code, StatusCode::kUnavailable);
  EXPECT_TRUE(sink.errors[0].before);
  client.Forward("peer:1", Request(8), &sink);
  scheduler.RunFor(FromMillis(10));
  client.Abort(8, UnavailableError("member dead"));
  EXPECT_EQ(inner.aborted, std::vector<uint64_t>{8});
}

TEST(DelayedPeerClientTest, ZeroDelayPassesStraightThrough) {
  simenv::VirtualScheduler scheduler;
  RecordingClient inner(scheduler.clock());
  DelayedPeerClient client(inner, scheduler);
  ErrorSink sink;
  client.Forward("peer:2", Request(3), &sink);
  ASSERT_EQ(inner.forwarded.size(), 1u);
  EXPECT_EQ(inner.forwarded[0].id, 3u);
}

}  // namespace
}  // namespace hearsay::net
