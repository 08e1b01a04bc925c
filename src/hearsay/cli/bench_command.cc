// `hearsay bench`: the load generator (loadgen/) against running OpenAI-compatible servers.
//
// Sends a simulator workload to one or more targets, open loop (Poisson at --rate) or closed loop
// (--concurrency), for --requests or --duration, and prints TTFT, inter-token and end-to-end
// latency percentiles, throughput, token counts and the token-level cache hit rate the servers
// report (usage.prompt_tokens_details.cached_tokens), or the same as one JSON object (--json).
// SIGINT/SIGTERM stop the run; what finished so far is still reported.
//
// With --twin (open loop) it also runs the simulator on the same requests against a simulated
// cluster of the targets, configured with the flags the nodes were started with
// (--twin-node-args), and prints its prediction beside the measured figures.
//
// Exit status: 0 after a run in which some request succeeded, 1 for bad flags or a setup error,
// 3 when no request succeeded (so scripts notice a dead target).
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "hearsay/cli/client_tls.h"
#include "hearsay/cli/commands.h"
#include "hearsay/cli/interrupt_watcher.h"
#include "hearsay/cli/progress_bar.h"
#include "hearsay/loadgen/load_run.h"
#include "hearsay/loadgen/request_source.h"
#include "hearsay/loadgen/summary.h"
#include "hearsay/loadgen/target_url.h"
#include "hearsay/sim/sim_run.h"
#include "hearsay/twin/twin_config.h"
#include "hearsay/twin/twin_run.h"

namespace hearsay::cli {

namespace {

struct BenchFlags {
  std::string targets;
  ClientTlsFlags tls;
  std::string api_key;
  std::string workload = "mmlu";
  std::string trace_path;
  double rate = 0;
  uint32_t concurrency = 0;
  uint64_t requests = 0;
  double duration_s = 0;
  uint64_t seed = 1;
  bool json = false;
  double zipf = 1.0;
  uint32_t variants = 1;
  bool cot = false;
  std::string entry = "uniform";
  uint32_t clients = 64;
  std::string api;
  std::string model = "hearsay-sim";
  bool trace_timestamps = false;
  double time_scale = 1.0;
  double timeout_s = 120;
  size_t max_in_flight = 1024;
  // The digital twin: the nodes' own flags (`hearsay node` flags, or --config FILE), alike for
  // every target, and the one-way delay between nodes.
  bool twin = false;
  std::string twin_node_args;
  double twin_delay_ms = twin::kLoopbackOneWayDelayMs;
};

// The simulator's prediction for the requests `spec` describes, sent to `nodes` targets that
// run `hearsay node <node_args>`.
Result<std::pair<twin::TwinPrediction, std::string>> RunTwin(const BenchFlags& f,
                                                             const loadgen::WorkloadSpec& spec,
                                                             size_t nodes) {
  std::vector<std::string> argv = {"hearsay", "node"};
  std::istringstream words(f.twin_node_args);
  for (std::string w; words >> w;) argv.push_back(w);
  HEARSAY_ASSIGN_OR_RETURN(const net::DaemonConfig node, twin::ParseNodeCommandLine(argv));
  twin::TwinNetwork network;
  network.one_way_delay_ms = f.twin_delay_ms;
  HEARSAY_ASSIGN_OR_RETURN(
      const sim::SimConfig config,
      twin::TwinSimConfig(std::vector<net::DaemonConfig>(nodes, node), spec, network));
  HEARSAY_ASSIGN_OR_RETURN(twin::TwinPrediction summary, twin::Predict(config));
  return std::make_pair(std::move(summary), twin::SimCommandLine(twin::DrawConfig(config, 1)));
}

constexpr double kDefaultRate = 10;
constexpr uint64_t kDefaultRequests = 100;
// A generator bound for runs limited only by --duration: workloads emit lazily, so this costs
// nothing and is never reached in practice.
constexpr uint64_t kUnboundedRequests = 1'000'000'000;

int RunBench(const BenchFlags& f) {
  Result<std::vector<loadgen::TargetUrl>> urls = loadgen::ParseTargetUrlList(f.targets);
  if (!urls.ok()) {
    std::fprintf(stderr, "hearsay bench: %s\n", urls.status().message().c_str());
    return 1;
  }
  Result<std::shared_ptr<http::TlsContext>> tls = ClientTls(f.tls, urls->front().https);
  if (!tls.ok()) {
    std::fprintf(stderr, "hearsay bench: %s\n", tls.status().message().c_str());
    return 1;
  }
  Result<std::vector<std::string>> targets = std::vector<std::string>();
  for (const loadgen::TargetUrl& u : *urls) targets->push_back(u.host_port);
  const bool closed = f.concurrency > 0;
  const double rate = closed ? 1.0 : (f.rate > 0 ? f.rate : kDefaultRate);
  const bool by_time = f.duration_s > 0;
  const uint64_t requests = f.requests > 0 ? f.requests : (by_time ? 0 : kDefaultRequests);

  loadgen::WorkloadSpec spec;
  spec.workload = f.workload;
  spec.trace_path = f.trace_path;
  spec.requests = requests > 0 ? requests : kUnboundedRequests;
  spec.rate_per_s = rate;
  spec.trace_timestamps = f.trace_timestamps;
  spec.time_scale = f.time_scale;
  spec.zipf = f.zipf;
  spec.variants = f.variants;
  spec.cot = f.cot;
  spec.targets = static_cast<uint32_t>(targets->size());
  spec.entry = f.entry == "sticky" ? workload::EntryMode::kSticky : workload::EntryMode::kUniform;
  spec.clients = f.clients;
  if (f.api == "completions") spec.api = loadgen::ApiKind::kCompletions;
  if (f.api == "chat") spec.api = loadgen::ApiKind::kChatCompletions;
  spec.model = f.model;
  spec.seed = f.seed;
  Result<loadgen::RequestSource> source = loadgen::RequestSource::Create(spec);
  if (!source.ok()) {
    std::fprintf(stderr, "hearsay bench: %s\n", source.status().ToString().c_str());
    return 1;
  }
  if (f.twin) {
    // Checked before any request is sent; the twin itself runs on the requests that were sent.
    loadgen::WorkloadSpec probe = spec;
    probe.requests = 1;
    Status twin_ok = closed ? InvalidArgumentError("the twin models open-loop runs (--rate) only")
                            : RunTwin(f, probe, targets->size()).status();
    if (!twin_ok.ok()) {
      std::fprintf(stderr, "hearsay bench: --twin: %s\n", twin_ok.message().c_str());
      return 1;
    }
  }

  loadgen::LoadOptions options;
  options.targets = *targets;
  options.tls = *tls;
  options.api_key = f.api_key;
  options.mode = closed ? loadgen::LoadMode::kClosedLoop : loadgen::LoadMode::kOpenLoop;
  options.concurrency = f.concurrency;
  options.max_requests = requests;
  options.duration = FromSeconds(f.duration_s);
  options.max_in_flight = f.max_in_flight;
  options.response_timeout = FromSeconds(f.timeout_s);
  options.idle_timeout = FromSeconds(f.timeout_s);
  ProgressBar bar("bench", isatty(STDERR_FILENO) != 0);
  options.progress = [&bar](const loadgen::Progress& p) { bar.Update(p); };

  const loadgen::ApiKind api = source->api();
  loadgen::LoadRun run(std::move(options), std::move(*source));
  InterruptWatcher watcher([&run](int) { run.Cancel(); });
  Result<loadgen::RunOutput> out = run.Run();
  bar.Finish();
  if (!out.ok()) {
    std::fprintf(stderr, "hearsay bench: %s\n", out.status().ToString().c_str());
    return 1;
  }
  const loadgen::BenchSummary summary =
      loadgen::Summarize(out->results, out->elapsed, targets->size());
  std::optional<std::pair<twin::TwinPrediction, std::string>> twin;
  if (f.twin && !out->results.empty()) {
    loadgen::WorkloadSpec sent = spec;
    sent.requests = out->results.size();
    Result<std::pair<twin::TwinPrediction, std::string>> t = RunTwin(f, sent, targets->size());
    if (!t.ok()) {
      std::fprintf(stderr, "hearsay bench: --twin: %s\n", t.status().ToString().c_str());
      return 1;
    }
    twin = std::move(*t);
  }
  const std::string mode = closed ? "closed loop, concurrency " + std::to_string(f.concurrency)
                                  : fmt::format("open loop, {:g} req/s", rate);
  if (f.json) {
    nlohmann::json j = loadgen::ToJson(summary);
    j["config"] = {{"targets", *targets},
                   {"workload", f.workload},
                   {"api", std::string(loadgen::ApiPath(api))},
                   {"mode", closed ? "closed" : "open"},
                   {"rate_per_s", closed ? 0.0 : rate},
                   {"concurrency", f.concurrency},
                   {"max_requests", requests},
                   {"duration_s", f.duration_s},
                   {"seed", f.seed}};
    j["cancelled"] = out->cancelled;
    if (twin) {
      j["twin_mean_ttft_ms"] = twin->first.mean_ttft_ms;
      j["twin_p99_ttft_ms"] = twin->first.p99_ttft_ms;
      j["twin_hit_rate"] = twin->first.hit_rate;
      j["twin_mean_ttft_ms_range"] = {twin->first.min_mean_ttft_ms, twin->first.max_mean_ttft_ms};
      j["twin_command"] = twin->second;
    }
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("hearsay bench: %s workload, %s, %zu target(s), seed %llu%s\n\n",
                f.workload.c_str(), mode.c_str(), targets->size(),
                static_cast<unsigned long long>(f.seed), out->cancelled ? " (interrupted)" : "");
    std::printf("%s", loadgen::RenderTable(summary, *targets).c_str());
    if (twin) {
      std::printf(
          "\ntwin (the simulator, same requests, nodes run with \"%s\"; mean of %u runs, "
          "--cluster-seed 1 to %u): TTFT mean %.1f ms, p99 %.1f ms, hit rate %.3f\n  %s\n",
          f.twin_node_args.c_str(), twin->first.runs, twin->first.runs, twin->first.mean_ttft_ms,
          twin->first.p99_ttft_ms, twin->first.hit_rate, twin->second.c_str());
    }
  }
  if (out->cancelled) return 130;
  return summary.completed > 0 ? 0 : 3;
}

}  // namespace

void AddBenchCommand(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<BenchFlags>();
  auto* cmd =
      app.add_subcommand("bench", "Load-test OpenAI-compatible servers with a simulator workload");
  cmd->add_option("--target", f->targets,
                  "Target URL(s), comma-separated (http://host:port, or all https://)")
      ->required();
  AddClientTlsOptions(cmd, f->tls);
  cmd->add_option("--api-key", f->api_key,
                  "Send 'Authorization: Bearer KEY' with every request (a node's API key)");
  cmd->add_option("--workload", f->workload, "mmlu, chat or trace")
      ->check(CLI::IsMember({"mmlu", "chat", "trace"}))
      ->capture_default_str();
  cmd->add_option("--trace", f->trace_path, "Mooncake-format JSONL trace (--workload trace)");
  auto* rate = cmd->add_option("--rate", f->rate,
                               "Open loop: Poisson arrivals, requests/s "
                               "(default 10)")
                   ->check(CLI::Range(1e-6, 1e6));
  auto* conc =
      cmd->add_option("--concurrency", f->concurrency, "Closed loop: requests kept in flight")
          ->check(CLI::Range(1u, 100000u));
  rate->excludes(conc);
  // With both, whichever bound comes first ends the run.
  cmd->add_option("--requests", f->requests, "Requests to send (default 100)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1'000'000'000}));
  cmd->add_option("--duration", f->duration_s, "Seconds to keep sending")
      ->check(CLI::Range(1e-3, 1e7));
  cmd->add_option("--seed", f->seed, "Workload seed")->capture_default_str();
  cmd->add_flag("--json", f->json, "Print one JSON object instead of the table");
  cmd->add_option("--zipf", f->zipf, "Zipf exponent of prefix popularity")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  cmd->add_option("--variants", f->variants, "MMLU prefix variants per subject")
      ->check(CLI::Range(1u, 1000u))
      ->capture_default_str();
  cmd->add_flag("--cot", f->cot, "MMLU chain-of-thought outputs (150-300 tokens)");
  cmd->add_option("--entry", f->entry, "How requests pick a target: uniform or sticky per client")
      ->check(CLI::IsMember({"uniform", "sticky"}))
      ->capture_default_str();
  cmd->add_option("--clients", f->clients, "Distinct clients (for --entry sticky)")
      ->check(CLI::Range(1u, 10'000'000u))
      ->capture_default_str();
  cmd->add_option("--api", f->api, "completions or chat (default: chat for --workload chat)")
      ->check(CLI::IsMember({"completions", "chat"}));
  cmd->add_option("--model", f->model, "The model field of every request")->capture_default_str();
  cmd->add_flag("--trace-timestamps", f->trace_timestamps,
                "Send trace requests at the trace's own times (instead of --rate)");
  cmd->add_option("--time-scale", f->time_scale, "Multiply trace timestamps by this")
      ->check(CLI::Range(1e-6, 1e6))
      ->capture_default_str();
  cmd->add_option("--timeout", f->timeout_s, "Seconds to wait for headers, and between body bytes")
      ->check(CLI::Range(1e-3, 1e5))
      ->capture_default_str();
  cmd->add_option("--max-in-flight", f->max_in_flight,
                  "Open loop: requests outstanding at most (more are skipped)")
      ->check(CLI::Range(size_t{1}, size_t{1'000'000}))
      ->capture_default_str();
  cmd->add_flag("--twin", f->twin,
                "Also print what the simulator predicts for the same requests on a simulated "
                "cluster of the targets (open loop; see --twin-node-args)");
  cmd->add_option("--twin-node-args", f->twin_node_args,
                  "--twin: the `hearsay node` flags every target runs with, e.g. \"--engine-preset "
                  "consumer --capacity-tokens 8192\" or \"--config node.toml\"");
  cmd->add_option("--twin-delay-ms", f->twin_delay_ms,
                  "--twin: one-way delay between nodes the simulator assumes, ms")
      ->check(CLI::Range(0.0, 10'000.0))
      ->capture_default_str();
  cmd->callback([f, &exit_code] { exit_code = RunBench(*f); });
}

}  // namespace hearsay::cli
