// Same seed, same run: a seeded many-node scenario with every fault the network models (loss,
// duplication, reordering, jitter, bandwidth queues, oversize datagrams, partitions set and healed
// mid-run, a crash and a restart) is run twice and must produce the same trace, byte for byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hearsay/common/bytes.h"
#include "hearsay/env/rng.h"
#include "hearsay/simenv/sim_hash.h"
#include "hearsay/simenv/sim_network.h"
#include "hearsay/simenv/virtual_scheduler.h"

namespace hearsay::sim {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kNodes = 20;

Address Name(int i) {
  Address name = "n";
  name += std::to_string(i);  // Not "n" + ...: GCC 12 warns falsely (-Wrestrict) on that.
  return name;
}

// One scenario node: random chatter on its own timers, and replies to some of what it hears.
class ChattyNode : public MessageSink {
 public:
  ChattyNode(int index, simenv::VirtualScheduler& sched, Rng rng, ByteWriter& log)
      : index_(index), sched_(sched), timers_(sched), rng_(rng), log_(log) {}

  void Start(Transport* transport) {
    transport_ = transport;
    ScheduleTick();
  }

  void OnMessage(const Address& from, Channel channel, std::span<const uint8_t> payload) override {
    // The full observable history, for a byte-for-byte comparison across runs.
    log_.PutVarint(static_cast<uint64_t>(sched_.Now().time_since_epoch().count()));
    log_.PutVarint(static_cast<uint64_t>(index_));
    log_.PutString(from);
    log_.PutU8(static_cast<uint8_t>(channel));
    log_.PutVarint(payload.size());
    log_.PutU64(simenv::HashBytes(payload));
    if (rng_.Bernoulli(0.3)) {
      std::vector<uint8_t> reply(payload.begin(), payload.end());
      reply.push_back(static_cast<uint8_t>(index_));
      transport_->Send(from, channel, std::move(reply));
    }
  }

 private:
  void ScheduleTick() {
    timers_.RunAfter(FromMillis(rng_.Exponential(20.0)), [this] {
      SendRandom();
      ScheduleTick();
    });
  }

  void SendRandom() {
    int to = static_cast<int>(rng_.Below(kNodes - 1));
    if (to >= index_) ++to;
    const bool stream = rng_.Bernoulli(0.2);
    // Mostly small datagrams; a few over the limit; streams up to 8 KB.
    size_t size = static_cast<size_t>(rng_.UniformInt(1, 300));
    if (rng_.Bernoulli(0.02)) size = 1500;
    if (stream) size = static_cast<size_t>(rng_.UniformInt(1, 8192));
    std::vector<uint8_t> payload(size);
    for (size_t i = 0; i < size; i += 8) {
      const uint64_t r = rng_.NextU64();
      for (size_t j = i; j < std::min(size, i + 8); ++j)
        payload[j] = static_cast<uint8_t>(r >> (8 * (j - i)));
    }
    transport_->Send(Name(to), stream ? Channel::kStream : Channel::kDatagram, std::move(payload));
  }

  int index_;
  simenv::VirtualScheduler& sched_;
  simenv::ScopedScheduler timers_;
  Rng rng_;
  ByteWriter& log_;
  Transport* transport_ = nullptr;
};

struct Outcome {
  uint64_t trace_hash = 0;
  uint64_t events_run = 0;
  std::vector<uint8_t> log;
  simenv::NodeCounters totals;
  simenv::NodeCounters crashed;
};

Outcome RunScenario(uint64_t seed) {
  Rng root(seed);
  simenv::VirtualScheduler sched;
  simenv::SimNetwork::Options options;
  options.seed = root.NextU64();
  options.defaults.latency = simenv::LatencyModel::LogNormal(milliseconds(2), milliseconds(3), 0.8);
  options.defaults.loss = 0.05;
  options.defaults.duplicate = 0.03;
  options.defaults.reorder = 0.1;
  options.defaults.reorder_window = milliseconds(10);
  simenv::SimNetwork net(sched, options);
  ByteWriter log;

  std::vector<std::unique_ptr<ChattyNode>> nodes(kNodes);
  auto start = [&](int i) {
    nodes[i] = std::make_unique<ChattyNode>(i, sched, root.Fork(), log);
    auto transport = net.Attach(Name(i), nodes[i].get());
    HEARSAY_CHECK(transport.ok());
    nodes[i]->Start(*transport);
  };
  for (int i = 0; i < kNodes; ++i) start(i);
  // A slow uplink and a slow, jittery link.
  EXPECT_TRUE(net.SetEgressBandwidth(Name(3), 200e3).ok());
  simenv::LinkFaults slow = options.defaults;
  slow.latency = simenv::LatencyModel::Normal(milliseconds(40), milliseconds(15));
  slow.bandwidth_bytes_per_sec = 50e3;
  EXPECT_TRUE(net.SetLinkFaults(Name(7), Name(8), slow).ok());

  std::vector<Address> left;
  std::vector<Address> right;
  for (int i = 0; i < kNodes; ++i) (i < kNodes / 2 ? left : right).push_back(Name(i));
  sched.RunAfter(seconds(2), [&] { net.Partition({left, right}); });
  sched.RunAfter(milliseconds(3500), [&] { net.BlockLink(Name(1), Name(2)); });
  sched.RunAfter(seconds(4), [&] { net.HealAll(); });
  sched.RunAfter(seconds(5), [&] {
    EXPECT_TRUE(net.Crash(Name(5)).ok());
    nodes[5].reset();  // Its timers go with it.
  });
  sched.RunAfter(seconds(6), [&] { start(5); });
  sched.RunAfter(seconds(7), [&] {
    simenv::LinkFaults worse = options.defaults;
    worse.loss = 0.2;
    EXPECT_TRUE(net.SetDefaultFaults(worse).ok());
    net.BlockPair(Name(0), Name(9));
  });
  sched.RunAfter(seconds(8), [&] {
    net.ClearAllLinkFaults();
    net.HealPair(Name(0), Name(9));
  });
  sched.RunUntil(TimePoint(seconds(10)));

  Outcome out;
  out.trace_hash = sched.trace_hash();
  out.events_run = sched.events_run();
  out.log = log.Take();
  out.totals = net.TotalCounters();
  out.crashed = net.Counters(Name(5));
  return out;
}

TEST(DeterminismTest, SameSeedGivesTheSameTraceByteForByte) {
  const Outcome a = RunScenario(12345);
  const Outcome b = RunScenario(12345);
  EXPECT_EQ(a.trace_hash, b.trace_hash);
  EXPECT_EQ(a.events_run, b.events_run);
  EXPECT_EQ(a.log, b.log);
  EXPECT_EQ(a.totals.messages_sent, b.totals.messages_sent);
  EXPECT_EQ(a.totals.messages_received, b.totals.messages_received);
  EXPECT_EQ(a.totals.dropped, b.totals.dropped);

  // The scenario really exercised every fault, so the equality above means something.
  EXPECT_GT(a.totals.messages_received, 5000u);
  EXPECT_GT(a.totals.duplicated, 0u);
  for (size_t r = 0; r < simenv::kNumDropReasons; ++r) {
    EXPECT_GT(a.totals.dropped[r], 0u)
        << simenv::DropReasonName(static_cast<simenv::DropReason>(r));
  }
  EXPECT_GT(a.crashed.messages_received, 0u);
}

TEST(DeterminismTest, DifferentSeedsGiveDifferentTraces) {
  const Outcome a = RunScenario(1);
  const Outcome b = RunScenario(2);
  EXPECT_NE(a.trace_hash, b.trace_hash);
  EXPECT_NE(a.log, b.log);
}

TEST(DeterminismTest, ReproducibleOverSeveralSeeds) {
  for (uint64_t seed : {7, 2026}) {
    SCOPED_TRACE(seed);
    EXPECT_EQ(RunScenario(seed).trace_hash, RunScenario(seed).trace_hash);
  }
}

}  // namespace
}  // namespace hearsay::sim
