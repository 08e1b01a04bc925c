// The speed of the host that `hearsay demo --engine llama` runs its servers on, from a probe of
// those servers (loadgen/host_probe.h), for the twin: how fast one server prefills against the
// cost model, and how many cores the servers effectively share when all prefill at once
// (docs/twin.md, "llama.cpp: the twin of hearsay demo --engine llama").
//
// Pure functions, but ProbeHost, which sends requests.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "hearsay/common/status.h"
#include "hearsay/loadgen/host_probe.h"
#include "hearsay/twin/twin_config.h"

namespace hearsay::twin {

struct HostSpeed {
  // A server's time to the first token alone over the cost model's for the same prompt (the
  // median over the probe's samples): 1.2 means 20% slower than the model.
  double speed = 1;
  // The host's effective cores, in [1, engines]: engines x the alone ratio over the ratio with
  // every server prefilling at once (processor sharing: k busy servers on c cores each run at
  // c / k of their speed).
  double cores = 1;
};

// The host's speed from `probe` of `engines` servers modelled by `upstream` (its cost model, per
// node token; an engine token is 1 / engine_tokens_per_node_token of one). INVALID_ARGUMENT for a
// probe without samples of both kinds, an unknown cost model, or a sample of no tokens.
Result<HostSpeed> FitHostSpeed(const loadgen::HostProbe& probe, size_t engines,
                               const TwinUpstream& upstream);

// `upstream` on that host: every coefficient of its cost model times `host.speed`, and the host's
// cores `host.cores`. INVALID_ARGUMENT for an unknown cost model or a speed that is not positive.
Result<TwinUpstream> OnHost(TwinUpstream upstream, const HostSpeed& host);

// Probes the llama demo's servers at `addresses` now (loadgen::RunHostProbe: three rounds of
// fresh prompts of 300 random words, each server alone then all at once;
// about 5 s) and fits the host's speed against `upstream`.
Result<HostSpeed> ProbeHost(const std::vector<std::string>& addresses,
                            const TwinUpstream& upstream);

}  // namespace hearsay::twin
