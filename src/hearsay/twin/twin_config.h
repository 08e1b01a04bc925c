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
// What the simulator cannot model is refused with INVALID_ARGUMENT or UNIMPLEMENTED naming it:
// an engine other than the simulated one, `[[engine]]` entries, nodes configured unlike each
// other, trace timestamps.
//
// Thread-safety: plain functions over values.
#pragma once

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
// `network`. Errors: see the file comment.
Result<sim::SimConfig> TwinSimConfig(const std::vector<net::DaemonConfig>& nodes,
                                     const loadgen::WorkloadSpec& workload,
                                     const TwinNetwork& network);

// The `hearsay sim` command line that runs `config` as the twin sets it (its records, with
// --records, are the twin's per-request view).
std::string SimCommandLine(const sim::SimConfig& config);

}  // namespace hearsay::twin
