// `hearsay calibrate --upstream URL [--model M] [--api-key K]`: measures an OpenAI-compatible
// engine's prefill and decode speed with a short, bounded run (loadgen/calibration.h) and prints
// the cost model the node takes as --engine-preset, with the raw figures it came from
// (docs/engines.md#calibrate). Without --model, the first model of the engine's GET /v1/models.
//
// Exit status: 0 with a preset printed, 1 for bad flags or an unreachable engine, 3 when the run
// measured too little to fit (the figures so far are printed).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "hearsay/cli/commands.h"
#include "hearsay/engine/cost_model.h"
#include "hearsay/http/sync_call.h"
#include "hearsay/loadgen/calibration.h"
#include "hearsay/loadgen/target_url.h"
#include "hearsay/upstream/served_models.h"

namespace hearsay::cli {
namespace {

struct CalibrateFlags {
  std::string upstream;
  std::string model;
  std::string api_key;
  std::vector<uint32_t> prompt_words = {64, 128, 256, 512};
  uint32_t repeats = 3;
  uint32_t decode_requests = 3;
  uint32_t decode_tokens = 64;
  double budget_s = 40;
  double timeout_s = 15;
  uint64_t seed = 1;
};

// The first model the engine lists.
Result<std::string> FirstModel(const std::string& address, const std::string& api_key) {
  http::ClientRequest request;
  request.host_port = address;
  request.target = "/v1/models";
  if (!api_key.empty()) request.headers = {{"Authorization", "Bearer " + api_key}};
  request.connect_timeout = request.response_timeout = request.idle_timeout =
      std::chrono::seconds(5);
  HEARSAY_ASSIGN_OR_RETURN(http::SyncResponse r, http::CallSync(std::move(request)));
  if (r.status != 200) {
    return UnavailableError("GET /v1/models answered HTTP " + std::to_string(r.status));
  }
  HEARSAY_ASSIGN_OR_RETURN(upstream::ServedModels models, upstream::ParseServedModels(r.body));
  return models.models.front().name;
}

// The cost model of the fit: a = prefill per node token, and the decode step of one sequence
// (t0 + d1) split so that t0 is no more than the fixed part of a request's TTFT. b and d2 (the
// attention terms) are left at 0: a short run at these lengths cannot separate them.
// Each coefficient is rounded to 4 significant digits, well inside the run's precision.
engine::CostParams PresetOf(const loadgen::CalibrationFit& fit) {
  auto round = [](double v) { return std::stod(fmt::format("{:.4g}", v)); };
  engine::CostParams p;
  p.a_ms_per_token = round(fit.prefill_ms_per_node_token);
  const double t0 = std::clamp(fit.ttft_intercept_ms, 0.0, fit.decode_ms_per_token);
  p.t0_ms = round(t0);
  p.d1_ms_per_seq = round(std::max(0.0, fit.decode_ms_per_token - t0));
  return p;
}

void PrintRun(const loadgen::CalibrationRun& run) {
  std::printf("requests: %u sent (1 warm-up), %u failed, %.1f s%s\n", run.requests, run.failed,
              std::chrono::duration<double>(run.elapsed).count(),
              run.budget_hit ? " (budget spent: requests left unsent)" : "");
  if (!run.first_error.empty()) std::printf("first failure: %s\n", run.first_error.c_str());
  std::vector<uint32_t> lengths;
  for (const auto& s : run.prefill) lengths.push_back(s.words);
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  std::printf("prefill (max_tokens 1), TTFT per prompt:\n");
  for (uint32_t w : lengths) {
    std::string ttfts;
    uint32_t tokens = 0, cached = 0, node = 0;
    for (const auto& s : run.prefill) {
      if (s.words != w) continue;
      ttfts += fmt::format(" {:.1f}", s.ttft_ms);
      tokens = s.prompt_tokens;
      cached = s.cached_tokens;
      node = s.node_tokens;
    }
    std::printf("  %5u words: %5u engine tokens (%u cached), %5u node tokens, ms:%s\n", w, tokens,
                cached, node, ttfts.c_str());
  }
  for (size_t i = 0; i < run.decode.size(); ++i) {
    const auto& d = run.decode[i];
    std::printf("decode #%zu: %u tokens, %zu gaps, %.1f ms first to last token\n", i + 1,
                d.completion_tokens, d.gaps_ms.size(), d.span_ms);
  }
}

int RunCalibrate(const CalibrateFlags& f) {
  Result<std::string> address = loadgen::ParseTarget(f.upstream);
  if (!address.ok()) {
    std::fprintf(stderr, "hearsay calibrate: --upstream: %s\n", address.status().message().c_str());
    return 1;
  }
  loadgen::CalibrationOptions o;
  o.host_port = *address;
  o.model = f.model;
  o.api_key = f.api_key;
  o.prompt_words = f.prompt_words;
  o.repeats = f.repeats;
  o.decode_requests = f.decode_requests;
  o.decode_tokens = f.decode_tokens;
  o.budget = FromMillis(f.budget_s * 1000);
  o.request_timeout = FromMillis(f.timeout_s * 1000);
  o.seed = f.seed;
  if (o.model.empty()) {
    Result<std::string> model = FirstModel(*address, f.api_key);
    if (!model.ok()) {
      std::fprintf(stderr, "hearsay calibrate: no --model, and %s\n",
                   model.status().ToString().c_str());
      return 1;
    }
    o.model = *model;
  }
  std::printf("calibrating %s, model %s\n", f.upstream.c_str(), o.model.c_str());
  std::fflush(stdout);
  Result<loadgen::CalibrationRun> run = loadgen::RunCalibration(o);
  if (!run.ok()) {
    std::fprintf(stderr, "hearsay calibrate: %s\n", run.status().ToString().c_str());
    return 1;
  }
  PrintRun(*run);
  Result<loadgen::CalibrationFit> fit = loadgen::FitCalibration(*run);
  if (!fit.ok()) {
    std::fprintf(stderr, "hearsay calibrate: cannot fit: %s\n", fit.status().message().c_str());
    return 3;
  }
  std::printf(
      "fit (Theil-Sen over %zu prompts): TTFT = %.2f ms + %.4f ms x uncached engine token "
      "(%.4f ms x node token)\n"
      "decode (median of %zu gaps): %.2f ms per token (p10 %.2f, p90 %.2f)\n",
      fit->prefill_samples, fit->ttft_intercept_ms, fit->prefill_ms_per_token,
      fit->prefill_ms_per_node_token, fit->decode_gaps, fit->decode_ms_per_token,
      fit->decode_gap_p10_ms, fit->decode_gap_p90_ms);
  const std::string spec = engine::CostModel(PresetOf(*fit)).Spec();
  std::printf("preset: %s\n  flag: --engine-preset %s\n  toml: [engine] preset = \"%s\"\n",
              spec.c_str(), spec.c_str(), spec.c_str());
  return 0;
}

}  // namespace

void AddCalibrateCommand(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<CalibrateFlags>();
  auto* cmd = app.add_subcommand(
      "calibrate",
      "Measure an OpenAI-compatible engine's prefill and decode speed; print its cost model");
  cmd->add_option("--upstream", f->upstream, "The engine's URL, http://host:port")->required();
  cmd->add_option("--model", f->model, "Model to ask for (default: the first in /v1/models)");
  cmd->add_option("--api-key", f->api_key, "Bearer token for the engine");
  cmd->add_option("--prompt-words", f->prompt_words, "Prompt lengths in words (at least two)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--repeats", f->repeats, "Prefill requests per prompt length")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--decode-requests", f->decode_requests, "Requests that measure decode")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--decode-tokens", f->decode_tokens, "Output tokens of each decode request")
      ->check(CLI::Range(2, 4096))
      ->capture_default_str();
  cmd->add_option("--budget", f->budget_s, "Seconds after which no request starts")
      ->check(CLI::Range(1.0, 600.0))
      ->capture_default_str();
  cmd->add_option("--timeout", f->timeout_s, "Seconds one request may take")
      ->check(CLI::Range(0.1, 600.0))
      ->capture_default_str();
  cmd->add_option("--seed", f->seed, "Seed of the prompts' random words")->capture_default_str();
  cmd->callback([f, &exit_code] { exit_code = RunCalibrate(*f); });
}

}  // namespace hearsay::cli
