#include "hearsay/simenv/sim_network.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hearsay::simenv::sim_network_test {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;

struct Received {
  TimePoint at;
  Address from;
  Channel channel;
  std::vector<uint8_t> payload;
};

class RecordingSink : public MessageSink {
 public:
  explicit RecordingSink(const VirtualScheduler& clock) : clock_(clock) {}
  void OnMessage(const Address& from, Channel channel, std::span<const uint8_t> payload) override {
    got.push_back({clock_.Now(), from, channel, {payload.begin(), payload.end()}});
  }
  std::vector<Received> got;

 private:
  const VirtualScheduler& clock_;
};

std::vector<uint8_t> Bytes(size_t n, uint8_t fill = 0xab) { return std::vector<uint8_t>(n, fill); }

std::vector<uint8_t> Seq(uint32_t i) {
  return {static_cast<uint8_t>(i), static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i >> 16),
          static_cast<uint8_t>(i >> 24)};
}
uint32_t SeqOf(const std::vector<uint8_t>& p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

TimePoint At(Duration d) { return TimePoint(d); }

// LinkFaults with one edit (designated initializers trip -Wmissing-field-initializers).
LinkFaults Faults(void (*edit)(LinkFaults&)) {
  LinkFaults f;
  edit(f);
  return f;
}

// A network of named nodes, each with a recording sink.
class NetworkTest : public ::testing::Test {
 protected:
  void Make(SimNetwork::Options options, std::vector<Address> names = {"a", "b", "c", "d"}) {
    net_ = std::make_unique<SimNetwork>(sched_, options);
    for (const Address& name : names) {
      sinks_[name] = std::make_unique<RecordingSink>(sched_);
      auto t = net_->Attach(name, sinks_[name].get());
      ASSERT_TRUE(t.ok()) << t.status().ToString();
      ep_[name] = *t;
    }
  }
  static SimNetwork::Options Fixed(Duration latency) {
    SimNetwork::Options o;
    o.defaults.latency = LatencyModel::Fixed(latency);
    return o;
  }
  std::vector<Received>& got(const Address& a) { return sinks_[a]->got; }

  VirtualScheduler sched_;
  std::unique_ptr<SimNetwork> net_;
  std::map<Address, std::unique_ptr<RecordingSink>> sinks_;
  std::map<Address, Transport*> ep_;
};

TEST_F(NetworkTest, FixedLatencyIsApplied) {
  Make(Fixed(milliseconds(5)));
  ep_["a"]->Send("b", Channel::kDatagram, {1, 2, 3});
  sched_.RunFor(milliseconds(2));
  ep_["a"]->Send("b", Channel::kStream, {4});
  EXPECT_EQ(net_->in_flight(), 2u);
  sched_.RunUntilIdle();
  ASSERT_EQ(got("b").size(), 2u);
  EXPECT_EQ(got("b")[0].at, At(milliseconds(5)));
  EXPECT_EQ(got("b")[0].from, "a");
  EXPECT_EQ(got("b")[0].channel, Channel::kDatagram);
  EXPECT_EQ(got("b")[0].payload, (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_EQ(got("b")[1].at, At(milliseconds(7)));
  EXPECT_EQ(got("b")[1].channel, Channel::kStream);
  EXPECT_EQ(net_->in_flight(), 0u);
  EXPECT_TRUE(got("a").empty());
  const NodeCounters a = net_->Counters("a");
  const NodeCounters b = net_->Counters("b");
  EXPECT_EQ(a.messages_sent, 2u);
  EXPECT_EQ(a.bytes_sent, 4u);
  EXPECT_EQ(b.messages_received, 2u);
  EXPECT_EQ(b.bytes_received, 4u);
  EXPECT_EQ(a.dropped_total(), 0u);
}

TEST_F(NetworkTest, PerLinkLatencyOverridesDefaultAndCanBeCleared) {
  Make(Fixed(milliseconds(5)));
  ASSERT_TRUE(net_->SetLinkFaults("a", "b", Faults([](LinkFaults& f) {
                                    f.latency = LatencyModel::Fixed(milliseconds(50));
                                  }))
                  .ok());
  ep_["a"]->Send("b", Channel::kDatagram, {1});
  ep_["b"]->Send("a", Channel::kDatagram, {2});  // The reverse direction keeps the default.
  ep_["a"]->Send("c", Channel::kDatagram, {3});
  sched_.RunUntilIdle();
  EXPECT_EQ(got("b").at(0).at, At(milliseconds(50)));
  EXPECT_EQ(got("a").at(0).at, At(milliseconds(5)));
  EXPECT_EQ(got("c").at(0).at, At(milliseconds(5)));
  net_->ClearLinkFaults("a", "b");
  ep_["a"]->Send("b", Channel::kDatagram, {1});
  sched_.RunUntilIdle();
  EXPECT_EQ(got("b").at(1).at, At(milliseconds(55)));
}

TEST_F(NetworkTest, UniformLatencyStaysInRangeAndAveragesMidpoint) {
  SimNetwork::Options o;
  o.defaults.latency = LatencyModel::Uniform(milliseconds(2), milliseconds(4));
  Make(o);
  const int n = 4000;
  std::vector<double> sent_at;
  for (int i = 0; i < n; ++i) {
    sched_.RunAfter(milliseconds(10 * i),
                    [&, i] { ep_["a"]->Send("b", Channel::kDatagram, Seq(i)); });
  }
  sched_.RunUntilIdle();
  ASSERT_EQ(got("b").size(), static_cast<size_t>(n));
  double sum = 0;
  for (const Received& r : got("b")) {
    const double latency_ms =
        ToMillis(r.at.time_since_epoch()) - 10.0 * static_cast<double>(SeqOf(r.payload));
    EXPECT_GE(latency_ms, 2.0);
    EXPECT_LT(latency_ms, 4.0);
    sum += latency_ms;
  }
  EXPECT_NEAR(sum / n, 3.0, 0.05);
}

TEST(LatencyModelTest, DistributionsHaveTheirShape) {
  Rng rng(7);
  const int n = 20000;
  // Normal, truncated at zero.
  LatencyModel normal = LatencyModel::Normal(milliseconds(10), milliseconds(2));
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    const Duration d = normal.Sample(rng);
    EXPECT_GE(d, Duration::zero());
    sum += ToMillis(d);
  }
  EXPECT_NEAR(sum / n, 10.0, 0.1);
  LatencyModel wide = LatencyModel::Normal(milliseconds(1), milliseconds(5));
  for (int i = 0; i < 1000; ++i) EXPECT_GE(wide.Sample(rng), Duration::zero());
  // LogNormal: floor plus jitter with the given median.
  LatencyModel lognormal = LatencyModel::LogNormal(milliseconds(3), milliseconds(2), 1.0);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) {
    const Duration d = lognormal.Sample(rng);
    EXPECT_GE(d, milliseconds(3));
    v.push_back(ToMillis(d));
  }
  std::nth_element(v.begin(), v.begin() + n / 2, v.end());
  EXPECT_NEAR(v[n / 2], 5.0, 0.1);
  EXPECT_EQ(LatencyModel::Fixed(milliseconds(4)).Sample(rng), milliseconds(4));
}

TEST(LatencyModelTest, ValidationRejectsBadValues) {
  EXPECT_TRUE(LinkFaults{}.Validate().ok());
  EXPECT_FALSE(Faults([](LinkFaults& f) { f.loss = 1.5; }).Validate().ok());
  EXPECT_FALSE(Faults([](LinkFaults& f) { f.loss = std::nan(""); }).Validate().ok());
  EXPECT_FALSE(Faults([](LinkFaults& f) { f.duplicate = -0.1; }).Validate().ok());
  EXPECT_FALSE(Faults([](LinkFaults& f) { f.reorder = 2; }).Validate().ok());
  EXPECT_FALSE(Faults([](LinkFaults& f) { f.reorder_window = milliseconds(-1); }).Validate().ok());
  EXPECT_FALSE(Faults([](LinkFaults& f) { f.bandwidth_bytes_per_sec = -5; }).Validate().ok());
  EXPECT_FALSE(Faults([](LinkFaults& f) { f.latency = LatencyModel::Fixed(milliseconds(-1)); })
                   .Validate()
                   .ok());
  EXPECT_FALSE(Faults([](LinkFaults& f) {
                 f.latency = LatencyModel::Uniform(milliseconds(5), milliseconds(1));
               })
                   .Validate()
                   .ok());
  VirtualScheduler s;
  SimNetwork net(s, {});
  EXPECT_EQ(net.SetDefaultFaults(Faults([](LinkFaults& f) { f.loss = 3; })).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(net.SetLinkFaults("a", "b", Faults([](LinkFaults& f) { f.loss = -1; })).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(net.SetEgressBandwidth("a", -1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(net.default_faults().loss, 0);
}

TEST_F(NetworkTest, LossRateIsStatisticallyRight) {
  SimNetwork::Options o = Fixed(milliseconds(1));
  o.defaults.loss = 0.3;
  Make(o);
  const int n = 20000;
  for (int i = 0; i < n; ++i) ep_["a"]->Send("b", Channel::kDatagram, Seq(i));
  sched_.RunUntilIdle();
  const double delivered = static_cast<double>(got("b").size()) / n;
  // sd = sqrt(0.21 / 20000) ~ 0.0032; allow 5 sd.
  EXPECT_NEAR(delivered, 0.7, 0.016);
  const NodeCounters a = net_->Counters("a");
  EXPECT_EQ(a.messages_sent, static_cast<uint64_t>(n));
  EXPECT_EQ(a.dropped_by(DropReason::kLoss) + got("b").size(), static_cast<uint64_t>(n));
  EXPECT_EQ(a.dropped_total(), a.dropped_by(DropReason::kLoss));
}

TEST_F(NetworkTest, DuplicationDeliversSomeMessagesTwice) {
  SimNetwork::Options o = Fixed(milliseconds(1));
  o.defaults.duplicate = 0.25;
  Make(o);
  const int n = 10000;
  for (int i = 0; i < n; ++i) ep_["a"]->Send("b", Channel::kDatagram, Seq(i));
  sched_.RunUntilIdle();
  std::map<uint32_t, int> copies;
  for (const Received& r : got("b")) ++copies[SeqOf(r.payload)];
  EXPECT_EQ(copies.size(), static_cast<size_t>(n));  // No loss: every message at least once.
  int twice = 0;
  for (auto& [seq, count] : copies) {
    EXPECT_LE(count, 2);
    if (count == 2) ++twice;
  }
  EXPECT_NEAR(static_cast<double>(twice) / n, 0.25, 0.022);  // 5 sd
  EXPECT_EQ(net_->Counters("a").duplicated, static_cast<uint64_t>(twice));
  EXPECT_EQ(net_->Counters("b").messages_received, static_cast<uint64_t>(n + twice));
}

TEST_F(NetworkTest, NoDuplicatesWhenDisabled) {
  Make(Fixed(milliseconds(1)));
  for (int i = 0; i < 1000; ++i) ep_["a"]->Send("b", Channel::kDatagram, Seq(i));
  sched_.RunUntilIdle();
  EXPECT_EQ(got("b").size(), 1000u);
  EXPECT_EQ(net_->Counters("a").duplicated, 0u);
}

int CountInversions(const std::vector<Received>& got) {
  int inversions = 0;
  for (size_t i = 1; i < got.size(); ++i) {
    if (SeqOf(got[i].payload) < SeqOf(got[i - 1].payload)) ++inversions;
  }
  return inversions;
}

TEST_F(NetworkTest, JitterAloneNeverReordersALink) {
  SimNetwork::Options o;
  o.defaults.latency = LatencyModel::Uniform(milliseconds(1), milliseconds(50));
  o.defaults.duplicate = 0.1;
  Make(o);
  for (int i = 0; i < 2000; ++i) {
    sched_.RunAfter(microseconds(100 * i), [&, i] {
      ep_["a"]->Send("b", Channel::kDatagram, Seq(i));
      ep_["a"]->Send("c", Channel::kStream, Seq(i));
    });
  }
  sched_.RunUntilIdle();
  EXPECT_GE(got("b").size(), 2000u);
  EXPECT_EQ(CountInversions(got("b")), 0);
  EXPECT_EQ(CountInversions(got("c")), 0);
}

TEST_F(NetworkTest, ReorderingOccursWhenEnabled) {
  SimNetwork::Options o = Fixed(milliseconds(5));
  o.defaults.reorder = 0.2;
  o.defaults.reorder_window = milliseconds(20);
  Make(o);
  for (int i = 0; i < 2000; ++i) {
    sched_.RunAfter(microseconds(500 * i),
                    [&, i] { ep_["a"]->Send("b", Channel::kDatagram, Seq(i)); });
  }
  sched_.RunUntilIdle();
  ASSERT_EQ(got("b").size(), 2000u);  // Reordering loses nothing.
  EXPECT_GT(CountInversions(got("b")), 100);
  // A held-back message is late by at most the window.
  for (const Received& r : got("b")) {
    const double late_ms =
        ToMillis(r.at.time_since_epoch()) - 0.5 * static_cast<double>(SeqOf(r.payload)) - 5.0;
    EXPECT_GE(late_ms, -1e-6);
    EXPECT_LT(late_ms, 20.0);
  }
}

TEST_F(NetworkTest, SymmetricPartitionBlocksAndHealsWhileRunning) {
  Make(Fixed(milliseconds(1)));
  // a and b ping each other, and a pings c, every 10 ms for 1 s; the a-b pair is cut from 300 ms
  // to 600 ms by tasks running in the middle of the traffic.
  for (int i = 0; i < 100; ++i) {
    sched_.RunAfter(milliseconds(10 * i), [&, i] {
      ep_["a"]->Send("b", Channel::kDatagram, Seq(i));
      ep_["b"]->Send("a", Channel::kDatagram, Seq(i));
      ep_["a"]->Send("c", Channel::kDatagram, Seq(i));
    });
  }
  sched_.RunAfter(milliseconds(295), [&] { net_->BlockPair("a", "b"); });
  sched_.RunAfter(milliseconds(595), [&] { net_->HealPair("a", "b"); });
  sched_.RunUntil(At(milliseconds(400)));
  EXPECT_TRUE(net_->IsBlocked("a", "b"));
  EXPECT_TRUE(net_->IsBlocked("b", "a"));
  EXPECT_FALSE(net_->IsBlocked("a", "c"));
  sched_.RunUntilIdle();
  EXPECT_FALSE(net_->IsBlocked("a", "b"));
  for (const char* to : {"a", "b"}) {
    std::vector<uint32_t> seqs;
    for (const Received& r : got(to)) seqs.push_back(SeqOf(r.payload));
    EXPECT_EQ(seqs.size(), 70u) << to;
    for (uint32_t s : seqs) EXPECT_TRUE(s < 30 || s >= 60) << to << " got " << s;
  }
  EXPECT_EQ(got("c").size(), 100u);
  EXPECT_EQ(net_->Counters("a").dropped_by(DropReason::kPartition), 30u);
  EXPECT_EQ(net_->Counters("b").dropped_by(DropReason::kPartition), 30u);
}

TEST_F(NetworkTest, OneWayPartitionBlocksOnlyOneDirection) {
  Make(Fixed(milliseconds(1)));
  net_->BlockLink("a", "b");
  ep_["a"]->Send("b", Channel::kDatagram, {1});
  ep_["a"]->Send("b", Channel::kStream, {1});
  ep_["b"]->Send("a", Channel::kDatagram, {2});
  sched_.RunUntilIdle();
  EXPECT_TRUE(got("b").empty());
  EXPECT_EQ(got("a").size(), 1u);
  EXPECT_EQ(net_->Counters("a").dropped_by(DropReason::kPartition), 2u);
  net_->HealLink("a", "b");
  ep_["a"]->Send("b", Channel::kDatagram, {1});
  sched_.RunUntilIdle();
  EXPECT_EQ(got("b").size(), 1u);
}

TEST_F(NetworkTest, GroupPartitionSplitsAndHealAllRestores) {
  Make(Fixed(milliseconds(1)), {"a", "b", "c", "d", "e"});
  net_->Partition({{"a", "b"}, {"c", "d"}});
  auto all_pairs = [&] {
    for (const char* x : {"a", "b", "c", "d", "e"}) {
      for (const char* y : {"a", "b", "c", "d", "e"}) {
        if (std::string_view(x) != y)
          ep_[x]->Send(y, Channel::kDatagram, {static_cast<uint8_t>(x[0])});
      }
    }
    sched_.RunUntilIdle();
  };
  all_pairs();
  auto senders = [&](const Address& to) {
    std::string s;
    for (const Received& r : got(to)) s += r.from;
    std::sort(s.begin(), s.end());
    got(to).clear();
    return s;
  };
  EXPECT_EQ(senders("a"), "be");
  EXPECT_EQ(senders("b"), "ae");
  EXPECT_EQ(senders("c"), "de");
  EXPECT_EQ(senders("d"), "ce");
  EXPECT_EQ(senders("e"), "abcd");  // In no group: unaffected.
  net_->HealAll();
  all_pairs();
  EXPECT_EQ(senders("a"), "bcde");
  EXPECT_EQ(senders("c"), "abde");
}

TEST_F(NetworkTest, PartitionCanPrecedeAJoin) {
  Make(Fixed(milliseconds(1)), {"a"});
  net_->BlockPair("a", "late");
  EXPECT_FALSE(net_->IsUp("late"));
  EXPECT_EQ(net_->Endpoint("late"), nullptr);
  RecordingSink late(sched_);
  auto t = net_->Attach("late", &late);
  ASSERT_TRUE(t.ok());
  ep_["a"]->Send("late", Channel::kDatagram, {1});
  (*t)->Send("a", Channel::kDatagram, {1});
  sched_.RunUntilIdle();
  EXPECT_TRUE(late.got.empty());
  EXPECT_TRUE(got("a").empty());
}

TEST_F(NetworkTest, EgressBandwidthQueuesLargeMessagesProportionally) {
  SimNetwork::Options o = Fixed(milliseconds(10));
  o.egress_bytes_per_sec = 1e6;  // 1 MB/s: 1000 bytes take 1 ms.
  Make(o);
  ep_["a"]->Send("b", Channel::kStream, Bytes(100000));  // 100 ms on the wire
  ep_["a"]->Send("c", Channel::kStream, Bytes(1000));    // queued behind it: +1 ms
  ep_["a"]->Send("b", Channel::kStream, Bytes(200000));  // +200 ms
  ep_["d"]->Send("b", Channel::kStream, Bytes(1000));    // another node's egress is its own
  sched_.RunUntilIdle();
  ASSERT_EQ(got("b").size(), 3u);
  ASSERT_EQ(got("c").size(), 1u);
  EXPECT_EQ(got("b")[0].at, At(milliseconds(11)));  // d's small message
  EXPECT_EQ(got("b")[1].at, At(milliseconds(110)));
  EXPECT_EQ(got("c")[0].at, At(milliseconds(111)));
  EXPECT_EQ(got("b")[2].at, At(milliseconds(311)));
  // Once the queue drains, a message pays only its own serialization.
  sched_.RunFor(seconds(1));
  const TimePoint start = sched_.Now();
  ep_["a"]->Send("b", Channel::kStream, Bytes(5000));
  sched_.RunUntilIdle();
  EXPECT_EQ(got("b")[3].at, start + milliseconds(15));
}

TEST_F(NetworkTest, PerNodeAndPerLinkBandwidthCombine) {
  Make(Fixed(milliseconds(0)));
  ASSERT_TRUE(net_->SetEgressBandwidth("a", 1e6).ok());
  ASSERT_TRUE(net_->SetLinkFaults("a", "b", Faults([](LinkFaults& f) {
                                    f.latency = LatencyModel::Fixed(Duration::zero());
                                    f.bandwidth_bytes_per_sec = 1e5;
                                  }))
                  .ok());
  ep_["a"]->Send("b", Channel::kStream, Bytes(1000));  // egress 1 ms, then link 10 ms
  ep_["a"]->Send("c", Channel::kStream, Bytes(1000));  // egress only: waits 1 ms, takes 1 ms
  ep_["a"]->Send("b", Channel::kStream, Bytes(1000));  // egress done at 3 ms; link free at 11 ms
  ep_["b"]->Send("a", Channel::kStream, Bytes(1000));  // b is unlimited
  sched_.RunUntilIdle();
  ASSERT_EQ(got("b").size(), 2u);
  EXPECT_EQ(got("b")[0].at, At(milliseconds(11)));
  EXPECT_EQ(got("b")[1].at, At(milliseconds(21)));
  EXPECT_EQ(got("c").at(0).at, At(milliseconds(2)));
  EXPECT_EQ(got("a").at(0).at, At(milliseconds(0)));
}

TEST_F(NetworkTest, DatagramSizeLimit) {
  Make(Fixed(milliseconds(1)));
  EXPECT_EQ(ep_["a"]->MaxDatagramBytes(), 1400u);
  ep_["a"]->Send("b", Channel::kDatagram, Bytes(1400));
  ep_["a"]->Send("b", Channel::kDatagram, Bytes(1401));
  ep_["a"]->Send("b", Channel::kStream, Bytes(1 << 20));
  sched_.RunUntilIdle();
  ASSERT_EQ(got("b").size(), 2u);
  EXPECT_EQ(got("b")[0].payload.size(), 1400u);
  EXPECT_EQ(got("b")[1].payload.size(), 1u << 20);
  EXPECT_EQ(net_->Counters("a").dropped_by(DropReason::kOversize), 1u);
  net_->set_max_datagram_bytes(100);
  EXPECT_EQ(ep_["a"]->MaxDatagramBytes(), 100u);
  ep_["a"]->Send("b", Channel::kDatagram, Bytes(101));
  sched_.RunUntilIdle();
  EXPECT_EQ(net_->Counters("a").dropped_by(DropReason::kOversize), 2u);
}

TEST_F(NetworkTest, AttachErrors) {
  Make(Fixed(milliseconds(1)));
  EXPECT_EQ(net_->Attach("x", nullptr).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(net_->Attach("a", sinks_["b"].get()).status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(net_->Crash("nobody").code(), StatusCode::kNotFound);
  EXPECT_EQ(net_->Restart("nobody", sinks_["a"].get()).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(net_->Restart("a", sinks_["a"].get()).status().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(net_->Crash("a").ok());
  EXPECT_EQ(net_->Crash("a").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(net_->Endpoint("a"), ep_["a"]);
  EXPECT_EQ(net_->Endpoint("nobody"), nullptr);
}

TEST_F(NetworkTest, SendToUnknownOrDownNodeIsDropped) {
  Make(Fixed(milliseconds(1)));
  ep_["a"]->Send("nobody", Channel::kDatagram, {1});
  ASSERT_TRUE(net_->Crash("b").ok());
  ep_["a"]->Send("b", Channel::kDatagram, {1});
  sched_.RunUntilIdle();
  EXPECT_EQ(net_->Counters("a").dropped_by(DropReason::kDown), 2u);
  EXPECT_EQ(net_->in_flight(), 0u);
}

// A node as a host would build one: its own timers on a ScopedScheduler, and a sink.
struct TestNode {
  explicit TestNode(VirtualScheduler& s) : timers(s), sink(s) {}
  ScopedScheduler timers;
  RecordingSink sink;
};

TEST_F(NetworkTest, CrashDropsInFlightMessagesAndTimersAndRestartWorks) {
  Make(Fixed(milliseconds(10)), {"a"});
  auto b = std::make_unique<TestNode>(sched_);
  auto tb = net_->Attach("b", &b->sink);
  ASSERT_TRUE(tb.ok());
  Transport* b_ep = *tb;
  int b_ticks = 0;
  b->timers.RunAfter(milliseconds(8), [&] { ++b_ticks; });
  b->timers.RunAfter(milliseconds(20), [&] { ++b_ticks; });

  ep_["a"]->Send("b", Channel::kDatagram, {1});  // arrives at 10 ms: b crashes at 5 ms
  b_ep->Send("a", Channel::kDatagram, {2});      // from b, in flight at the crash
  sched_.RunUntil(At(milliseconds(5)));
  ASSERT_TRUE(net_->Crash("b").ok());
  EXPECT_EQ(b->timers.CancelAll(), 2u);  // The host's part of a crash.
  EXPECT_FALSE(net_->IsUp("b"));
  b_ep->Send("a", Channel::kDatagram, {3});  // A dead node's leftover code: dropped.
  ep_["a"]->Send("b", Channel::kDatagram, {4});
  sched_.RunUntil(At(milliseconds(7)));

  // Restart before the old messages would have arrived: they still must not.
  auto b2 = std::make_unique<TestNode>(sched_);
  auto tb2 = net_->Restart("b", &b2->sink);
  ASSERT_TRUE(tb2.ok());
  EXPECT_EQ(*tb2, b_ep);
  sched_.RunUntil(At(milliseconds(30)));
  EXPECT_TRUE(b->sink.got.empty());
  EXPECT_TRUE(b2->sink.got.empty());
  EXPECT_TRUE(got("a").empty());
  EXPECT_EQ(b_ticks, 0);
  // Two in flight at the crash, one sent to it while down, one sent by it while down.
  EXPECT_EQ(net_->Counters("a").dropped_by(DropReason::kDown), 2u);
  EXPECT_EQ(net_->Counters("b").dropped_by(DropReason::kDown), 2u);

  ep_["a"]->Send("b", Channel::kDatagram, {5});
  b_ep->Send("a", Channel::kDatagram, {6});
  sched_.RunUntilIdle();
  ASSERT_EQ(b2->sink.got.size(), 1u);
  EXPECT_EQ(b2->sink.got[0].payload, (std::vector<uint8_t>{5}));
  ASSERT_EQ(got("a").size(), 1u);
  EXPECT_EQ(got("a")[0].payload, (std::vector<uint8_t>{6}));
}

TEST_F(NetworkTest, DeadCopiesDoNotHoldBackTheNextIncarnation) {
  Make(Fixed(milliseconds(1)));
  LinkFaults slow;
  slow.latency = LatencyModel::Fixed(milliseconds(100));
  ASSERT_TRUE(net_->SetLinkFaults("a", "b", slow).ok());
  ep_["a"]->Send("b", Channel::kDatagram, {1});  // Due at 100 ms; b crashes before.
  sched_.RunUntil(At(milliseconds(10)));
  ASSERT_TRUE(net_->Crash("b").ok());
  ASSERT_TRUE(net_->Restart("b", sinks_["b"].get()).ok());
  net_->ClearLinkFaults("a", "b");
  ep_["a"]->Send("b", Channel::kDatagram, {2});
  sched_.RunUntilIdle();
  ASSERT_EQ(got("b").size(), 1u);
  EXPECT_EQ(got("b")[0].payload, (std::vector<uint8_t>{2}));
  EXPECT_EQ(got("b")[0].at, At(milliseconds(11)));
}

TEST_F(NetworkTest, CrashFromInsideOwnHandlerAndSendFromHandler) {
  Make(Fixed(milliseconds(1)), {"a"});
  // b echoes every message back, then crashes itself on the third.
  struct EchoCrash : MessageSink {
    SimNetwork* net;
    Transport* self = nullptr;
    int n = 0;
    void OnMessage(const Address& from, Channel ch, std::span<const uint8_t> p) override {
      self->Send(from, ch, {p.begin(), p.end()});
      if (++n == 3) net->Crash("b").IgnoreError();
    }
  } echo;
  echo.net = net_.get();
  echo.self = *net_->Attach("b", &echo);
  for (int i = 0; i < 5; ++i) {
    sched_.RunAfter(milliseconds(10 * i),
                    [&, i] { ep_["a"]->Send("b", Channel::kDatagram, Seq(i)); });
  }
  sched_.RunUntilIdle();
  EXPECT_EQ(echo.n, 3);
  // Echo 2 was sent just before the crash, so it is in flight from a crashed node: dropped.
  // Messages 3 and 4 find b down.
  ASSERT_EQ(got("a").size(), 2u);
  EXPECT_EQ(SeqOf(got("a")[1].payload), 1u);
  EXPECT_EQ(net_->Counters("b").dropped_by(DropReason::kDown), 1u);
  EXPECT_EQ(net_->Counters("a").dropped_by(DropReason::kDown), 2u);
}

TEST_F(NetworkTest, DestroyingTheNetworkCancelsItsDeliveries) {
  Make(Fixed(milliseconds(1)));
  ep_["a"]->Send("b", Channel::kDatagram, {1});
  EXPECT_EQ(sched_.pending(), 1u);
  net_.reset();
  EXPECT_EQ(sched_.pending(), 0u);
  sched_.RunUntilIdle();
  EXPECT_TRUE(got("b").empty());
}

TEST_F(NetworkTest, DeliveriesAreFoldedIntoTheTraceHash) {
  auto run = [](uint8_t payload_byte, Channel ch) {
    VirtualScheduler s;
    SimNetwork net(s, Fixed(milliseconds(1)));
    RecordingSink a(s);
    RecordingSink b(s);
    Transport* ta = *net.Attach("a", &a);
    (void)*net.Attach("b", &b);
    ta->Send("b", ch, {1, 2, payload_byte});
    s.RunUntilIdle();
    return s.trace_hash();
  };
  EXPECT_EQ(run(3, Channel::kDatagram), run(3, Channel::kDatagram));
  EXPECT_NE(run(3, Channel::kDatagram), run(4, Channel::kDatagram));
  EXPECT_NE(run(3, Channel::kDatagram), run(3, Channel::kStream));
}

}  // namespace
}  // namespace hearsay::simenv::sim_network_test
