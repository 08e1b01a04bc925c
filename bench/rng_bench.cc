#include <benchmark/benchmark.h>

#include "hearsay/env/rng.h"

namespace hearsay {
namespace {

void BM_RngNextU64(benchmark::State& state) {
  Rng rng(1);
  for (auto _ : state) benchmark::DoNotOptimize(rng.NextU64());
}
BENCHMARK(BM_RngNextU64);

void BM_ZipfSample(benchmark::State& state) {
  Rng rng(1);
  ZipfSampler zipf(static_cast<size_t>(state.range(0)), 1.0);
  for (auto _ : state) benchmark::DoNotOptimize(zipf.Sample(rng));
}
BENCHMARK(BM_ZipfSample)->Arg(57)->Arg(100000);

}  // namespace
}  // namespace hearsay
