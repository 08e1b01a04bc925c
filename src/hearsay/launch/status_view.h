// The terminal form of a node's GET /status (docs/reference.md#get-status), for `hearsay status`:
// one table of the members (state, load, and each node's last minute of routing where its own
// /status could be read), then who forwarded to whom and the gossip health.
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace hearsay::launch {

// Renders `status` (this node's /status) as text. `peers` maps a member's id to its own /status
// (members missing from it show their load from gossip only). Fields that are absent or null
// print as "-".
std::string RenderStatusTable(const nlohmann::json& status,
                              const std::map<std::string, nlohmann::json>& peers);

}  // namespace hearsay::launch
