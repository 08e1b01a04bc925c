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

namespace hearsay::harness {

struct MemberInfo {
  std::string node_id;
  std::string state;  // "alive", "suspect", "dead", "left"
  uint64_t generation = 0;
  std::string gossip_address;
  std::string api_address;
  // Block keys this node believes the member's cache summary holds (0 for itself when absent).
  uint64_t cache_keys = 0;
  bool is_self = false;
};

struct ClusterView {
  std::string self_id;
  std::vector<MemberInfo> members;

  // The member called `node_id`, if listed.
  const MemberInfo* Find(std::string_view node_id) const;
};

// Parses the body of GET /cluster; INVALID_ARGUMENT (naming the field) if it is not as expected.
Result<ClusterView> ParseClusterView(std::string_view json);

}  // namespace hearsay::harness
