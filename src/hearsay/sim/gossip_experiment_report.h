// The gossip experiment's JSON report (the keys are listed in gossip_experiment.h).
//
// Thread-safety: a pure function of what it is given.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "hearsay/env/time.h"
#include "hearsay/sim/gossip_cluster.h"
#include "hearsay/sim/gossip_experiment.h"
#include "hearsay/sim/gossip_experiment_faults.h"
#include "hearsay/sim/gossip_experiment_sampling.h"

namespace hearsay::sim::gossip_experiment {

// Everything a finished run observed. Borrowed: all outlive the Report call.
struct Observations {
  const GossipExperimentOptions& options;
  const GossipCluster& cluster;
  const FaultDriver& faults;
  const ConvergenceSampler& convergence;
  const AccuracySampler& accuracy;
  const HealthSampler& health;
  const TrafficMeter& traffic;
  uint64_t events_total;  // cache events published by all nodes
  Duration warmup;        // the join warm-up before the measured window
  Duration end;           // the end of the measured window
  Duration join;          // when every node first held every other as alive; negative: never
};

// The report of a finished run.
nlohmann::json Report(const Observations& run);

}  // namespace hearsay::sim::gossip_experiment
