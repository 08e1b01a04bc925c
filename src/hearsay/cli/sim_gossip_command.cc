// `hearsay sim gossip`: the gossip experiment (membership, anti-entropy, cache summaries) in
// virtual time. Prints one JSON object (docs/gossip.md explains every field).
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "hearsay/cli/commands.h"
#include "hearsay/gossip/state_signing.h"
#include "hearsay/sim/gossip_experiment.h"

namespace hearsay::cli {

CLI::App* AddSimGossipCommand(CLI::App& sim, int& exit_code) {
  auto options = std::make_shared<sim::GossipExperimentOptions>();
  auto json = std::make_shared<bool>(false);
  auto* cmd = sim.add_subcommand(
      "gossip", "Simulate gossip alone: convergence, failure detection, bandwidth, accuracy");
  cmd->add_option("--nodes", options->nodes, "Nodes")->check(CLI::Range(2, 4096));
  cmd->add_option("--loss", options->loss, "Message loss on every link, 0..1")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--duration", options->duration_s, "Measured virtual seconds")
      ->check(CLI::Range(1.0, 86400.0));
  cmd->add_option("--warmup", options->warmup_s,
                  "Virtual seconds from the start (every node joining at once) to the measured "
                  "window")
      ->check(CLI::Range(1.0, 600.0));
  cmd->add_option("--churn", options->churn, "Cache events per node per second")
      ->check(CLI::Range(0.0, 1e7));
  cmd->add_option("--seed", options->seed, "Seed");
  cmd->add_option("--landmark-stride", options->landmark_stride,
                  "Cache summary granularity, in blocks (1 = every block)")
      ->check(CLI::Range(1u, 1u << 20));
  cmd->add_option("--landmark-budget-members", options->landmark_budget_members,
                  "Cluster size up to which the base stride is kept; above it each node's stride "
                  "doubles each time the cluster doubles")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20));
  cmd->add_option("--cache-blocks", options->cache_blocks, "Per-node cache capacity, in blocks")
      ->check(CLI::Range(1u, 1u << 28));
  // Shared replicas are the default (same figures, O(N) memory); --share-replicas stays
  // accepted so that earlier commands still run.
  cmd->add_flag("--share-replicas,!--private-replicas", options->share_replicas,
                "Replicas share each origin's history (the default: same figures, O(N) memory); "
                "--private-replicas gives each node its own copy (O(N^2) memory)");
  cmd->add_flag("!--no-relayed-evidence", options->relayed_evidence,
                "Probes ignore a target's state relayed by others (for comparison)");
  cmd->add_option("--silence-probe-mult", options->silence_probe_mult,
                  "Probe a member out of turn once its state is silent for this many times its "
                  "usual arrival gap (0: off)")
      ->check(CLI::Range(0.0, 1000.0));
  auto signatures = std::make_shared<std::string>("off");
  cmd->add_option("--signatures", *signatures,
                  "Signed origin state: off, ed25519 (real keys and verification; private "
                  "replicas) or modeled (the bytes and counted work, no cryptography)")
      ->check(CLI::IsMember({"off", "ed25519", "modeled"}));
  cmd->add_option("--sign-interval", options->sign_interval_s,
                  "Seconds between a node's signed publications of its state")
      ->check(CLI::Range(0.01, 60.0));
  cmd->add_flag("--json", *json, "Print JSON (the default and only format)");
  cmd->callback([options, signatures, &exit_code] {
    options->signatures = *gossip::ParseSignatureMode(*signatures);
    const nlohmann::json result = sim::RunGossipExperiment(*options);
    std::printf("%s\n", result.dump(2).c_str());
    exit_code = result.contains("error") ? 2 : 0;
  });
  return cmd;
}

}  // namespace hearsay::cli
