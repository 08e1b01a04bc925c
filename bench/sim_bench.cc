// Per-event cost of the virtual-time host: the scheduler alone, and a message through SimNetwork.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hearsay/env/rng.h"
#include "hearsay/sim/sim_run.h"
#include "hearsay/simenv/sim_network.h"
#include "hearsay/simenv/virtual_scheduler.h"

namespace hearsay::sim {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// Steady state with range(0) timers pending: each iteration runs one event, whose task schedules
// a replacement at a random delay (one heap pop, one push, one std::function call).
void BM_SchedulerEvents(benchmark::State& state) {
  simenv::VirtualScheduler sched;
  Rng rng(1);
  struct Rearm {
    simenv::VirtualScheduler* sched;
    Rng* rng;
    void operator()() const { sched->RunAfter(Duration(1 + rng->Below(1000000)), *this); }
  };
  for (int64_t i = 0; i < state.range(0); ++i) {
    sched.RunAfter(Duration(1 + rng.Below(1000000)), Rearm{&sched, &rng});
  }
  for (auto _ : state) sched.Step();
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.counters["pending"] = static_cast<double>(sched.pending());
}
BENCHMARK(BM_SchedulerEvents)->Arg(16)->Arg(1024)->Arg(65536);

// The lease pattern: cancel a pending timer and schedule its replacement (no event runs).
void BM_SchedulerCancelRearm(benchmark::State& state) {
  simenv::VirtualScheduler sched;
  std::vector<TimerId> ids;
  for (int i = 0; i < 1024; ++i) ids.push_back(sched.RunAfter(milliseconds(100 + i), [] {}));
  size_t i = 0;
  for (auto _ : state) {
    sched.Cancel(ids[i]);
    ids[i] = sched.RunAfter(milliseconds(100), [] {});
    i = (i + 1) % ids.size();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_SchedulerCancelRearm);

class CountingSink : public MessageSink {
 public:
  void OnMessage(const Address&, Channel, std::span<const uint8_t> payload) override {
    bytes += payload.size();
  }
  uint64_t bytes = 0;
};

// 32 nodes; each iteration sends one 64-byte datagram (payload allocation included) to a random
// other node and runs deliveries until at most 256 messages are in flight. range(0) = 0: fixed
// latency, no faults; 1: lognormal latency, 1% loss, 1% duplication, 5% reordering.
void BM_NetworkDeliver(benchmark::State& state) {
  constexpr int kNodes = 32;
  simenv::VirtualScheduler sched;
  simenv::SimNetwork::Options options;
  options.defaults.latency = simenv::LatencyModel::Fixed(milliseconds(1));
  if (state.range(0) == 1) {
    options.defaults.latency =
        simenv::LatencyModel::LogNormal(microseconds(200), microseconds(500), 0.5);
    options.defaults.loss = 0.01;
    options.defaults.duplicate = 0.01;
    options.defaults.reorder = 0.05;
    options.defaults.reorder_window = milliseconds(1);
  }
  simenv::SimNetwork net(sched, options);
  std::vector<CountingSink> sinks(kNodes);
  std::vector<Transport*> endpoints;
  std::vector<Address> names;
  for (int i = 0; i < kNodes; ++i) {
    names.push_back("node-" + std::to_string(100 + i));
    endpoints.push_back(*net.Attach(names.back(), &sinks[i]));
  }
  Rng rng(2);
  auto send_one = [&] {
    const size_t from = rng.Below(kNodes);
    const size_t to = (from + 1 + rng.Below(kNodes - 1)) % kNodes;
    endpoints[from]->Send(names[to], Channel::kDatagram, std::vector<uint8_t>(64, 7));
  };
  for (auto _ : state) {
    send_one();
    while (net.in_flight() > 256) sched.Step();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.counters["in_flight"] = static_cast<double>(net.in_flight());
  const simenv::NodeCounters totals = net.TotalCounters();
  state.counters["delivered_per_sent"] =
      static_cast<double>(totals.messages_received) / static_cast<double>(totals.messages_sent);
}
BENCHMARK(BM_NetworkDeliver)->Arg(0)->Arg(1);

// A whole `hearsay sim` run: N nodes (Arg), MMLU-like, `hearsay` policy, real gossip between
// the nodes, 3,000 requests per iteration. items_per_second is simulated requests per CPU-second
// including start-up and warm-up (the goal is 1 M per wall-minute = 16.7k/s at N = 32; start-up
// and warm-up are ~23% of a run this short, so the 100k-request command in docs/benchmarks.md,
// "Simulator speed", is the figure to quote, and this one is for comparing builds).
void BM_SimRun(benchmark::State& state) {
  SimConfig c;
  c.nodes = static_cast<int>(state.range(0));
  c.requests = 3000;
  c.seed = 1;
  uint64_t requests = 0;
  for (auto _ : state) {
    Result<SimSummary> s = RunSim(c);
    if (!s.ok()) {
      state.SkipWithError(s.status().ToString().c_str());
      return;
    }
    requests += s->requests;
    benchmark::DoNotOptimize(s->mean_ttft_ms);
  }
  state.SetItemsProcessed(static_cast<int64_t>(requests));
}
BENCHMARK(BM_SimRun)->Arg(8)->Arg(32)->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace
}  // namespace hearsay::sim
