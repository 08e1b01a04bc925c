#include "hearsay/loadgen/summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "hearsay/common/percentile.h"

namespace hearsay::loadgen {

Distribution Distribute(std::vector<double> samples_ms) {
  Distribution d;
  if (samples_ms.empty()) return d;
  std::sort(samples_ms.begin(), samples_ms.end());
  double sum = 0;
  for (double v : samples_ms) sum += v;
  d.count = samples_ms.size();
  d.mean_ms = sum / static_cast<double>(samples_ms.size());
  d.p50_ms = Percentile(samples_ms, 0.50);
  d.p90_ms = Percentile(samples_ms, 0.90);
  d.p99_ms = Percentile(samples_ms, 0.99);
  d.max_ms = samples_ms.back();
  return d;
}

BenchSummary Summarize(std::span<const RequestResult> results, Duration duration, size_t targets) {
  BenchSummary s;
  s.per_target.assign(targets, 0);
  std::vector<double> ttft, itl, e2e;
  ttft.reserve(results.size());
  e2e.reserve(results.size());
  for (const RequestResult& r : results) {
    ++s.requests;
    if (r.target < targets && r.error != ErrorKind::kSkipped) ++s.per_target[r.target];
    if (!r.ok()) {
      ++s.failed;
      ++s.errors[ErrorKindName(r.error, r.http_status)];
      continue;
    }
    ++s.completed;
    if (r.ttft) ttft.push_back(ToMillis(*r.ttft));
    for (Duration gap : r.itl) itl.push_back(ToMillis(gap));
    e2e.push_back(ToMillis(r.e2e));
    if (!r.has_usage) {
      ++s.missing_usage;
      continue;
    }
    s.prompt_tokens += r.prompt_tokens;
    s.cached_tokens += r.cached_tokens;
    s.completion_tokens += r.completion_tokens;
  }
  s.ttft = Distribute(std::move(ttft));
  s.itl = Distribute(std::move(itl));
  s.e2e = Distribute(std::move(e2e));
  s.duration_s = ToSeconds(duration);
  if (s.duration_s > 0) {
    s.requests_per_s = static_cast<double>(s.completed) / s.duration_s;
    s.output_tokens_per_s = static_cast<double>(s.completion_tokens) / s.duration_s;
  }
  if (s.prompt_tokens > 0) {
    s.hit_rate = static_cast<double>(s.cached_tokens) / static_cast<double>(s.prompt_tokens);
  }
  return s;
}

namespace {

nlohmann::json ToJson(const Distribution& d) {
  return {{"count", d.count},   {"mean_ms", d.mean_ms}, {"p50_ms", d.p50_ms},
          {"p90_ms", d.p90_ms}, {"p99_ms", d.p99_ms},   {"max_ms", d.max_ms}};
}

std::string Row(std::string_view name, const Distribution& d) {
  return fmt::format("{:<10} {:>8} {:>10.1f} {:>10.1f} {:>10.1f} {:>10.1f} {:>10.1f}\n", name,
                     d.count, d.mean_ms, d.p50_ms, d.p90_ms, d.p99_ms, d.max_ms);
}

}  // namespace

nlohmann::json ToJson(const BenchSummary& s) {
  nlohmann::json j;
  j["requests"] = s.requests;
  j["completed"] = s.completed;
  j["failed"] = s.failed;
  j["errors"] = s.errors;
  j["missing_usage"] = s.missing_usage;
  j["ttft"] = ToJson(s.ttft);
  j["itl"] = ToJson(s.itl);
  j["e2e"] = ToJson(s.e2e);
  j["duration_s"] = s.duration_s;
  j["requests_per_s"] = s.requests_per_s;
  j["output_tokens_per_s"] = s.output_tokens_per_s;
  j["prompt_tokens"] = s.prompt_tokens;
  j["cached_tokens"] = s.cached_tokens;
  j["completion_tokens"] = s.completion_tokens;
  j["hit_rate"] = s.hit_rate;
  j["per_target"] = s.per_target;
  return j;
}

std::string RenderTable(const BenchSummary& s, std::span<const std::string> targets) {
  std::string out;
  out += fmt::format("{:<10} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "latency", "samples",
                     "mean ms", "p50 ms", "p90 ms", "p99 ms", "max ms");
  out += Row("ttft", s.ttft);
  if (s.itl.count > 0) {
    out += Row("itl", s.itl);
  } else {
    out += fmt::format(
        "{:<10} {:>8}   (no samples: answers of one token, or not streamed, have no gaps)\n", "itl",
        0);
  }
  out += Row("e2e", s.e2e);
  out += fmt::format("\nrequests   {} sent, {} completed, {} failed in {:.2f} s\n", s.requests,
                     s.completed, s.failed, s.duration_s);
  out += fmt::format("throughput {:.2f} req/s, {:.1f} output tokens/s\n", s.requests_per_s,
                     s.output_tokens_per_s);
  out += fmt::format("tokens     {} prompt, {} cached, {} completion\n", s.prompt_tokens,
                     s.cached_tokens, s.completion_tokens);
  out += fmt::format("hit rate   {:.3f} (cached / prompt tokens)\n", s.hit_rate);
  if (s.missing_usage > 0) {
    out += fmt::format("warning    {} responses carried no usage; not in the hit rate\n",
                       s.missing_usage);
  }
  if (!s.per_target.empty()) {
    out += "sent to   ";
    for (size_t i = 0; i < s.per_target.size(); ++i) {
      const std::string name = i < targets.size() ? targets[i] : fmt::format("target {}", i);
      out += fmt::format("{} {} {} requests", i == 0 ? "" : ",", name, s.per_target[i]);
    }
    out += "\n";
  }
  if (!s.errors.empty()) {
    out += "errors    ";
    for (const auto& [kind, n] : s.errors) out += fmt::format(" {}={}", kind, n);
    out += "\n";
  }
  return out;
}

}  // namespace hearsay::loadgen
