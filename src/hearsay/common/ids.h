// Identities shared by every layer.
#pragma once

#include <cstdint>
#include <string>

namespace hearsay {

// A node's name, chosen by the operator and unique in the cluster (for example "gpu-07").
using NodeId = std::string;

// Bumped every time a node starts. A new generation means the node restarted with an empty
// cache, so peers drop everything they believed about the old one.
using Generation = uint64_t;

// A peer's transport address: "host:port" for the daemon, any unique string in the simulator.
using Address = std::string;

}  // namespace hearsay
