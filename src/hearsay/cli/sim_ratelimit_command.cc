// `hearsay sim ratelimit`: cluster-wide tenant rate limits on real gossip in virtual time
// (sim/ratelimit_experiment.h). Prints a Markdown table, or one JSON object with --json.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "hearsay/cli/commands.h"
#include "hearsay/sim/ratelimit_experiment.h"

namespace hearsay::cli {

CLI::App* AddSimRateLimitCommand(CLI::App& sim, int& exit_code) {
  auto options = std::make_shared<sim::RateLimitOptions>();
  auto json = std::make_shared<bool>(false);
  auto* cmd = sim.add_subcommand(
      "ratelimit",
      "Simulate cluster-wide tenant rate limits: admitted rate vs the limit over N entry nodes");
  cmd->add_flag("--quick", options->quick, "8 nodes, uniform and skewed, 10 s");
  cmd->add_option("--nodes", options->nodes, "Entry node counts")->check(CLI::Range(1, 1024));
  cmd->add_option("--spreads", options->spreads, "uniform, skewed, shift, crash")
      ->check(CLI::IsMember({"uniform", "skewed", "shift", "crash"}));
  cmd->add_option("--limit", options->limit_rps, "The tenant's limit R, requests per second")
      ->check(CLI::Range(1.0, 1e6))
      ->capture_default_str();
  cmd->add_option("--offered", options->offered, "Total offered traffic, as a multiple of R")
      ->check(CLI::Range(0.01, 1000.0))
      ->capture_default_str();
  cmd->add_option("--duration", options->duration_s, "Virtual seconds of traffic")
      ->check(CLI::Range(2.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("--seed", options->seed, "Seed")->capture_default_str();
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->callback([options, json, &exit_code] {
    const std::vector<sim::RateLimitResult> results = sim::RunRateLimitExperiment(*options);
    if (*json) {
      nlohmann::json j = nlohmann::json::array();
      for (const sim::RateLimitResult& r : results) {
        j.push_back({{"nodes", r.nodes},
                     {"spread", r.spread},
                     {"offered_r", r.offered_r},
                     {"first_second_r", r.first_second_r},
                     {"first_round_s", r.first_round_s},
                     {"after_round_mean_r", r.after_round_mean_r},
                     {"after_round_max_r", r.after_round_max_r},
                     {"per_node_mean_r", r.per_node_mean_r}});
      }
      std::printf(
          "%s\n",
          nlohmann::json{{"limit_rps", options->limit_rps}, {"results", j}}.dump(2).c_str());
    } else {
      std::printf("%s", sim::RateLimitTable(results, *options).c_str());
    }
    bool met = true;
    for (const sim::RateLimitResult& r : results) met = met && r.after_round_mean_r <= 1.1;
    exit_code = met ? 0 : 1;
  });
  return cmd;
}

}  // namespace hearsay::cli
