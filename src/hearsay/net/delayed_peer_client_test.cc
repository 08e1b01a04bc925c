// DelayedPeerClient in virtual time: forwards reach the inner client only after the delay, a
// cancel while held ends the forward without the inner client, and zero delay passes through.
#include "hearsay/net/delayed_peer_client.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
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

// Keeps the sink of each forward, to answer it.
struct AnsweringClient final : PeerClient {
  void Forward(const Address&, PeerRequest request, ResponseSink* sink) override {
    sinks.push_back({request.id, sink});
  }
  void Cancel(uint64_t id) override { cancelled.push_back(id); }
  std::vector<std::pair<uint64_t, ResponseSink*>> sinks;
  std::vector<uint64_t> cancelled;
};

// Every event with its time.
struct EventSink final : ResponseSink {
  explicit EventSink(const Clock& clock) : clock(clock) {}
  void OnFirstToken(uint64_t id, const PeerFirstToken&) override { Add("first", id); }
  void OnOutput(uint64_t id, const PeerOutput& output) override {
    Add("output", id);
    texts.emplace_back(output.text);
  }
  void OnComplete(uint64_t id, const PeerUsage&) override { Add("complete", id); }
  void OnError(uint64_t id, const Status&, bool) override { Add("error", id); }
  void Add(std::string what, uint64_t id) { events.push_back({std::move(what), id, clock.Now()}); }
  struct Event {
    std::string what;
    uint64_t id;
    TimePoint at;
  };
  const Clock& clock;
  std::vector<Event> events;
  std::vector<std::string> texts;
};

// The answer comes back as late as the forward went out (netem on the peer's egress would hold
// it as long), in its order.
TEST(DelayedPeerClientTest, HoldsTheAnswersEventsForTheDelayInOrder) {
  simenv::VirtualScheduler scheduler;
  AnsweringClient inner;
  DelayedPeerClient client(inner, scheduler);
  EventSink sink(scheduler.clock());
  client.set_delay(FromMillis(5));
  client.Forward("peer:1", Request(1), &sink);
  scheduler.RunFor(FromMillis(5));
  ASSERT_EQ(inner.sinks.size(), 1u);
  EXPECT_EQ(client.answering(), 1u);
  ResponseSink* answer = inner.sinks[0].second;
  EXPECT_NE(answer, &sink);
  answer->OnFirstToken(1, PeerFirstToken{});
  scheduler.RunFor(FromMillis(1));
  {
    // The inner client's buffer is reused at once: the held output is a copy.
    std::string buffer = "Hello";
    answer->OnOutput(1, PeerOutput{{}, buffer});
    buffer.assign("XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX");
  }
  answer->OnComplete(1, PeerUsage{});
  scheduler.RunFor(FromMillis(4));
  ASSERT_EQ(sink.events.size(), 1u);
  EXPECT_EQ(sink.events[0].what, "first");
  EXPECT_EQ(sink.events[0].at, TimePoint{} + FromMillis(10));
  scheduler.RunFor(FromMillis(2));
  ASSERT_EQ(sink.events.size(), 3u);
  EXPECT_EQ(sink.events[1].what, "output");
  EXPECT_EQ(sink.texts, std::vector<std::string>{"Hello"});
  EXPECT_EQ(sink.events[2].what, "complete");
  EXPECT_EQ(sink.events[2].at, TimePoint{} + FromMillis(11));
  EXPECT_EQ(client.answering(), 0u);
}

// After a cancel, the events still held and the rest never reach the sink; the answer's own end
// frees its state.
TEST(DelayedPeerClientTest, ACancelDropsTheAnswersHeldEvents) {
  simenv::VirtualScheduler scheduler;
  AnsweringClient inner;
  DelayedPeerClient client(inner, scheduler);
  EventSink sink(scheduler.clock());
  client.set_delay(FromMillis(5));
  client.Forward("peer:1", Request(4), &sink);
  scheduler.RunFor(FromMillis(5));
  ASSERT_EQ(inner.sinks.size(), 1u);
  ResponseSink* answer = inner.sinks[0].second;
  answer->OnFirstToken(4, PeerFirstToken{});
  client.Cancel(4);
  EXPECT_EQ(inner.cancelled, std::vector<uint64_t>{4});
  answer->OnError(4, AbortedError("cancelled"), false);
  scheduler.RunFor(FromMillis(10));
  EXPECT_TRUE(sink.events.empty());
  EXPECT_EQ(client.answering(), 0u);
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
