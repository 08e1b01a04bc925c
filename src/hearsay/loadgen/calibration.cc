#include "hearsay/loadgen/calibration.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>

#include "hearsay/api/tokenizer.h"
#include "hearsay/common/percentile.h"
#include "hearsay/loadgen/completion_calls.h"
#include "hearsay/loadgen/openai_body.h"
#include "hearsay/loadgen/robust_fit.h"

namespace hearsay::loadgen {
namespace {

uint64_t NextRandom(uint64_t& state) {  // splitmix64
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::string RandomWord(uint64_t& state, size_t letters) {
  std::string w;
  for (size_t i = 0; i < letters; ++i) w += static_cast<char>('a' + NextRandom(state) % 26);
  return w;
}

double Ms(Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

std::string Body(const CalibrationOptions& o, const std::string& prompt, uint32_t max_tokens) {
  nlohmann::json body = nlohmann::json::parse(RenderCompletionBody(o.model, prompt, max_tokens));
  // Decode must run its full length: llama.cpp, vLLM and SGLang all read ignore_eos.
  if (max_tokens > 1) body["ignore_eos"] = true;
  return body.dump();
}

std::string Describe(const RequestResult& r) {
  return ErrorKindName(r.error, r.http_status) +
         (r.error_message.empty() ? "" : ": " + r.error_message.substr(0, 300));
}

}  // namespace

Status ValidateCalibrationOptions(const CalibrationOptions& o) {
  if (o.host_port.empty()) return InvalidArgumentError("no upstream address");
  if (o.model.empty()) return InvalidArgumentError("no model");
  std::vector<uint32_t> lengths = o.prompt_words;
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  if (lengths.size() < 2) return InvalidArgumentError("prompt lengths: at least two distinct");
  if (lengths.front() < 1 || lengths.back() > 65536) {
    return InvalidArgumentError("prompt lengths: each 1 to 65536 words");
  }
  if (o.repeats < 1 || o.repeats > 100) return InvalidArgumentError("repeats: 1 to 100");
  if (o.decode_requests < 1 || o.decode_requests > 100) {
    return InvalidArgumentError("decode requests: 1 to 100");
  }
  if (o.decode_tokens < 2 || o.decode_tokens > 4096) {
    return InvalidArgumentError("decode tokens: 2 to 4096");
  }
  if (o.decode_prompt_words < 1 || o.decode_prompt_words > 65536) {
    return InvalidArgumentError("decode prompt words: 1 to 65536");
  }
  if (o.budget <= Duration(0) || o.request_timeout <= Duration(0)) {
    return InvalidArgumentError("the budget and the request timeout must be positive");
  }
  return OkStatus();
}

std::string CalibrationPrompt(uint32_t words, uint64_t& state) {
  std::string prompt = RandomWord(state, 12);
  for (uint32_t i = 1; i < words; ++i) {
    prompt += ' ';
    prompt += RandomWord(state, 2 + NextRandom(state) % 4);
  }
  return prompt;
}

Result<CalibrationRun> RunCalibration(const CalibrationOptions& o) {
  HEARSAY_RETURN_IF_ERROR(ValidateCalibrationOptions(o));
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [start] { return Duration(std::chrono::steady_clock::now() - start); };
  CalibrationRun run;
  uint64_t state = o.seed;
  const api::Tokenizer tokenizer;
  auto over_budget = [&] { return elapsed() >= o.budget; };
  auto send = [&](uint32_t words, uint32_t max_tokens) -> std::optional<RequestResult> {
    if (over_budget()) {
      run.budget_hit = true;
      return std::nullopt;
    }
    const std::string prompt = CalibrationPrompt(words, state);
    RequestResult r =
        CallAll({{o.host_port, Body(o, prompt, max_tokens)}}, o.api_key, o.request_timeout)[0];
    ++run.requests;
    if (!r.ok() || !r.ttft) {
      ++run.failed;
      if (run.first_error.empty()) run.first_error = Describe(r);
      return std::nullopt;
    }
    if (max_tokens == 1) {
      PrefillSample s;
      s.words = words;
      s.node_tokens = static_cast<uint32_t>(tokenizer.Encode(prompt).size());
      s.prompt_tokens = r.has_usage ? r.prompt_tokens : words;
      s.cached_tokens = r.has_usage ? std::min(r.cached_tokens, r.prompt_tokens) : 0;
      s.ttft_ms = Ms(*r.ttft);
      run.prefill.push_back(s);
    }
    return r;
  };
  auto decode = [&] {
    std::optional<RequestResult> r = send(o.decode_prompt_words, o.decode_tokens);
    if (!r) return;
    DecodeSample s;
    for (Duration gap : r->itl) s.gaps_ms.push_back(Ms(gap));
    s.completion_tokens =
        r->has_usage ? r->completion_tokens : static_cast<uint32_t>(r->itl.size() + 1);
    for (double g : s.gaps_ms) s.span_ms += g;
    run.decode.push_back(std::move(s));
  };

  // The warm-up: also the check that the engine answers at all.
  std::optional<RequestResult> warm = send(o.prompt_words.front(), 1);
  if (!warm) {
    return UnavailableError("the first request failed: " +
                            (run.first_error.empty() ? "budget spent" : run.first_error));
  }
  run.prefill.clear();
  decode();
  for (uint32_t round = 0; round < o.repeats; ++round) {
    for (uint32_t words : o.prompt_words) send(words, 1);
  }
  for (uint32_t i = 1; i < o.decode_requests; ++i) decode();
  run.elapsed = elapsed();
  return run;
}

Result<CalibrationFit> FitCalibration(const CalibrationRun& run) {
  std::vector<double> x_up, x_node, y;
  for (const PrefillSample& s : run.prefill) {
    const double uncached = static_cast<double>(s.prompt_tokens - s.cached_tokens);
    const double uncached_share =
        s.prompt_tokens > 0 ? uncached / static_cast<double>(s.prompt_tokens) : 1;
    x_up.push_back(uncached);
    x_node.push_back(static_cast<double>(s.node_tokens) * uncached_share);
    y.push_back(s.ttft_ms);
  }
  Result<Line> up = TheilSenFit(x_up, y);
  Result<Line> node = TheilSenFit(x_node, y);
  if (!up.ok() || !node.ok()) {
    return FailedPreconditionError("fewer than two prompt lengths were measured (" +
                                   std::to_string(run.prefill.size()) + " prefill samples)");
  }
  std::vector<double> gaps;
  for (const DecodeSample& s : run.decode)
    gaps.insert(gaps.end(), s.gaps_ms.begin(), s.gaps_ms.end());
  if (gaps.empty()) return FailedPreconditionError("no gap between decoded tokens was measured");
  // Servers that send several tokens per event (a stream interval) make gaps per event, not per
  // token: then the span over the tokens between is the figure.
  size_t events = 0, tokens = 0;
  std::vector<double> per_token;
  for (const DecodeSample& s : run.decode) {
    events += s.gaps_ms.size() + 1;
    tokens += s.completion_tokens;
    if (s.completion_tokens > 1) per_token.push_back(s.span_ms / (s.completion_tokens - 1));
  }
  std::sort(gaps.begin(), gaps.end());
  CalibrationFit fit;
  fit.ttft_intercept_ms = up->intercept;
  fit.prefill_ms_per_token = std::max(0.0, up->slope);
  fit.prefill_ms_per_node_token = std::max(0.0, node->slope);
  fit.decode_ms_per_token = tokens > events + events / 10 ? Median(per_token) : Median(gaps);
  fit.decode_gap_p10_ms = Percentile(gaps, 0.1);
  fit.decode_gap_p90_ms = Percentile(gaps, 0.9);
  fit.prefill_samples = run.prefill.size();
  fit.decode_gaps = gaps.size();
  return fit;
}

}  // namespace hearsay::loadgen
