// `hearsay sim demo`: the policy comparison in virtual time. One MMLU-like workload on an 8-node
// simulated cluster, once per routing policy, and a table of TTFT, cache hit rate, forwarding and
// load spread. Every run uses the same seed, so the policies see the same requests. (`hearsay
// demo` is the same comparison on real processes: demo_command.cc.)
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hearsay/cli/commands.h"
#include "hearsay/sim/sim_config.h"
#include "hearsay/sim/sim_run.h"

namespace hearsay::cli {
namespace {

struct DemoOptions {
  int nodes = 8;
  uint64_t requests = 10000;
  double delay_ms = 1.0;
  double zipf = 1.0;
  uint64_t seed = 1;
  std::string policies = "local,random,least-loaded,paper,hearsay,oracle";
  bool json = false;
};

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = s.find(',', start);
    const std::string item = s.substr(start, end == std::string::npos ? end : end - start);
    if (!item.empty()) out.push_back(item);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

int RunDemo(const DemoOptions& options) {
  const bool tty = isatty(STDERR_FILENO) != 0;
  nlohmann::json rows = nlohmann::json::array();
  if (!options.json) {
    std::printf(
        "hearsay sim demo: %d simulated nodes, MMLU-like workload (Zipf %.2f over 57 subjects),\n"
        "%llu requests per policy, %.1f ms one-way delay, seed %llu\n\n",
        options.nodes, options.zipf, static_cast<unsigned long long>(options.requests),
        options.delay_ms, static_cast<unsigned long long>(options.seed));
    std::printf("%-14s %14s %13s %9s %10s %9s\n", "policy", "mean TTFT ms", "p99 TTFT ms",
                "hit rate", "forwarded", "load CoV");
  }
  for (const std::string& policy : SplitCommas(options.policies)) {
    sim::SimConfig config;
    config.workload = "mmlu";
    config.nodes = options.nodes;
    config.policy = policy;
    config.delay_ms = options.delay_ms;
    config.zipf = options.zipf;
    config.requests = options.requests;
    config.seed = options.seed;
    sim::ProgressFn progress;
    if (tty) {
      progress = [&policy](uint64_t done, uint64_t total) {
        const int width = 30;
        const int filled = total == 0 ? width : static_cast<int>(width * done / total);
        std::fprintf(stderr, "\r  %-14s [%s%s] %llu/%llu", policy.c_str(),
                     std::string(filled, '#').c_str(), std::string(width - filled, ' ').c_str(),
                     static_cast<unsigned long long>(done), static_cast<unsigned long long>(total));
      };
    }
    Result<sim::SimSummary> summary = sim::RunSim(config, progress);
    if (tty) std::fprintf(stderr, "\r%60s\r", "");
    if (!summary.ok()) {
      std::fprintf(stderr, "hearsay sim demo: policy %s: %s\n", policy.c_str(),
                   summary.status().ToString().c_str());
      return 1;
    }
    const sim::SimSummary& s = *summary;
    if (options.json) {
      rows.push_back({{"policy", policy},
                      {"mean_ttft_ms", s.mean_ttft_ms},
                      {"p99_ttft_ms", s.p99_ttft_ms},
                      {"hit_rate", s.hit_rate},
                      {"forwarded_frac", s.forwarded_frac},
                      {"load_cov", s.load_cov}});
    } else {
      std::printf("%-14s %14.1f %13.1f %9.3f %10.3f %9.3f\n", policy.c_str(), s.mean_ttft_ms,
                  s.p99_ttft_ms, s.hit_rate, s.forwarded_frac, s.load_cov);
      std::fflush(stdout);
    }
  }
  if (options.json) std::printf("%s\n", rows.dump(2).c_str());
  return 0;
}

}  // namespace

CLI::App* AddSimDemoCommand(CLI::App& sim, int& exit_code) {
  auto options = std::make_shared<DemoOptions>();
  auto* cmd = sim.add_subcommand("demo", "Compare routing policies on a simulated cluster");
  cmd->add_option("--nodes", options->nodes, "Nodes in the cluster")->check(CLI::Range(1, 1024));
  cmd->add_option("--requests", options->requests, "Requests per policy")
      ->check(CLI::Range(uint64_t{1}, uint64_t{100'000'000}));
  cmd->add_option("--delay-ms", options->delay_ms, "One-way network delay, ms")
      ->check(CLI::Range(0.0, 10'000.0));
  cmd->add_option("--zipf", options->zipf, "Zipf exponent of subject popularity")
      ->check(CLI::Range(0.0, 10.0));
  cmd->add_option("--seed", options->seed, "Seed of the workload and the simulation");
  cmd->add_option("--policies", options->policies, "Comma-separated policies to compare");
  cmd->add_flag("--json", options->json, "Print the table as JSON, one object per policy");
  cmd->callback([options, &exit_code] { exit_code = RunDemo(*options); });
  return cmd;
}

}  // namespace hearsay::cli
