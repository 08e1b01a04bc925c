// ClusterView: what one node's GET /cluster says about the membership, reduced to what tests and
// tools check (who is there, in which state, which generation, how much cache summary it is
// believed to hold). Parsing lives here, in one place, so the harness follows the daemon's JSON.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/common/status.h"

namespace hearsay::launch {

struct MemberInfo {
  std::string node_id;
  std::string state;  // "alive", "suspect", "dead", "left"; "leaving" for a draining self
  uint64_t generation = 0;
  std::string gossip_address;
  std::string api_address;
  // Entries of the member's cache summary (landmark block keys) as this node has it: what the
  // node believes the member's engine holds. For the node itself, its own summary.
  uint64_t cache_keys = 0;
  // The measured round-trip time to the member, once this node has one.
  std::optional<double> rtt_ms;
  bool is_self = false;
};

struct ClusterView {
  std::string self_id;
  std::vector<MemberInfo> members;

  // The member called `node_id`, if listed.
  const MemberInfo* Find(std::string_view node_id) const;
};

// Parses the body of GET /cluster (docs/daemon.md): {"self": {...}, "members": [{...}]}. The node
// itself (from "self") is one of the members, with is_self set. INVALID_ARGUMENT (naming the
// field) if the body is not as expected.
Result<ClusterView> ParseClusterView(std::string_view json);

}  // namespace hearsay::launch
