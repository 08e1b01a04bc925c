// The digital twin's configuration: the simulator run (sim::SimConfig) that models a cluster of
// real `hearsay node` processes under a load generator's workload.
//
// One source of truth: the twin reads each node's configuration from the very command line the
// node runs (launch::NodeCommandLine), parsed into a net::DaemonConfig the way `hearsay node`
// parses it, and the workload from the loadgen::WorkloadSpec the load generator sends. From
// those it takes the engine preset, KV capacity, block size and policy of the nodes, the node
// count, and the workload, seed, arrival rate and entry spread of the load; the gossip settings
// are the daemon's own defaults (node::NodeOptions, which the daemon does not override). What
// the configuration does not say is the network: the one-way delay between nodes (TwinNetwork).
//
// An upstream engine (--engine openai, say llama.cpp's llama-server) is modelled only when the
// caller says what no node configuration does (TwinUpstream): its speed as a cost model, how many
// of its tokens a node token makes (its cache capacity is configured in its own tokens) and its
// slots. The simulated engines then run that cost model, with the capacity in node tokens and
// the slots as their most running requests.
//
// What the simulator cannot model is refused with INVALID_ARGUMENT or UNIMPLEMENTED naming it:
// an upstream engine without a TwinUpstream, `[[engine]]` entries, nodes configured unlike each
// other, trace timestamps.
//
// Thread-safety: plain functions over values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/launch/local_cluster.h"
#include "hearsay/loadgen/request_source.h"
#include "hearsay/net/daemon_config.h"
#include "hearsay/sim/sim_config.h"

namespace hearsay::twin {

// One-way delay between two nodes on loopback, as the twin models it by default: a forward's
// HTTP hop between two processes on one host (connect from a pool, send, parse, first bytes
// back) costs a fraction of a millisecond each way, far below the simulated engine's prefill.
inline constexpr double kLoopbackOneWayDelayMs = 0.1;

// The network between the nodes, which no node's configuration says.
struct TwinNetwork {
  // One-way delay between any two nodes, ms (>= 0); each message takes [d, d x (1 + jitter)].
  double one_way_delay_ms = kLoopbackOneWayDelayMs;
  double jitter = 0.1;
};

// An upstream engine as the twin models it, which the nodes' configuration does not say.
struct TwinUpstream {
  // Its speed per node token: a cost model preset or coefficients (engine::CostModel::FromPreset),
  // say "llama-tiny-cpu" or what `hearsay calibrate` prints.
  std::string cost_model;
  // The engine's tokens per node token of the workload's prompts (> 0): the node's
  // --capacity-tokens counts the engine's tokens, the simulator counts node tokens.
  double engine_tokens_per_node_token = 1;
  // Requests the engine runs at once (llama-server's slots); 0 = the simulated engine's default.
  uint32_t max_running = 0;
  // Cores of the one host all the engines share (CPU engines on the demo's machine); 0 = a
  // machine each (sim::SimConfig::host_cores).
  double host_cores = 0;
  // The engine keeps whole sequences in slots and a host cache, as llama-server does
  // (sim::SimConfig::engine_cache "slots"), rather than paged blocks.
  bool slot_cache = false;
};

// The llama demo's servers (`hearsay demo --engine llama`, launch::LlamaDemoServerOptions) for the
// twin. llama.cpp's tokenizer cuts the workload's prompts into 2.25 tokens per node (`bytes`)
// token (the demo's records: each serve line's engine prompt tokens against its route line's
// node tokens), so the 16,384 llama tokens of a server's cache hold 7,282 node tokens; the cost
// model is the one fitted to the demo's own measured prefill times, per node token
// (engine/cost_model.cc), unless `cost_model` names another (say what `hearsay calibrate`
// printed for one of the servers). The servers run on one host of `host_cores` cores (the
// demo's machine; 0 = a machine each), one thread each.
inline constexpr double kLlamaTokensPerNodeToken = 2.25;
inline constexpr const char* kLlamaTwinCostModel = "llama-tiny-cpu";
TwinUpstream LlamaDemoUpstream(const std::string& cost_model = "", double host_cores = 0);

// The configuration a `hearsay node` command line gives its node: everything before the `node`
// word is skipped (an exec prefix, the binary), `--config FILE` is loaded first and every other
// `--flag value` (or `--flag=value`; a boolean flag alone) applied after it, as `hearsay node`
// does. INVALID_ARGUMENT for an unknown flag or a bad value, NOT_FOUND for an unreadable
// --config file. Does not Validate() (the key file need not exist).
Result<net::DaemonConfig> ParseNodeCommandLine(const std::vector<std::string>& argv);

// The configuration of every node of a LocalCluster started with `options`, each parsed from its
// command line (addresses are placeholders: the twin does not use them).
Result<std::vector<net::DaemonConfig>> LocalClusterNodeConfigs(
    const launch::LocalClusterOptions& options);

// The simulator run that models `nodes` (one configuration per node) under `workload` on
// `network`, their upstream engines (engine openai) as `upstream` says. Errors: see the file
// comment.
Result<sim::SimConfig> TwinSimConfig(const std::vector<net::DaemonConfig>& nodes,
                                     const loadgen::WorkloadSpec& workload,
                                     const TwinNetwork& network,
                                     const std::optional<TwinUpstream>& upstream = std::nullopt);

// The `hearsay sim` command line that runs `config` as the twin sets it (its records, with
// --records, are the twin's per-request view).
std::string SimCommandLine(const sim::SimConfig& config);

}  // namespace hearsay::twin
