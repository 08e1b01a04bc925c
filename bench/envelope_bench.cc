#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <vector>

#include "hearsay/gossip/envelope.h"

namespace hearsay::gossip {
namespace {

ClusterKey BenchKey() {
  std::array<uint8_t, kClusterKeyBytes> bytes;
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(7 * i + 1);
  return ClusterKey::FromBytes(bytes).value();
}

Channel ChannelFor(size_t bytes) { return bytes > 1300 ? Channel::kStream : Channel::kDatagram; }

void BM_EnvelopeSeal(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  Keyring ring(BenchKey());
  Sealer sealer = Sealer::Create("bench", "gpu-07", 1, &ring).value();
  const std::vector<uint8_t> body(n, 0x42);
  for (auto _ : state) benchmark::DoNotOptimize(sealer.Seal(ChannelFor(n), body).value());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}
BENCHMARK(BM_EnvelopeSeal)->Arg(64)->Arg(1300)->Arg(64 << 10)->Arg(1 << 20);

void BM_EnvelopeOpen(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  Keyring ring(BenchKey());
  Sealer sealer = Sealer::Create("bench", "gpu-07", 1, &ring).value();
  const std::vector<uint8_t> body(n, 0x42);
  std::vector<std::vector<uint8_t>> sealed;
  const size_t count = std::max<size_t>(1, std::min<size_t>(1000, (size_t{64} << 20) / n));
  for (size_t k = 0; k < count; ++k) sealed.push_back(sealer.Seal(ChannelFor(n), body).value());
  Opener opener = Opener::Create("bench", &ring).value();
  size_t i = 0;
  for (auto _ : state) {
    // A fresh opener after each pass, so each Open is a first delivery.
    if (i == sealed.size()) {
      state.PauseTiming();
      opener = Opener::Create("bench", &ring).value();
      i = 0;
      state.ResumeTiming();
    }
    benchmark::DoNotOptimize(opener.Open(ChannelFor(n), sealed[i++]).value());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}
BENCHMARK(BM_EnvelopeOpen)->Arg(64)->Arg(1300)->Arg(64 << 10)->Arg(1 << 20);

void BM_EnvelopeOpenReplayed(benchmark::State& state) {
  Keyring ring(BenchKey());
  Sealer sealer = Sealer::Create("bench", "gpu-07", 1, &ring).value();
  const auto sealed = sealer.Seal(Channel::kDatagram, std::vector<uint8_t>(1300, 1)).value();
  Opener opener = Opener::Create("bench", &ring).value();
  (void)opener.Open(Channel::kDatagram, sealed);
  for (auto _ : state) benchmark::DoNotOptimize(opener.Open(Channel::kDatagram, sealed).ok());
}
BENCHMARK(BM_EnvelopeOpenReplayed);

}  // namespace
}  // namespace hearsay::gossip
