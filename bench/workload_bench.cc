// Workload generation speed: how fast the simulator can pull requests.
//   BM_MmluNext     MMLU-like requests generated (items/s = requests/s).
//   BM_TraceLoad    parse the bundled Mooncake trace (data/, 3,993 requests, 1.1 MB) from memory.
//   BM_TraceReplay  materialize one trace request's prompt (mean 15.3k tokens) on Next().
// The trace benchmarks read data/mooncake-synthetic.jsonl (workload::BundledTracePath()) and
// report an error if it is absent.
#include <benchmark/benchmark.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "hearsay/workload/bundled_trace.h"
#include "hearsay/workload/mmlu_workload.h"
#include "hearsay/workload/trace_workload.h"

namespace hearsay::workload {
namespace {

std::string ReadBundledTrace() {
  std::ifstream in(workload::BundledTracePath(), std::ios::binary);
  if (!in) return "";
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void BM_MmluNext(benchmark::State& state) {
  MmluOptions options;
  options.num_requests = UINT64_MAX;
  options.variants = 4;
  options.popularity = MmluPopularity::kZipf;
  Result<MmluWorkload> w = MmluWorkload::Create(options, Rng(1));
  if (!w.ok()) {
    state.SkipWithError(w.status().ToString().c_str());
    return;
  }
  uint64_t tokens = 0;
  for (auto _ : state) {
    std::optional<Request> r = w->Next();
    tokens += r->prompt.size();
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["tokens/req"] =
      benchmark::Counter(static_cast<double>(tokens) / static_cast<double>(state.iterations()));
}
BENCHMARK(BM_MmluNext);

void BM_TraceLoad(benchmark::State& state) {
  const std::string text = ReadBundledTrace();
  if (text.empty()) {
    state.SkipWithError("bundled trace (data/) not found");
    return;
  }
  for (auto _ : state) {
    Result<Trace> trace = Trace::Parse(text, {});
    if (!trace.ok()) {
      state.SkipWithError(trace.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(trace->size());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.SetItemsProcessed(state.iterations() * 3993);
}
BENCHMARK(BM_TraceLoad)->Unit(benchmark::kMillisecond);

void BM_TraceReplay(benchmark::State& state) {
  const std::string text = ReadBundledTrace();
  Result<Trace> parsed = Trace::Parse(text, {});
  if (text.empty() || !parsed.ok()) {
    state.SkipWithError("bundled trace (data/) not found or invalid");
    return;
  }
  auto trace = std::make_shared<const Trace>(std::move(parsed).value());
  std::optional<TraceWorkload> w(TraceWorkload::Create(trace, {}, Rng(1)).value());
  uint64_t tokens = 0;
  for (auto _ : state) {
    std::optional<Request> r = w->Next();
    if (!r.has_value()) {  // Wrap around at the end of the trace.
      state.PauseTiming();
      w.emplace(TraceWorkload::Create(trace, {}, Rng(1)).value());
      state.ResumeTiming();
      r = w->Next();
    }
    tokens += r->prompt.size();
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_TraceReplay);

}  // namespace
}  // namespace hearsay::workload
