// The subcommands of the `hearsay` binary. Each Add*Command registers its options and a callback
// on `app`; the callback sets `exit_code`. The CLI layer may use the wall clock and OS randomness;
// it seeds and injects them into the core.
#pragma once

#include <CLI/CLI.hpp>

namespace hearsay::cli {

void AddKeygenCommand(CLI::App& app, int& exit_code);
// `hearsay ca init|issue`: a cluster CA and node certificates (ca_command.cc).
void AddCaCommand(CLI::App& app, int& exit_code);
// `hearsay apikey create`: a tenant's API key (apikey_command.cc).
void AddApiKeyCommand(CLI::App& app, int& exit_code);
// `hearsay keys list|install|use|remove`: a running node's keys (keys_command.cc).
void AddKeysCommand(CLI::App& app, int& exit_code);
// `hearsay node`: one node daemon (node_command.cc).
void AddNodeCommand(CLI::App& app, int& exit_code);
// `hearsay sim`: one simulator run (sim_command.cc).
void AddSimCommand(CLI::App& app, int& exit_code);
// `hearsay demo`: the policy comparison on a 4-node cluster of real processes (demo_command.cc).
void AddDemoCommand(CLI::App& app, int& exit_code);
// `hearsay bench`: the load generator (bench_command.cc).
void AddBenchCommand(CLI::App& app, int& exit_code);
// `hearsay status`: the cluster as one node sees it (status_command.cc).
void AddStatusCommand(CLI::App& app, int& exit_code);
// `hearsay calibrate`: an engine's speed as a cost model preset (calibrate_command.cc).
void AddCalibrateCommand(CLI::App& app, int& exit_code);
// `hearsay sim demo`, registered under `sim`; returns the subcommand (sim_demo_command.cc).
CLI::App* AddSimDemoCommand(CLI::App& sim, int& exit_code);
// `hearsay sim gossip`, registered under `sim`; returns the subcommand (sim_gossip_command.cc).
CLI::App* AddSimGossipCommand(CLI::App& sim, int& exit_code);
// `hearsay sim ratelimit` (sim_ratelimit_command.cc).
CLI::App* AddSimRateLimitCommand(CLI::App& sim, int& exit_code);

}  // namespace hearsay::cli
