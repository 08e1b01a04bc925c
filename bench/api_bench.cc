// The API layer's per-request and per-token costs: tokenizing, parsing a request body, rendering
// and decoding one streamed chunk (the forwarding path does both per token), SSE parsing, metrics.
#include <benchmark/benchmark.h>

#include <string>

#include "hearsay/api/hostile_json_test_util.h"
#include "hearsay/api/metrics.h"
#include "hearsay/api/openai_request.h"
#include "hearsay/api/openai_response.h"
#include "hearsay/api/request_budget.h"
#include "hearsay/api/sse_parser.h"
#include "hearsay/api/stream_event_scanner.h"
#include "hearsay/api/tokenizer.h"

namespace hearsay::api {
namespace {

std::string SampleText(size_t bytes) {
  std::string text;
  while (text.size() < bytes) {
    text.append("The quick brown fox jumps over the lazy dog, 42 times.\n  Caf\xC3\xA9? ");
  }
  text.resize(bytes);
  return text;
}

void BM_TokenizerEncode(benchmark::State& state) {
  const std::string text = SampleText(static_cast<size_t>(state.range(0)));
  const Tokenizer tokenizer;
  std::vector<uint32_t> ids;
  for (auto _ : state) {
    ids.clear();
    tokenizer.AppendEncoded(text, &ids);
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_TokenizerEncode)->Arg(4096)->Arg(1 << 20);

std::string ChatBody(size_t content_bytes) {
  const std::string content = SampleText(content_bytes);
  std::string body = R"({"model":"m","stream":true,"max_tokens":64,"messages":[)"
                     R"({"role":"system","content":"You are helpful."},{"role":"user","content":")";
  body.append(content.begin(), content.end() - 1);  // drop a trailing byte that may need escaping
  for (char& c : body) {
    if (c == '\n') c = ' ';
  }
  body.append(R"("}]})");
  return body;
}

void BM_ParseChatRequest(benchmark::State& state) {
  const std::string body = ChatBody(static_cast<size_t>(state.range(0)));
  const Limits limits;
  for (auto _ : state) {
    auto parsed = ParseRequest(Endpoint::kChatCompletions, body, limits);
    benchmark::DoNotOptimize(parsed);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_ParseChatRequest)->Arg(1024)->Arg(64 * 1024);

// The request budget's pass (a SAX parse that only counts) on an ordinary chat body.
void BM_CheckBudgetChat(benchmark::State& state) {
  const std::string body = ChatBody(static_cast<size_t>(state.range(0)));
  const Budget budget;
  for (auto _ : state) {
    auto error = CheckBudget(body, budget);
    benchmark::DoNotOptimize(error);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_CheckBudgetChat)->Arg(1024)->Arg(64 * 1024);

// ParseRequest on each hostile shape at the body limit (api/hostile_json_test_util.h), with the
// default budget: refused by the budget's pass, or parsed within it.
void BM_ParseHostileRequest(benchmark::State& state) {
  const testing::Shape& shape = testing::kShapes[state.range(0)];
  const std::string body = testing::Body(shape, testing::LargestFitting(shape, 1 << 20));
  const Limits limits;
  for (auto _ : state) {
    auto parsed = ParseRequest(Endpoint::kCompletions, body, limits);
    benchmark::DoNotOptimize(parsed);
  }
  state.SetLabel(shape.name);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_ParseHostileRequest)->DenseRange(0, std::size(testing::kShapes) - 1);

ResponseMeta Meta() {
  return {Endpoint::kChatCompletions, "chatcmpl-0123456789abcdef", 1700000000, "llama-3-8b",
          "node-1"};
}

void BM_RenderChunk(benchmark::State& state) {
  const ResponseMeta meta = Meta();
  for (auto _ : state) benchmark::DoNotOptimize(RenderChunk(meta, " token", false));
}
BENCHMARK(BM_RenderChunk);

void BM_ParseStreamEvent(benchmark::State& state) {
  const std::string event = RenderChunk(Meta(), " token", false);
  const std::string_view data = std::string_view(event).substr(6, event.size() - 8);
  for (auto _ : state) benchmark::DoNotOptimize(ParseStreamEvent(data));
}
BENCHMARK(BM_ParseStreamEvent);

// The same events through one stream's decoder: each repeats the one before around a new text.
void BM_StreamEventDecoder(benchmark::State& state) {
  const std::string a = RenderChunk(Meta(), " token", false);
  const std::string b = RenderChunk(Meta(), " other", false);
  const std::string_view events[] = {std::string_view(a).substr(6, a.size() - 8),
                                     std::string_view(b).substr(6, b.size() - 8)};
  StreamEventDecoder decoder;
  size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(decoder.Decode(events[i++ & 1]));
}
BENCHMARK(BM_StreamEventDecoder);

void BM_SseParserFeed(benchmark::State& state) {
  std::string stream;
  for (int i = 0; i < 64; ++i) stream += RenderChunk(Meta(), " token", i == 0);
  for (auto _ : state) {
    SseParser parser;
    size_t events = 0;
    parser.Feed(stream, [&](std::string_view) { ++events; });
    benchmark::DoNotOptimize(events);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * stream.size()));
}
BENCHMARK(BM_SseParserFeed);

void BM_MetricsHistogramObserve(benchmark::State& state) {
  MetricsRegistry registry;
  Histogram& h = registry.AddHistogram("h", "x", ExponentialBuckets(0.001, 2, 16));
  double v = 0;
  for (auto _ : state) {
    h.Observe(v);
    v = v > 60 ? 0 : v + 0.37;
  }
}
BENCHMARK(BM_MetricsHistogramObserve);

void BM_MetricsCounterIncrement(benchmark::State& state) {
  MetricsRegistry registry;
  Counter& c = registry.AddCounter("c", "x");
  for (auto _ : state) c.Increment();
}
BENCHMARK(BM_MetricsCounterIncrement);

// GET /metrics on a registry of the daemon's size: ~90 series in ~50 families, one histogram.
void BM_MetricsRender(benchmark::State& state) {
  MetricsRegistry registry;
  for (int f = 0; f < 40; ++f) {
    std::string name = "hearsay_family_";
    name += std::to_string(f);
    name += "_total";
    for (const char* kind : {"a", "b"}) {
      registry.AddCounter(name, "Help text of a family.", {{"kind", kind}}).Increment(12345);
    }
  }
  for (int g = 0; g < 10; ++g) {
    std::string name = "hearsay_gauge_";
    name += std::to_string(g);
    registry.AddGauge(name, "A gauge.").Set(3.5);
  }
  Histogram& h =
      registry.AddHistogram("hearsay_ttft_seconds", "T.", ExponentialBuckets(0.001, 2, 16));
  for (int i = 0; i < 100; ++i) h.Observe(i * 0.01);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = registry.Render();
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_MetricsRender);

}  // namespace
}  // namespace hearsay::api
